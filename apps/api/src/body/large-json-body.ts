import { ValidationFailed } from '@compactor/compaction';
import path from 'node:path';
import type { IncomingMessage } from 'node:http';
import { Worker } from 'node:worker_threads';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { MAX_JSON_DEPTH } from './json-body-limits';
// A type-only import, which also puts json-body-worker.ts in every build that includes this file.
import type { ParseReply, ParseRequest } from './json-body-worker';

/** REST JSON bodies announcing at least this many bytes are read here and parsed on a worker thread. */
export const OFF_THREAD_BODY_BYTES = 1 << 20;

const WORKER_ENTRY = path.extname(__filename) === '.ts' ? path.join(__dirname, 'json-body-worker.from-source.cjs') : path.join(__dirname, 'json-body-worker.js');

/** An error shaped as body-parser's (http-errors): the exception filter answers it as it answers express.json's. */
export function bodyParserError(status: number, type: string, message: string, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(message), { status, statusCode: status, expose: true, type, ...extra });
}

interface Job {
  id: number;
  resolve(reply: ParseReply): void;
  reject(error: Error): void;
}

/**
 * One worker thread that checks, decodes and parses large JSON bodies (a 30 MB body paused the
 * event loop 140-190 ms in express.json). Started on first use, unref'd while idle, replaced
 * after a crash (which fails only the body it was parsing). Bodies queue: one at a time.
 */
export class LargeJsonParser {
  private worker?: Worker;
  private readonly jobs = new Map<number, Job>();
  private nextId = 1;

  parse(bytes: Buffer): Promise<ParseReply> {
    return new Promise<ParseReply>((resolve, reject) => {
      const id = this.nextId++;
      let worker: Worker;
      try {
        worker = this.started();
      } catch (error) {
        return reject(error instanceof Error ? error : new Error(String(error)));
      }
      this.jobs.set(id, { id, resolve, reject });
      worker.ref();
      const request: ParseRequest = { id, bytes };
      worker.postMessage(request, [bytes.buffer as ArrayBuffer]);
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(new Error('LargeJsonParser closed'));
    await worker?.terminate().catch(() => undefined);
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_ENTRY);
    worker.unref();
    worker.on('message', (reply: ParseReply) => {
      const job = this.jobs.get(reply.id);
      if (!job) return;
      this.jobs.delete(reply.id);
      if (this.jobs.size === 0) worker.unref();
      job.resolve(reply);
    });
    const retire = (error: Error) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.failAll(error);
    };
    worker.on('error', (error) => retire(error instanceof Error ? error : new Error(String(error))));
    worker.on('exit', (code) => retire(new Error(`JSON body worker exited (${code})`)));
    this.worker = worker;
    return worker;
  }

  private failAll(error: Error): void {
    const jobs = [...this.jobs.values()];
    this.jobs.clear();
    for (const job of jobs) job.reject(error);
  }
}

/** Whether this request's body announces at least OFF_THREAD_BODY_BYTES by Content-Length, and is not compressed (whatever its type). */
export function isLargeUncompressedBody(req: IncomingMessage): boolean {
  const length = Number(req.headers['content-length']);
  if (!Number.isSafeInteger(length) || length < OFF_THREAD_BODY_BYTES || req.headers['transfer-encoding'] !== undefined) return false;
  const encoding = req.headers['content-encoding'];
  return encoding === undefined || encoding.toLowerCase() === 'identity';
}

/** Whether this request's body is one for readLargeJson: JSON (as express.json's type), utf-8, not compressed, announcing at least OFF_THREAD_BODY_BYTES. */
export function isLargeJsonBody(req: IncomingMessage & { is?(type: string): string | false | null }): boolean {
  return isLargeUncompressedBody(req) && isUtf8Json(req);
}

/** JSON as express.json takes it (its type check), in utf-8 (the only charset the worker decodes). */
function isUtf8Json(req: IncomingMessage & { is?(type: string): string | false | null }): boolean {
  if (!req.is?.('application/json')) return false;
  const charset = /;\s*charset\s*=\s*"?([\w-]{1,40})/i.exec(req.headers['content-type'] ?? '')?.[1];
  return charset === undefined || charset.toLowerCase() === 'utf-8';
}

/** After a body error: the rest of the request is read off (as body-parser does), then `done` gets the error. */
function failAfterDrain(req: IncomingMessage, error: Error, done: (error: Error) => void): void {
  req.removeAllListeners('data');
  req.resume();
  if (req.complete || req.destroyed) return done(error);
  let called = false;
  const after = () => {
    if (called) return;
    called = true;
    done(error);
  };
  req.once('end', after);
  req.once('close', after);
}

/** The content encodings a streamed body may have (express.json's: gzip, deflate, br; anything else it answers 415). */
const DECODERS: Record<string, () => NodeJS.ReadWriteStream> = { gzip: createGunzip, deflate: createInflate, br: createBrotliDecompress };

/**
 * Whether this request's JSON body is read as a stream and parsed on the worker thread whatever its size: a chunked
 * body (no Content-Length, so its size is known only at its end) or a compressed one (its inflated size is known only
 * then too). Either could be megabytes that express.json would decode and parse in one tick of the event loop.
 */
