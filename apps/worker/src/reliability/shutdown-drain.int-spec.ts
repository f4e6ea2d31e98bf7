import { BuiltTestStack, FakeLlm, pollUntil, startTestStack } from '@compactor/testing';
import { randomBytes } from 'node:crypto';
import request from 'supertest';

/**
 * A worker stopped with SIGTERM (a deploy, a node drain) while a compaction waits for the LLM: the
 * contract the Helm chart's terminationGracePeriodSeconds (SHUTDOWN_TIMEOUT_MS + a margin, from one
 * value) relies on. The running job is let finish and the process exits 0; a job that outlasts
 * SHUTDOWN_TIMEOUT_MS makes the process exit by itself (1) at the timeout, before any SIGKILL.
 * Built processes, as production runs them; the only fake is the LLM upstream.
 */

/** two-layer's chunk size (characters), as in sigkill.int-spec: one block is one chunk. */
const CHUNK = 50_000;

function block(k: number): string {
  const lines: string[] = [];
  let length = 0;
  for (let i = 1; length < CHUNK; i += 1) {
    const line = `block${k}-${String(i).padStart(5, '0')} INFO worker[${i % 7}] processed batch ${i * k} in ${(i * 37 * k) % 1000} ms`;
    lines.push(line);
    length += line.length + 1;
  }
  return `${lines.join('\n').slice(0, CHUNK - 1)}\n`;
}

describe('SIGTERM of a worker with a running compaction', () => {
  let stack: BuiltTestStack;
  let fake: FakeLlm;
  /** Every summarizer call waits for this gate; replaced per test. */
  let gate: Promise<void> = Promise.resolve();

  beforeAll(async () => {
    stack = await startTestStack({ label: 'shutdown-drain', api: 'built', llm: { respond: () => ({ until: gate }) } });
    fake = stack.fake;
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
  }, 60_000);

  const auth = () => ({ Authorization: `Bearer ${stack.key}` });
  const jobRow = async (id: string) =>
    (await stack.query<{ status: string; attempts: number; error: string | null }>('SELECT status, attempts, error FROM compaction_jobs WHERE id = $1', [id]))[0];

  /** Appends a big tool result (a compaction of three chunks) and waits until its first summarizer call is held. */
  const compactionWaitingForTheLlm = async (apiUrl: string, label: string) => {
    const id = `drain-${label}-${randomBytes(4).toString('hex')}`;
    const heldBefore = fake.completionRequests().length;
    const res = await request(apiUrl)
      .post(`/v1/sessions/${id}/messages`)
      .set(auth())
      .send({
        model: 'gpt-4o',
        policy: 'two-layer',
        format: 'openai',
        messages: [
          { role: 'user', content: 'Why is the worker slow?' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_log', type: 'function', function: { name: 'read_log', arguments: '{"path":"worker.log"}' } }] },
          { role: 'tool', tool_call_id: 'call_log', content: block(1) + block(2) + block(3) },
        ],
      })
      .expect(201);
    const jobId: string = res.body.compaction.jobId;
    await pollUntil(async () => fake.completionRequests().length > heldBefore || undefined, { timeoutMs: 60_000, what: `the first summarizer call of ${jobId}` });
    expect((await jobRow(jobId)).status).toBe('running');
    return jobId;
  };

  it('lets the running job finish, then exits 0, well within SHUTDOWN_TIMEOUT_MS', async () => {
    let release!: () => void;
    gate = new Promise<void>((resolve) => (release = resolve));
    const api = await stack.startApi();
    const worker = await stack.startWorker({ ...stack.summarizer(), SHUTDOWN_TIMEOUT_MS: '30000' });
    const jobId = await compactionWaitingForTheLlm(api.url, 'finish');

    const signalledAt = Date.now();
    const ended = worker.kill('SIGTERM');
    // Still draining while the LLM holds its answer: not exited, the job still running.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(worker.exitCode()).toBeNull();
    expect(worker.output()).toContain('SIGTERM received: waiting for running jobs');
    expect((await jobRow(jobId)).status).toBe('running');

    release();
    await ended;
    const exitMs = Date.now() - signalledAt;
    expect({ exitCode: worker.exitCode(), job: await jobRow(jobId) }).toEqual({ exitCode: 0, job: { status: 'succeeded', attempts: 1, error: null } });
    expect(exitMs).toBeLessThan(30_000);
    console.log(`Worker SIGTERM with a compaction waiting for the LLM: the LLM answered 1.5 s later, the job succeeded on its first attempt, the worker exited 0 ${exitMs} ms after SIGTERM`);
  }, 120_000);

  it('exits by itself (code 1) at SHUTDOWN_TIMEOUT_MS when the job outlasts it', async () => {
    gate = new Promise<void>(() => undefined); // the LLM never answers this time
    const api = await stack.startApi();
    const worker = await stack.startWorker({ ...stack.summarizer(), SHUTDOWN_TIMEOUT_MS: '3000' });
    await compactionWaitingForTheLlm(api.url, 'timeout');

    const signalledAt = Date.now();
    await worker.kill('SIGTERM');
    const exitMs = Date.now() - signalledAt;
    expect(worker.exitCode()).toBe(1);
    expect(worker.output()).toContain('Shutdown took longer than 3000 ms; exiting');
    // At the timeout, not before; and soon after it, far inside the chart's 10 s margin.
    expect(exitMs).toBeGreaterThanOrEqual(3000);
    expect(exitMs).toBeLessThan(3000 + 2000);
    console.log(`Worker SIGTERM with a job outlasting SHUTDOWN_TIMEOUT_MS=3000: exited 1 after ${exitMs} ms`);
  }, 120_000);
});
