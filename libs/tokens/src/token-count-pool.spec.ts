import { Worker } from 'node:worker_threads';
import { countTextSync } from './encoders';
import { resolveModel } from './model-catalog';
import { TokenCountPool } from './token-count-pool';

const gpt4o = resolveModel('gpt-4o').spec;
const gpt4 = resolveModel('gpt-4').spec;

/** Agent-like text: prose, code, JSON, numbers; `size` UTF-16 chars. */
function agentText(size: number, seed: number): string {
  const parts = [
    `Step ${seed}: reading src/module-${seed}.ts and running the tests again.\n`,
    'export function add(a: number, b: number): number {\n  return a + b; // <|endoftext|>\n}\n',
    JSON.stringify({ id: seed, files: ['a.ts', 'b.ts'], ok: seed % 2 === 0, note: 'Ünïcödé 日本語 😀' }) + '\n',
    `${'='.repeat(30 + (seed % 7))}\n`,
  ];
  let text = '';
  for (let i = 0; text.length < size; i++) text += parts[(i + seed) % parts.length];
  return text.slice(0, size);
}

/** Counts setImmediate turns until `work` settles: zero means the event loop was blocked throughout. */
async function ticksWhile<T>(work: () => Promise<T>): Promise<{ result: T; ticks: number }> {
  let ticks = 0;
  let running = true;
  const loop = () => {
    if (!running) return;
    ticks++;
    setImmediate(loop);
  };
  setImmediate(loop);
  try {
    const result = await work();
    return { result, ticks };
  } finally {
    running = false;
  }
}

/** A pool whose first worker runs `crashingSource` instead of the counter. */
class PoolWithCrashingWorker extends TokenCountPool {
  spawned = 0;

  constructor(private readonly crashingSource: string) {
    super({ threads: 1, inlineBelowChars: 100 });
  }

  protected override spawnWorker(): Worker {
    this.spawned++;
    return this.spawned === 1 ? new Worker(this.crashingSource, { eval: true }) : super.spawnWorker();
  }
}

/** A pool that records the texts it posts to its workers: what was counted off the calling thread. */
class PoolRecordingPosts extends TokenCountPool {
  posted: string[] = [];

  protected override spawnWorker(): Worker {
    const worker = super.spawnWorker();
    const post = worker.postMessage.bind(worker);
    worker.postMessage = (message: { texts?: string[] }) => {
      this.posted.push(...(message.texts ?? []));
      post(message);
    };
    return worker;
  }
}

