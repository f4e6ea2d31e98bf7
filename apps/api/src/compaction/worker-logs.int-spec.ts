import { PrismaService } from '@compactor/persistence';
import { InProcessTestStack, longSweAgentSession, pollUntil, RunningApp, startTestStack } from '@compactor/testing';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { jobFinished, startTestApi, TestApi } from '../test-app';

const LONG = longSweAgentSession();

/**
 * The worker logs as the API does: JSON lines through pino, `service: "worker"`, and every line a
 * job writes names the job and its session; the summarizer's key never appears.
 */
describe('worker logs', () => {
  let stack: InProcessTestStack<TestApi>;
  let api: TestApi;
  let worker: RunningApp;
  let key: string;

  beforeAll(async () => {
    stack = await startTestStack({ label: 'worker-logs', api: () => startTestApi() });
    ({ api, worker, key } = stack);
  }, 60_000);
  afterAll(() => stack?.close());
  const http = () => request(api.app.getHttpServer());
  const auth = () => ({ Authorization: `Bearer ${key}` });

  it("are JSON lines with the job's id and session on every line of a job, and no secret", async () => {
    const id = `worker-logs-${randomBytes(4).toString('hex')}`;
    let jobId: string | undefined;
    for (let i = 0; i < LONG.length && !jobId; i += 8) {
      const res = await http()
        .post(`/v1/sessions/${id}/messages`)
        .set(auth())
        .send({ model: 'gpt-4o', contextWindow: 16_000, outputReserve: 2_000, policy: { preset: 'balanced', overrides: { summarizeAbove: 0, summarizeDownTo: 0 } }, format: 'openai', messages: LONG.slice(i, i + 8) })
        .expect(201);
      jobId = res.body.compaction.jobId;
    }
    expect(jobId).toBeDefined();
    const job = await jobFinished(api, key, jobId!, worker);
    expect(job.status).toBe('succeeded');
    const session = await api.app.get(PrismaService).session.findFirstOrThrow({ where: { externalId: id }, select: { id: true } });

    // The job's own line (the compaction service logs its outcome) carries the job and the session.
    const lines = await pollUntil(
      async () => {
        const parsed = worker
          .output()
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as Record<string, unknown>);
        return parsed.some((l) => l.jobId === jobId && String(l.msg).startsWith(`Session ${id}:`)) ? parsed : undefined;
      },
      { timeoutMs: 10_000, what: 'the compaction outcome line' },
    );
    const ofJob = lines.filter((l) => l.jobId === jobId);
    expect(ofJob.length).toBeGreaterThan(0);
    for (const line of ofJob) expect(line).toMatchObject({ service: 'worker', job: 'session.compact', sessionId: session.id, level: expect.any(Number), time: expect.any(Number) });
    // Lines outside a job (start-up, the route of queues) carry no job fields.
    expect(lines.some((l) => l.jobId === undefined && l.service === 'worker')).toBe(true);
    expect(worker.output()).not.toContain(stack.summarizerKey);
  }, 90_000);
});
