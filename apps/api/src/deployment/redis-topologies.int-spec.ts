import { PrismaService } from '@compactor/persistence';
import { longSweAgentSession, pollUntil, RunningApp, startRedisCluster, startRedisSentinel, startWorkerFor, TestRedisTopology } from '@compactor/testing';
import { Cluster } from 'ioredis';
import request from 'supertest';
import { startTestApi, TestApi } from '../test-app';

const LONG = longSweAgentSession();
const FINISHED = ['succeeded', 'skipped', 'failed'];

/**
 * REDIS_URL's cluster and sentinel forms (issue #18 item 1): a real three-node Redis Cluster and a
 * Redis primary behind a Sentinel, each on loopback ports of the test's own. Through each, the API
 * and a built worker run the compaction flow (an append over the threshold enqueues, the worker
 * compacts, the context serves the new version), readiness and /v1/status (the workers' heartbeats,
 * found by SCAN on every primary of the cluster) answer, and the queue-depth metric reads the queue.
 */
describe.each([
  ['a three-node Redis Cluster', () => startRedisCluster(3)],
  ['a Redis primary behind Sentinel', () => startRedisSentinel()],
])('through %s', (_label, start) => {
  let topology: TestRedisTopology;
  let api: TestApi;
  let worker: RunningApp;
  let key: string;

  beforeAll(async () => {
    topology = await start();
    api = await startTestApi({ REDIS_URL: topology.url });
    key = await api.tenantKey();
    worker = await startWorkerFor(api.config);
  }, 90_000);
  afterAll(async () => {
    await worker?.stop();
    await api?.close();
    await topology?.stop();
  }, 30_000);
  const agent = () => request(api.app.getHttpServer());
  const auth = () => ({ Authorization: `Bearer ${key}` });

  it('compacts a session over its threshold, and answers readiness, status and metrics', async () => {
    await agent().get('/health/ready').expect(200);
    const id = `topology-${Date.now()}`;
    let scheduled: string | undefined;
    for (let i = 0; i < LONG.length && !scheduled; i += 6) {
      const res = await agent()
        .post(`/v1/sessions/${id}/messages`)
        .set(auth())
        .send({ model: 'gpt-4o', contextWindow: 24_000, outputReserve: 2_000, format: 'openai', messages: LONG.slice(i, i + 6) })
        .expect(201);
      expect(res.body.compaction.reason).not.toBe('queue-unavailable');
      if (res.body.compaction.scheduled) scheduled = res.body.compaction.jobId;
    }
    expect(scheduled).toBeDefined();
    const prisma = api.app.get(PrismaService);
    const job = await pollUntil(
      async () => {
        const row = await prisma.compactionJob.findUnique({ where: { id: scheduled! }, select: { status: true, error: true } });
        return row && FINISHED.includes(row.status) ? row : undefined;
      },
      { timeoutMs: 60_000, what: `the compaction to finish (worker: ${worker.output().slice(-1500)})` },
    );
    expect(job).toEqual({ status: 'succeeded', error: null });
    const context = await agent().get(`/v1/sessions/${id}/context?format=openai`).set(auth()).expect(200);
    expect(context.body.contextVersion).toBeGreaterThanOrEqual(1);

    // The worker's heartbeat is found wherever its key's slot lives.
    const status = await pollUntil(
      async () => {
        const res = await agent().get('/v1/status').set(auth()).expect(200);
        return res.body.workers.length > 0 ? res.body : undefined;
      },
      { timeoutMs: 30_000, what: 'the worker in /v1/status' },
    );
    expect(status.queueDepth).toMatchObject({ waiting: expect.any(Number), active: expect.any(Number) });
    const metrics = await agent().get('/metrics').expect(200);
    expect(metrics.text).toMatch(/compactor_queue_jobs\{queue="compaction",state="waiting"\} \d+/);

    // On a cluster, BullMQ's keys carry the prefix as a hash tag: every key of the queues is in one slot.
    if (topology.url.startsWith('redis+cluster://')) {
      const nodes = topology.url
        .slice('redis+cluster://'.length)
        .split(',')
        .map((n) => ({ host: n.split(':')[0], port: Number(n.split(':')[1]) }));
      const cluster = new Cluster(nodes);
      try {
        await new Promise((resolve) => cluster.once('ready', resolve));
        const keys: string[] = [];
        for (const node of cluster.nodes('master')) keys.push(...(await node.keys(`{${api.config.QUEUE_PREFIX}}:*`)));
        expect(keys.length).toBeGreaterThan(0);
        const slots = new Set(await Promise.all(keys.map((k) => cluster.cluster('KEYSLOT', k))));
        expect(slots.size).toBe(1);
      } finally {
        cluster.disconnect();
      }
    }
  }, 120_000);
});