describe('TokenCountPool', () => {
  const pools: TokenCountPool[] = [];
  const pool = (options?: ConstructorParameters<typeof TokenCountPool>[0]) => {
    const created = new TokenCountPool(options);
    pools.push(created);
    return created;
  };

  /** One pool with the default options serves the tests that need nothing special. */
  const shared = pool();

  afterAll(async () => {
    await Promise.all(pools.map((p) => p.close()));
  });

  it('returns the inline counts, in input order, for mixed short and long texts', async () => {
    const texts = [
      'short one',
      agentText(40_000, 1),
      '',
      agentText(17_000, 2),
      'another <|endoftext|> short text',
      agentText(20_000, 3),
      agentText(5_000, 4),
    ];
    const counts = await shared.count(texts, gpt4o);
    expect(counts).toEqual(texts.map((text) => countTextSync(text, 'o200k_base')));
    expect(counts[1]).toBeGreaterThan(1000);
  });

  it('counts in the spec encoding, on workers too', async () => {
    const texts = [agentText(3_000, 5), agentText(30_000, 6)];
    const counts = await shared.count(texts, gpt4);
    expect(counts).toEqual(texts.map((text) => countTextSync(text, 'cl100k_base')));
    expect(counts).not.toEqual(texts.map((text) => countTextSync(text, 'o200k_base')));
  });

  it('queues work when every worker is busy, and batches many short texts off the calling thread', async () => {
    const texts = Array.from({ length: 60 }, (_, i) => agentText(i % 3 === 0 ? 20_000 : 9_000, i));
    const counts = await shared.count(texts, gpt4o);
    expect(counts).toEqual(texts.map((text) => countTextSync(text, 'o200k_base')));
  });

  it('counts a text above splitAboveChars in pieces on the threads, to the count of the whole, in both encodings and modes', async () => {
    const split = pool({ splitAboveChars: 50_000, pieceChars: 7_000 });
    const texts = ['before', agentText(200_000, 8), agentText(60_000, 9), 'x'.repeat(80_000), 'after'];
    for (const spec of [gpt4o, gpt4]) {
      for (const offThread of [false, true]) {
        expect(await split.count(texts, spec, { offThread })).toEqual(texts.map((text) => countTextSync(text, spec.encoding)));
      }
    }
  });

  it('keeps the event loop turning while a 1 MB text is counted', async () => {
    const text = agentText(1024 * 1024, 7);
    const { result, ticks } = await ticksWhile(() => shared.count([text], gpt4o));
    expect(result).toEqual([countTextSync(text, 'o200k_base')]);
    // Counted inline, the whole call would finish before the first setImmediate turn.
    expect(ticks).toBeGreaterThan(20);
  });

  it('blocks the event loop only for inline texts (a control for the test above)', async () => {
    const inline = pool({ inlineBelowChars: 1024 * 1024 + 1 });
    const { ticks } = await ticksWhile(() => inline.count([agentText(50_000, 8)], gpt4o));
    expect(ticks).toBe(0);
  });

  it('offThread: even short texts are counted on the workers, the calling thread stays free', async () => {
    const texts = Array.from({ length: 40 }, (_, i) => agentText(2_000, 20 + i));
    // Which thread counted is read from what the workers were sent, not from event-loop turns (warm workers can answer
    // within the poll phase that delivered the request, before a setImmediate runs).
    const recording = new PoolRecordingPosts();
    pools.push(recording);
    const result = await recording.count(texts, gpt4o, { offThread: true });
    expect(result).toEqual(texts.map((text) => countTextSync(text, 'o200k_base')));
    expect([...recording.posted].sort()).toEqual([...texts].sort());
    // The same texts inline: the call finishes before the event loop turns.
    const inline = pool({ inlineBelowChars: 1024 * 1024 + 1 });
    expect((await ticksWhile(() => inline.count(texts.slice(0, 4), gpt4o))).ticks).toBe(0);
  });

  it('rejects the call of a worker that crashes, and replaces the worker', async () => {
    const crashing = new PoolWithCrashingWorker(
      "require('node:worker_threads').parentPort.on('message', () => { throw new Error('boom'); });",
    );
    pools.push(crashing);
    const long = agentText(500, 9);
    await expect(crashing.count(['inline', long], gpt4o)).rejects.toThrow('boom');
    await expect(crashing.count(['inline', long], gpt4o)).resolves.toEqual([
      countTextSync('inline', 'o200k_base'),
      countTextSync(long, 'o200k_base'),
    ]);
    expect(crashing.spawned).toBe(2);
  });

  it('rejects the call of a worker that exits', async () => {
    const exiting = new PoolWithCrashingWorker("require('node:worker_threads').parentPort.on('message', () => process.exit(3));");
    pools.push(exiting);
    await expect(exiting.count([agentText(500, 10)], gpt4o)).rejects.toThrow('exited with code 3');
    await expect(exiting.count([agentText(500, 10)], gpt4o)).resolves.toHaveLength(1);
  });

  it('rejects after close(), and a new pool works', async () => {
    const first = pool({ threads: 1, inlineBelowChars: 0 });
    await first.count(['warm up a worker'], gpt4o);
    await first.close();
    await expect(first.count(['x'], gpt4o)).rejects.toThrow('closed');

    const second = pool({ threads: 1, inlineBelowChars: 0 });
    await expect(second.count(['hello world'], gpt4o)).resolves.toEqual([2]);
  });

  it('lets running and queued calls finish when closed (a server shutting down), and refuses new ones', async () => {
    const closing = new TokenCountPool({ threads: 1, inlineBelowChars: 0 });
    const text = agentText(200_000, 11);
    const running = closing.count([text], gpt4o);
    const queued = closing.count(['x'], gpt4o);
    const closed = closing.close();
    await expect(closing.count(['y'], gpt4o)).rejects.toThrow('closed');
    await expect(running).resolves.toEqual([countTextSync(text, 'o200k_base')]);
    await expect(queued).resolves.toEqual([1]);
    await closed;
  });

  it('rejects what is still queued or running once the drain time is over', async () => {
    const closing = new TokenCountPool({ threads: 1, inlineBelowChars: 0 });
    const running = expect(closing.count([agentText(200_000, 11)], gpt4o)).rejects.toThrow('closed');
    const queued = expect(closing.count(['x'], gpt4o)).rejects.toThrow('closed');
    await closing.close(0);
    await running;
    await queued;
  });

  it('warm() starts every thread with its rank tables loaded, so a first large text is counted at once', async () => {
    class CountingPool extends TokenCountPool {
      spawned = 0;
      protected override spawnWorker(): Worker {
        this.spawned += 1;
        return super.spawnWorker();
      }
    }
    const warmed = new CountingPool({ threads: 2, inlineBelowChars: 0 });
    try {
      await warmed.warm('o200k_base');
      expect(warmed.spawned).toBe(2);
      const text = agentText(200_000, 7);
      expect(await warmed.count([text, text], gpt4o)).toEqual([countTextSync(text, 'o200k_base'), countTextSync(text, 'o200k_base')]);
      expect(warmed.spawned).toBe(2);
    } finally {
      await warmed.close();
    }
  });

  it('rejects an encoding it does not know', async () => {
    await expect(shared.count(['x'], { ...gpt4o, encoding: 'p50k_base' as never })).rejects.toThrow('Unsupported encoding');
  });
});