export function isStreamedJsonBody(req: IncomingMessage & { is?(type: string): string | false | null }): boolean {
  const encoding = req.headers['content-encoding']?.toLowerCase();
  const compressed = encoding !== undefined && encoding !== 'identity' && DECODERS[encoding] !== undefined;
  if (!compressed && req.headers['transfer-encoding'] === undefined) return false;
  return isUtf8Json(req);
}

/**
 * Reads a chunked or compressed body (isStreamedJsonBody) into one buffer of its own (transferable to the worker:
 * never a slice of Node's shared pool), decompressing off the event loop (zlib runs on libuv's threads), with
 * express.json's errors: over the limit once inflated 413, a corrupt encoding 400, an aborted request 400. After an
 * error the rest of the request is read off before `done` is called.
 */
export function readStreamedBody(req: IncomingMessage, limitBytes: number, done: (error: Error | undefined, body?: Buffer) => void): void {
  const encoding = req.headers['content-encoding']?.toLowerCase();
  const decoder = encoding !== undefined && encoding !== 'identity' ? DECODERS[encoding]?.() : undefined;
  const source: NodeJS.ReadableStream = decoder ? req.pipe(decoder) : req;
  const chunks: Buffer[] = [];
  let received = 0;
  let finished = false;
  const finish = (error: Error | undefined, body?: Buffer) => {
    if (finished) return;
    finished = true;
    if (!error) return done(undefined, body);
    if (decoder) {
      req.unpipe(decoder);
      decoder.removeAllListeners('data');
    }
    failAfterDrain(req, error, done);
  };
  source.on('data', (chunk: Buffer) => {
    if (finished) return;
    received += chunk.length;
    if (received > limitBytes) return finish(bodyParserError(413, 'entity.too.large', 'request entity too large', { length: received, limit: limitBytes }));
    chunks.push(chunk);
  });
  source.once('end', () => {
    if (finished) return;
    const body = Buffer.allocUnsafeSlow(received);
    let at = 0;
    for (const chunk of chunks) at += chunk.copy(body, at);
    chunks.length = 0;
    finish(undefined, body);
  });
  if (decoder) decoder.once('error', () => finish(bodyParserError(400, 'encoding.invalid', `the ${encoding} body could not be decoded`)));
  req.once('aborted', () => finish(bodyParserError(400, 'request.aborted', 'request aborted', { received })));
  req.once('error', (error) => finish(bodyParserError(400, 'request.aborted', error.message, { received })));
}

/**
 * Reads a body of a known length into one buffer, chunk by chunk (the only work on the event loop),
 * with express.json's errors: over the limit 413 (announced: refused before reading), a short or
 * long body 400, an aborted request 400. After an error the rest of the request is read off, as
 * body-parser does, before `done` is called.
 */
export function readBody(req: IncomingMessage, limitBytes: number, done: (error: Error | undefined, body?: Buffer) => void): void {
  const length = Number(req.headers['content-length']);
  const fail = (error: Error) => failAfterDrain(req, error, done);
  let finished = false;
  const once = (error: Error | undefined, body?: Buffer) => {
    if (finished) return;
    finished = true;
    if (error) fail(error);
    else done(undefined, body);
  };
  if (length > limitBytes) {
    return once(bodyParserError(413, 'entity.too.large', 'request entity too large', { expected: length, length, limit: limitBytes }));
  }
  // Allocated at the announced size (at most the limit) before the body arrives: an mmap'd block whose pages become
  // resident only as chunks are copied in, so a caller that announces 32 MB and sends little holds little memory.
  const body = Buffer.allocUnsafeSlow(length);
  let received = 0;
  req.on('data', (chunk: Buffer) => {
    if (finished) return;
    if (received + chunk.length > length) {
      return once(bodyParserError(400, 'request.size.invalid', 'request size did not match content length', { expected: length, length, received: received + chunk.length }));
    }
    chunk.copy(body, received);
    received += chunk.length;
  });
  req.once('end', () => {
    if (received !== length) return once(bodyParserError(400, 'request.size.invalid', 'request size did not match content length', { expected: length, length, received }));
    once(undefined, body);
  });
  req.once('aborted', () => once(bodyParserError(400, 'request.aborted', 'request aborted', { expected: length, length, received })));
  req.once('error', (error) => once(bodyParserError(400, 'request.aborted', error.message, { expected: length, length, received })));
}

/** The worker's answer as the middleware's outcome: the value, or the error express.json's path gives. */
export function replyOutcome(reply: ParseReply): { value: unknown } | { error: Error } {
  if (reply.ok) return { value: reply.value };
  switch (reply.kind) {
    case 'too-deep':
      return { error: new ValidationFailed([{ field: '(body)', message: `nests arrays and objects deeper than the limit of ${MAX_JSON_DEPTH} levels` }]) };
    case 'text':
      return { error: new ValidationFailed([reply.problem]) };
    case 'invalid-json':
      return { error: bodyParserError(400, 'entity.parse.failed', 'Request body is not valid JSON') };
    default:
      return { error: new Error(`JSON body parse failed in a worker: ${reply.message}`) };
  }
}
