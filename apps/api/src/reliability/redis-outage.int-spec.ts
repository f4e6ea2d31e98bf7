import { JobQueue, QueueName } from '@compactor/jobs';
import { PrismaService } from '@compactor/persistence';
import { Redis } from 'ioredis';
import { longSweAgentSession, pollUntil, RunningApp, startRedisServer, startWorkerFor, TestRedisServer } from '@compactor/testing';
import request from 'supertest';
import { startTestApi, TestApi } from '../test-app';

const LONG = longSweAgentSession();
const FINISHED = ['succeeded', 'skipped', 'failed'];

/**
 * Redis down and back (docs/reliability.md), on a redis-server of the test's own: appends that
 * cross the threshold answer at once with `queue-unavailable` and keep their messages; when Redis
 * returns empty (a restart that lost its data), the worker's sweep enqueues the compactions that
 * were due, including one whose append never recorded its job (an API killed in between), and
 * creates again the maintenance schedules that went with Redis's data.
 */
describe('Redis outages', () => {
  let redis: TestRedisServer;
  let api: TestApi;
  let worker: RunningApp;
  let key: string;

  beforeAll(async () => {
    redis = await startRedisServer();
    api = await startTestApi({ REDIS_URL: redis.url });
    key = await api.tenantKey();
    worker = await startWorkerFor(api.config, { COMPACTION_SWEEP_INTERVAL_MS: '1000' });
  }, 60_000);
  afterAll(async () => {
    await redis?.start(); // a failed test may leave it down: the apps close their connections cleanly on a live one
    await worker?.stop();
    await api?.close();
    await redis?.stop();
  }, 30_000);
  const http = () => request(api.app.getHttpServer());
  const auth = () => ({ Authorization: `Bearer ${key}` });
  const append = (id: string, messages: unknown[]) =>
    http()
      .post(`/v1/sessions/${id}/messages`)
      .set(auth())
      .send({ model: 'gpt-4o', contextWindow: 24_000, outputReserve: 2_000, format: 'openai', messages })
      .expect(201);
  /** Appends six messages at a time until an append crosses the threshold; returns every append's duration. */
  const appendUntilDue = async (id: string) => {
    const durations: number[] = [];
    for (let i = 0; i < LONG.length; i += 6) {
      const started = Date.now();
      const res = await append(id, LONG.slice(i, i + 6));
      durations.push(Date.now() - started);
      if (res.body.compaction.reason !== 'below-threshold') return { res, durations };
    }
    throw new Error('the session never crossed its threshold');
  };
  const jobsOf = async (externalId: string) => {
    const prisma = api.app.get(PrismaService);
    const session = await prisma.session.findFirstOrThrow({ where: { externalId }, select: { id: true } });
    return prisma.compactionJob.findMany({ where: { sessionId: session.id }, orderBy: { createdAt: 'asc' }, select: { id: true, status: true, error: true } });
  };

  it('appends answer at once while Redis is down; the due compactions run once it is back', async () => {
    const due = `redis-down-${Date.now()}`;
    const lost = `redis-lost-${Date.now()}`;
    await append(due, LONG.slice(0, 2));
    await append(lost, LONG.slice(0, 2));
    await redis.stop();

    const first = await appendUntilDue(due);
    expect(first.res.body.compaction).toEqual({ scheduled: false, reason: 'queue-unavailable' });
    const second = await appendUntilDue(lost);
    expect(second.res.body.compaction).toEqual({ scheduled: false, reason: 'queue-unavailable' });
    const slowest = Math.max(...first.durations, ...second.durations);
    expect(slowest).toBeLessThan(1_000);
    // The messages are stored: the history ends at the append's last message.
    const history = await http().get(`/v1/sessions/${due}`).set(auth()).expect(200);
    expect(history.body.messageCount).toBe(first.res.body.lastSeq);
    // The job waits queued for the sweep.
    const [waiting] = await jobsOf(due);
    expect(waiting.status).toBe('queued');
    // The other session's append "died" before it recorded its job: only the session is over its threshold.
    const prisma = api.app.get(PrismaService);
    await prisma.compactionJob.deleteMany({ where: { id: { in: (await jobsOf(lost)).map((j) => j.id) } } });

    await redis.start(); // empty: whatever was queued in Redis is gone
    const ran = await pollUntil(
      async () => {
        const [job] = await jobsOf(due);
        return FINISHED.includes(job.status) ? job : undefined;
      },
      { timeoutMs: 30_000, what: `the queued compaction to run after Redis returned (worker: ${worker.output().slice(-1500)})` },
    );
    expect(ran).toEqual({ id: waiting.id, status: 'succeeded', error: null });
    const scheduled = await pollUntil(
      async () => {
        const jobs = await jobsOf(lost);
        return jobs.length > 0 && FINISHED.includes(jobs[0].status) ? jobs : undefined;
      },
      { timeoutMs: 30_000, what: 'the sweep to schedule the session whose job was never recorded' },
    );
    expect(scheduled.map((j) => j.status)).toEqual(['succeeded']);
    // The maintenance schedules went with Redis's data: the sweep created them again, no worker restart needed.
    const client = new Redis(redis.url, { maxRetriesPerRequest: null });
    const queue = new JobQueue(client, api.config.QUEUE_PREFIX);
    try {
      const schedules = await pollUntil(
        async () => {
          const keys = (await queue.queue(QueueName.Maintenance).getJobSchedulers()).map((s) => s.key).sort();
          return keys.length === 2 ? keys : undefined;
        },
        { timeoutMs: 10_000, what: 'the maintenance schedules to be created again' },
      );
      expect(schedules).toEqual(['expire-idempotency-hourly', 'expire-idle-sessions']);
    } finally {
      await queue.close();
      client.disconnect();
    }
    expect(worker.exitCode()).toBeNull();
    console.log(`Redis down: ${first.durations.length + second.durations.length} appends, slowest ${slowest} ms (${[...first.durations, ...second.durations].join(", ")})`);
  }, 120_000);
});
