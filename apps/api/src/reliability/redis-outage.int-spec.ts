import { eventChannel, EventSubscriber, JobQueue, QueueName } from '@compactor/jobs';
import { PrismaService } from '@compactor/persistence';
import { Redis } from 'ioredis';
import { longSweAgentSession, pollUntil, RunningApp, startWorkerFor, TestRedisServer } from '@compactor/testing';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import request from 'supertest';
import { REDIS } from '../redis.provider';
import { startTestApiOnOwnRedis, TestApiOnOwnRedis } from '../test-app';

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
  let api: TestApiOnOwnRedis;
  let worker: RunningApp;
  let key: string;

  beforeAll(async () => {
    // A long heartbeat: an event that reaches a stream sooner came by a wake-up or, while Redis is down, the 2 s poll.
    api = await startTestApiOnOwnRedis({ EVENTS_HEARTBEAT_MS: '60000' });
    redis = api.redis;
    key = await api.tenantKey();
    worker = await startWorkerFor(api.config, { COMPACTION_SWEEP_INTERVAL_MS: '1000' });
  }, 60_000);
  afterAll(async () => {
    await redis?.start(); // a failed test may leave it down: the apps close their connections cleanly on a live one
    await worker?.stop();
    await api?.close();
    // The built worker drains its running jobs for up to SHUTDOWN_TIMEOUT_MS (30 s) before it exits: a 30 s hook
    // timed out in a run of every API spec at once (passes alone).
  }, 60_000);
  const agent = () => request(api.app.getHttpServer());
  const auth = () => ({ Authorization: `Bearer ${key}` });
  const append = (id: string, messages: unknown[]) =>
    agent()
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
    const history = await agent().get(`/v1/sessions/${due}`).set(auth()).expect(200);
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

  /** Reads a text/event-stream over plain HTTP: the types of the events it delivered, in order. */
  const openStream = (id: string) =>
    new Promise<{ types: string[]; ended: () => boolean; close: () => void; openedMs: number }>((resolve, reject) => {
      const started = Date.now();
      const port = (api.app.getHttpServer().address() as AddressInfo).port;
      const types: string[] = [];
      let ended = false;
      let buffer = '';
      const req = http.get(`http://127.0.0.1:${port}/v1/sessions/${id}/events`, { headers: { ...auth(), accept: 'text/event-stream' } }, (res) => {
        if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
            const event = buffer.slice(0, end).split('\n').find((line) => line.startsWith('event: '));
            if (event) types.push(event.slice('event: '.length));
            buffer = buffer.slice(end + 2);
          }
        });
        res.on('end', () => (ended = true));
        res.on('error', () => (ended = true));
        resolve({ types, ended: () => ended, close: () => req.destroy(), openedMs: Date.now() - started });
      });
      req.on('error', reject);
    });
  const setGoal = async (id: string, goal: string) => {
    const started = Date.now();
    await agent().put(`/v1/sessions/${id}/goal`).set(auth()).send({ goal }).expect(200);
    return Date.now() - started;
  };
  const count = (types: string[], type: string) => types.filter((t) => t === type).length;

  it("the API's other Redis users fail fast while Redis is down (nothing waits in memory), streams poll PostgreSQL, and all recover when it returns", async () => {
    const id = `redis-sse-${Date.now()}`;
    await append(id, LONG.slice(0, 2));
    const prisma = api.app.get(PrismaService);
    const sessionId = (await prisma.session.findFirstOrThrow({ where: { externalId: id }, select: { id: true } })).id;
    const subscriber = api.app.get(EventSubscriber);
    const shared = api.app.get<Redis>(REDIS);
    const streams: Array<{ close: () => void }> = [];
    const before = await openStream(id);
    streams.push(before);
    try {
      await pollUntil(async () => (subscriber.live(sessionId) ? true : undefined), { timeoutMs: 10_000, what: 'the stream to subscribe to its wake-ups' });
      await redis.stop();

      // Readiness names Redis, at once, without the driver's text.
      let started = Date.now();
      const ready = await agent().get('/health/ready').expect(503);
      const readyMs = Date.now() - started;
      expect(readyMs).toBeLessThan(1_000);
      expect(ready.body.error.details.checks.redis).toEqual({ status: 'down', error: 'unreachable' });
      expect(ready.body.error.details.checks.postgres.status).toBe('up');
      expect(JSON.stringify(ready.body)).not.toMatch(/ECONNREFUSED|writeable|127\.0\.0\.1|:\d{4,5}/);
      // Status reads the workers' heartbeats in Redis: a 503 naming it, at once.
      started = Date.now();
      const status = await agent().get('/v1/status').set(auth()).expect(503);
      expect(Date.now() - started).toBeLessThan(1_000);
      expect(JSON.stringify(status.body)).toContain('redis');
      expect(JSON.stringify(status.body)).not.toMatch(/ECONNREFUSED|writeable|127\.0\.0\.1/);
      // A change that publishes a wake-up answers at once; the appends still answer queue-unavailable at once.
      const goalMs = await setGoal(id, 'Keep the YAML key order while Redis is down');
      expect(goalMs).toBeLessThan(1_000);
      started = Date.now();
      const during = await append(id, LONG.slice(2, 4));
      expect(Date.now() - started).toBeLessThan(1_000);
      expect(during.body.compaction.reason).toMatch(/^(below-threshold|queue-unavailable)$/);
      // A stream opened now starts at once (no wait for a subscription Redis cannot confirm) and serves the history.
      const opened = await openStream(id);
      streams.push(opened);
      expect(opened.openedMs).toBeLessThan(1_000);
      // Both streams get the event committed during the outage from PostgreSQL (2 s poll; the heartbeat is 60 s).
      for (const stream of [before, opened]) {
        await pollUntil(async () => (count(stream.types, 'goal-updated') === 1 ? true : undefined), { timeoutMs: 8_000, what: 'the goal-updated event on a stream while Redis is down' });
      }
      expect(before.ended()).toBe(false);
      // Nothing waits in ioredis's memory for Redis to return.
      expect((shared as unknown as { offlineQueue: { length: number } }).offlineQueue.length).toBe(0);

      await redis.start();
      await pollUntil(
        async () => {
          const res = await agent().get('/health/ready');
          return res.status === 200 ? res : undefined;
        },
        { timeoutMs: 15_000, what: '/health/ready to answer 200 once Redis is back' },
      );
      // Both streams are subscribed again, the one opened during the outage included, and wake-ups deliver.
      await pollUntil(async () => (subscriber.live(sessionId) ? true : undefined), { timeoutMs: 15_000, what: 'the streams to subscribe again once Redis is back' });
      const probe = new Redis(redis.url, { maxRetriesPerRequest: null });
      try {
        const [, subscribers] = (await probe.pubsub('NUMSUB', eventChannel(api.config.QUEUE_PREFIX, sessionId))) as [string, number];
        expect(Number(subscribers)).toBe(1); // one connection per API process, both streams on it
    } finally {
      probe.disconnect();
    }
    // Status uses the queue's connection too, which reconnects on its own schedule (ioredis's backoff, at most 2 s apart).
    await pollUntil(
      async () => {
        const res = await agent().get('/v1/status').set(auth());
        return res.status === 200 ? res : undefined;
      },
      { timeoutMs: 15_000, what: '/v1/status to answer 200 once Redis is back' },
    );
    started = Date.now();
    await setGoal(id, 'Keep the YAML key order after Redis returned');
    for (const stream of [before, opened]) {
      await pollUntil(async () => (count(stream.types, 'goal-updated') === 2 ? true : undefined), { timeoutMs: 10_000, what: 'the second goal-updated event on a stream after Redis returned' });
    }
    const wakeMs = Date.now() - started;
    // No poll while the wake-ups arrive, and the heartbeat is 60 s: only the wake-up can have delivered it this soon.
    expect(wakeMs).toBeLessThan(1_500);
    console.log(`Redis down: /health/ready 503 in ${readyMs} ms, goal update in ${goalMs} ms, stream opened in ${opened.openedMs} ms; after Redis returned the wake-up reached both streams in ${wakeMs} ms`);
    } finally {
      for (const stream of streams) stream.close();
    }
  }, 120_000);
});
