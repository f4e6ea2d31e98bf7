import { availableParallelism } from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
// A type-only import, which also puts bpe-worker.ts in every build that includes this file.
import type { CountReply, CountRequest } from './bpe-worker';
import { assertEncoding, countTextSync } from './encoders';
import { cutAtPreTokenBoundaries } from './pre-token-cut';
import { Encoding, ModelSpec } from './types';

export interface TokenCountPoolOptions {
  /** Worker threads at most; default min(2, availableParallelism()). */
  threads?: number;
  /** Texts shorter than this (in UTF-16 chars) are counted on the calling thread; default 16 KB. */
  inlineBelowChars?: number;
  /** Texts of at least this many chars are cut into pieces of about `pieceChars` (see cutAtPreTokenBoundaries); default 2 MB. */
  splitAboveChars?: number;
  /** Default 1 MB (30 MB of log text on this machine: 0.8-0.9 s in 1 MB pieces on two threads, 0.95-1.45 s whole; 256 KB pieces gained nothing). */
  pieceChars?: number;
}

/** The worker threads' young generation, in MB (see spawnWorker). */
const WORKER_YOUNG_GENERATION_MB = 8;

interface Job {
  id: number;
  encoding: Encoding;
  texts: string[];
  resolve(counts: number[]): void;
  reject(error: Error): void;
}

interface Slot {
  worker: Worker;
  job?: Job;
}

/**
 * The worker threads' program: the compiled bpe-worker.js next to this file or, when the lib runs
 * from its TypeScript sources (Jest), a loader that compiles bpe-worker.ts first.
 */
const WORKER_ENTRY = path.extname(__filename) === '.ts' ? path.join(__dirname, 'bpe-worker.from-source.cjs') : path.join(__dirname, 'bpe-worker.js');

/**
 * Counts texts in a model's base encoding without blocking the event loop on big ones:
 * short texts inline, texts of at least `inlineBelowChars` on a small `worker_threads`
 * pool (so one 1 MB tool result does not stall other requests). Workers start on first
 * use, each loads its encoder once, idle workers are unref'd (they never keep a process
 * or Jest alive), a crashed worker fails only its own call and is replaced on demand.
 */
export class TokenCountPool {
  private readonly threads: number;
  private readonly inlineBelowChars: number;
  /** Short texts beyond this many chars in one call are batched to the workers too. */
  private readonly inlineBudgetChars: number;
  private readonly splitAboveChars: number;
  private readonly pieceChars: number;
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextJobId = 1;
  /** No new calls (close() was called); queued and running ones still finish. */
  private closing = false;
  private closed = false;
  /** Called by close() once nothing is queued or running. */
  private onIdle?: () => void;

  constructor(options: TokenCountPoolOptions = {}) {
    this.threads = Math.max(1, Math.floor(options.threads ?? Math.min(2, availableParallelism())));
    this.inlineBelowChars = Math.max(0, options.inlineBelowChars ?? 16 * 1024);
    this.inlineBudgetChars = Math.max(this.inlineBelowChars * 8, 64 * 1024);
    this.splitAboveChars = Math.max(1, options.splitAboveChars ?? 2 << 20);
    this.pieceChars = Math.max(1, options.pieceChars ?? 1 << 20);
  }

  /**
   * Raw token counts per text in `spec.encoding`, in input order; the multiplier and
   * margin are not applied (see `combineCounts`). Rejects if a worker fails or the pool
   * is closed.
   */
  async count(texts: string[], spec: ModelSpec, options: { offThread?: boolean } = {}): Promise<number[]> {
    if (this.closing) throw new Error('TokenCountPool is closed');
    const encoding = spec.encoding;
    assertEncoding(encoding);
    const counts = new Array<number>(texts.length).fill(0);
    const inline: number[] = [];
    const pending: Array<Promise<void>> = [];
    let inlineChars = 0;
    let batch: number[] = [];
    let batchChars = 0;
    const flushBatch = () => {
      if (batch.length > 0) pending.push(this.submitBatch(batch, texts, encoding, counts));
      batch = [];
      batchChars = 0;
    };

    // Off the calling thread, the texts are shared out among the threads in batches of about equal size.
    const offThreadBatchChars = options.offThread ? Math.max(4 * 1024, Math.ceil(texts.reduce((n, t) => n + t.length, 0) / this.threads)) : 0;
    texts.forEach((text, index) => {
      // A huge text (a 30 MB tool result) goes in pieces: every thread counts some, and none gets a copy of the whole.
      const pieces = text.length >= this.splitAboveChars ? cutAtPreTokenBoundaries(text, this.pieceChars) : [text];
      if (pieces.length > 1) {
        pending.push(this.submitPieces(pieces, encoding).then((total) => void (counts[index] = total)));
      } else if (options.offThread) {
        // Nothing on the calling thread: a caller that counts while it does other work (the proxy forwarding a request).
        batch.push(index);
        batchChars += text.length;
        if (batchChars >= offThreadBatchChars) flushBatch();
      } else if (text.length >= this.inlineBelowChars) {
        pending.push(this.submitBatch([index], texts, encoding, counts));
      } else if (inlineChars + text.length <= this.inlineBudgetChars) {
        inlineChars += text.length;
        inline.push(index);
      } else {
        batch.push(index);
        batchChars += text.length;
        if (batchChars >= this.inlineBudgetChars) flushBatch();
      }
    });
    flushBatch();

    // The workers are already busy with the big texts while this thread counts the short ones.
    try {
      for (const index of inline) counts[index] = countTextSync(texts[index], encoding);
    } catch (error) {
      await Promise.allSettled(pending);
      throw error;
    }
    await Promise.all(pending);
    return counts;
  }

  /**
   * Starts every thread and has each load `encoding`'s rank tables (about 0.5 s of CPU each), so the
   * first large text a server counts does not wait for them. Idle threads stay unref'd.
   */
  async warm(encoding: Encoding): Promise<void> {
    assertEncoding(encoding);
    const jobs: Array<Promise<void>> = [];
    for (let i = 0; i < this.threads; i++) jobs.push(this.submitBatch([0], [''], encoding, [0]));
    await Promise.all(jobs);
  }

  /**
   * Refuses new calls, lets the queued and running ones finish (at most `drainMs`: a server's shutdown
   * must not fail the counts of requests and recordings still in flight), then rejects what is left
   * and terminates the workers. The pool cannot be reused.
   */
  async close(drainMs = 5000): Promise<void> {
    this.closing = true;
    if (this.busy()) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, drainMs);
        this.onIdle = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    this.onIdle = undefined;
    this.closed = true;
    const error = new Error('TokenCountPool closed');
    for (const job of this.queue.splice(0)) job.reject(error);
    const slots = this.slots.splice(0);
    for (const slot of slots) slot.job?.reject(error);
    await Promise.all(slots.map((slot) => slot.worker.terminate().catch(() => undefined)));
  }

  /**
   * Starts one worker thread; protected so a test can substitute a failing one. Its young generation is
   * capped at 8 MB (V8's default is 48 MB on 64-bit): a thread's garbage is the short-lived strings of
   * the 1 MB pieces it counts, and with the default both threads grew the API by ~60 MB while they
   * counted a 30 MB tool result (docs/reliability.md).
   */
  protected spawnWorker(): Worker {
    return new Worker(WORKER_ENTRY, { resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB } });
  }

  /** The total count of a text's pieces, each its own job, so the pieces share out among the threads. */
  private async submitPieces(pieces: string[], encoding: Encoding): Promise<number> {
    const counts = new Array<number>(pieces.length).fill(0);
    await Promise.all(pieces.map((_, i) => this.submitBatch([i], pieces, encoding, counts)));
    return counts.reduce((a, b) => a + b, 0);
  }

  private submitBatch(indexes: number[], texts: string[], encoding: Encoding, counts: number[]): Promise<void> {
    return new Promise<number[]>((resolve, reject) => {
      this.queue.push({ id: this.nextJobId++, encoding, texts: indexes.map((i) => texts[i]), resolve, reject });
      this.dispatch();
    }).then((batchCounts) => {
      indexes.forEach((index, i) => (counts[index] = batchCounts[i]));
    });
  }

  private dispatch(): void {
    while (this.queue.length > 0 && !this.closed) {
      let slot = this.slots.find((s) => !s.job);
      if (!slot) {
        if (this.slots.length >= this.threads) return;
        try {
          slot = this.startSlot();
        } catch (error) {
          this.queue.shift()?.reject(asError(error, 'Token count worker failed to start'));
          continue;
        }
      }
      const job = this.queue.shift() as Job;
      slot.job = job;
      slot.worker.ref();
      const request: CountRequest = { id: job.id, encoding: job.encoding, texts: job.texts };
      slot.worker.postMessage(request);
    }
    // A queued job that could not start (its worker failed to spawn) was rejected above.
    this.notifyIfIdle();
  }

  private startSlot(): Slot {
    const slot: Slot = { worker: this.spawnWorker() };
    const { worker } = slot;
    worker.on('message', (reply: CountReply) => {
      const job = slot.job;
      if (!job || reply.id !== job.id) return;
      slot.job = undefined;
      if (this.slots.includes(slot)) worker.unref();
      if (reply.error !== undefined) job.reject(new Error(`Token counting failed in a worker: ${reply.error}`));
      else if (!Array.isArray(reply.counts) || reply.counts.length !== job.texts.length) {
        job.reject(new Error('Token count worker sent a malformed reply'));
      } else job.resolve(reply.counts);
      this.dispatch();
      this.notifyIfIdle();
    });
    worker.on('error', (error) => this.retire(slot, asError(error, 'Token count worker crashed')));
    worker.on('messageerror', (error) => this.retire(slot, asError(error, 'Token count worker sent an unreadable reply')));
    worker.on('exit', (code) => this.retire(slot, new Error(`Token count worker exited with code ${code}`)));
    this.slots.push(slot);
    return slot;
  }

  /** Drops a failed worker: its call is rejected, the next queued job starts a replacement. */
  private retire(slot: Slot, error: Error): void {
    const index = this.slots.indexOf(slot);
    if (index < 0) return; // already retired, or closed
    this.slots.splice(index, 1);
    const job = slot.job;
    slot.job = undefined;
    job?.reject(error);
    slot.worker.unref();
    void slot.worker.terminate().catch(() => undefined);
    this.dispatch();
    this.notifyIfIdle();
  }

  private busy(): boolean {
    return this.queue.length > 0 || this.slots.some((s) => s.job !== undefined);
  }

  private notifyIfIdle(): void {
    if (this.onIdle && !this.busy()) this.onIdle();
  }
}

function asError(value: unknown, fallback: string): Error {
  return value instanceof Error ? value : new Error(`${fallback}: ${String(value)}`);
}
