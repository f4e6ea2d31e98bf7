import { createRedisConnection, JobName, JobQueue, QueueName } from '@compactor/jobs';
import { PgPoolService } from '@compactor/persistence';
import { longSweAgentSession, pollUntil, RunningApp, startWorkerFor } from '@compactor/testing';
import type { Redis } from 'ioredis';
import request from 'supertest';
import { jobFinished, startTestApi, TestApi } from '../test-app';

const LONG = longSweAgentSession();

/** Every table that holds rows of a session, by its session_id column. */
const SESSION_TABLES = [
  'messages',
  'context_versions',
  'checkpoints',
  'artifacts',
  'version_artifacts',
  'snapshots',
  'compaction_jobs',
  'events',
  'usage_points',
  'session_ledgers',
  'idempotency_records',
] as const;

/**
 * Session retention (issue #15 item 6): the worker's scheduled job deletes each tenant's sessions
 * idle for more than its `sessionRetentionDays`, with everything they own, and audits each; a
 * built worker process runs the schedule every second here, in batches of 2 sessions.
 */
describe('session retention (scheduled worker job)', () => {
  let api: TestApi;
  let worker: RunningApp;
  let redis: Redis;
  let producer: JobQueue;
  const run = Date.now().toString(36);

  beforeAll(async () => {
    api = await startTestApi();
    worker = await startWorkerFor(api.config, {
      // Tenants that set nothing keep sessions 60 days.
      COMPACTOR_LIMIT_SESSION_RETENTION_DAYS: '60',
      SESSION_RETENTION_INTERVAL_MS: '1000',
      SESSION_RETENTION_BATCH_SIZE: '2',
      // The compaction sweep would mark the hand-made running row below failed (BullMQ does not know it).
      COMPACTION_SWEEP_INTERVAL_MS: '3600000',
    });
    redis = createRedisConnection(api.config.REDIS_URL);
    producer = new JobQueue(redis, api.config.QUEUE_PREFIX);
  }, 60_000);
  afterAll(async () => {
    await producer?.close();
    redis?.disconnect();
    await worker?.stop();
    await api?.close();
  });

  const http = () => request(api.app.getHttpServer());
  const auth = (k: string) => ({ Authorization: `Bearer ${k}` });
  const pg = () => api.app.get(PgPoolService).pool;
  const sessionView = async (externalId: string, key: string) => (await http().get(`/v1/sessions/${externalId}`).set(auth(key)).expect(200)).body;
  const internalId = async (tenantKey: string, externalId: string) => {
    await sessionView(externalId, tenantKey);
    const { rows } = await pg().query<{ id: string }>(`SELECT id FROM sessions WHERE external_id = $1`, [externalId]);
    return rows[0].id;
  };
  const rowsOf = async (id: string) => {
    const counts: Record<string, number> = {};
    for (const table of SESSION_TABLES) {
      const { rows } = await pg().query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE session_id = $1`, [id]);
      counts[table] = rows[0].n;
    }
    return counts;
  };
  const exists = async (id: string) => (await pg().query(`SELECT 1 FROM sessions WHERE id = $1`, [id])).rowCount === 1;
  const backdate = (id: string, days: number) => pg().query(`UPDATE sessions SET last_activity_at = now() - make_interval(days => $2) WHERE id = $1`, [id, days]);
  const append = (key: string, id: string, messages: unknown[], policy: unknown = 'balanced') =>
    http().post(`/v1/sessions/${id}/messages`).set(auth(key)).send({ model: 'gpt-4o', contextWindow: 48_000, policy, format: 'openai', messages }).expect(201);
  /** The retention runs that finished after `since` (ms). */
  const runsFinishedAfter = async (since: number) =>
    (await producer.queue(QueueName.Maintenance).getCompleted(0, 200)).filter((j) => j.name === JobName.ExpireIdleSessions && (j.finishedOn ?? 0) > since).length;

  it('deletes sessions idle past their tenant’s retention with everything they own; keeps recent ones, other tenants’, 0 = forever, and a running compaction', async () => {
    const keyA = await api.tenantKey(['ingest', 'read', 'admin']); // retention 30 days
    const keyB = await api.tenantKey(['ingest', 'read', 'admin']); // retention 0: kept forever
    const keyC = await api.tenantKey(['ingest', 'read', 'admin']); // the operator's default, 60 days
    await http().patch('/v1/tenant').set(auth(keyA)).send({ limits: { sessionRetentionDays: 30 } }).expect(200);
    await http().patch('/v1/tenant').set(auth(keyB)).send({ limits: { sessionRetentionDays: 0 } }).expect(200);

    // A compacted session with offloaded artifacts, versions, checkpoints, snapshots, events and usage points.
    const compacted = `ret-compacted-${run}`;
    let artifactId: string | undefined;
    for (let i = 0; i < LONG.length && !artifactId; i += 8) {
      const res = await append(keyA, compacted, LONG.slice(i, i + 8), { preset: 'offload-compact', overrides: { offloadMinTokens: 200, triggerThreshold: 0 } });
      if (res.body.compaction.scheduled) expect((await jobFinished(api, keyA, res.body.compaction.jobId, worker)).status).not.toBe('failed');
      const { rows } = await pg().query<{ id: string }>(`SELECT a.id FROM artifacts a JOIN sessions s ON s.id = a.session_id WHERE s.external_id = $1 LIMIT 1`, [compacted]);
      artifactId = rows[0]?.id;
    }
    expect(artifactId).toBeDefined();
    await http().get(`/v1/artifacts/${artifactId}`).set(auth(keyA)).expect(200);
    await http().post(`/v1/sessions/${compacted}/snapshots`).set(auth(keyA)).send({ label: 'before retention' }).expect(201);

    const names = {
      compacted,
      oldA1: `ret-a-old1-${run}`,
      oldA2: `ret-a-old2-${run}`,
      recentA: `ret-a-recent-${run}`,
      busyA: `ret-a-busy-${run}`,
      oldB: `ret-b-old-${run}`,
      oldC: `ret-c-old-${run}`,
      recentC: `ret-c-recent-${run}`,
    };
    const keyOf: Record<string, string> = { oldB: keyB, oldC: keyC, recentC: keyC };
    for (const [name, external] of Object.entries(names)) {
      if (name !== 'compacted') await append(keyOf[name] ?? keyA, external, LONG.slice(0, 3));
    }
    const ids: Record<string, string> = {};
    for (const [name, external] of Object.entries(names)) ids[name] = await internalId(keyOf[name] ?? keyA, external);
    const before = await rowsOf(ids.compacted);
    const owned = ['messages', 'context_versions', 'artifacts', 'version_artifacts', 'snapshots', 'compaction_jobs', 'events', 'usage_points'];
    expect(owned.filter((table) => !(before[table] > 0))).toEqual([]);
    const messageCount = (await sessionView(compacted, keyA)).messageCount as number;
    expect(messageCount).toBeGreaterThan(0);

    // A compaction running on an idle session: never deleted under it.
    const { rows: busyJob } = await pg().query<{ id: string }>(
      `INSERT INTO compaction_jobs (id, session_id, tenant_id, trigger, status, policy, started_at)
       SELECT gen_random_uuid(), id, tenant_id, 'manual', 'running', '{"preset":"balanced"}', now() FROM sessions WHERE id = $1 RETURNING id`,
      [ids.busyA],
    );

    const idle: Record<string, number> = { compacted: 31, oldA1: 45, oldA2: 400, recentA: 29, busyA: 40, oldB: 400, oldC: 61, recentC: 31 };
    for (const [name, days] of Object.entries(idle)) await backdate(ids[name], days);

    await pollUntil(async () => ((await Promise.all(['compacted', 'oldA1', 'oldA2', 'oldC'].map((n) => exists(ids[n])))).every((e) => !e) ? true : undefined), {
      what: 'the idle sessions to be deleted',
      timeoutMs: 30_000,
    });
    // Two more complete runs after that: what is still there now stays.
    const settled = Date.now();
    await pollUntil(async () => ((await runsFinishedAfter(settled)) >= 2 ? true : undefined), { what: 'two more retention runs' });
    for (const name of ['recentA', 'busyA', 'oldB', 'recentC']) expect({ name, kept: await exists(ids[name]) }).toEqual({ name, kept: true });

    // Everything the compacted session owned went with it; its artifact is gone over the API too.
    expect(await rowsOf(ids.compacted)).toEqual(Object.fromEntries(SESSION_TABLES.map((t) => [t, 0])));
    await http().get(`/v1/artifacts/${artifactId}`).set(auth(keyA)).expect(404);
    await http().get(`/v1/sessions/${compacted}`).set(auth(keyA)).expect(404);

    // One audit entry per deleted session, by the service (no key), in its own tenant only.
    const entries = (await http().get('/v1/audit?limit=50').set(auth(keyA)).expect(200)).body.entries as { keyId: string | null; action: string; targetType: string; targetId: string; data: Record<string, unknown> }[];
    const expired = entries.filter((e) => e.action === 'session.expired');
    expect(expired.map((e) => e.targetId).sort()).toEqual([names.compacted, names.oldA1, names.oldA2].sort());
    expect(expired.every((e) => e.keyId === null && e.targetType === 'session' && e.data.retentionDays === 30)).toBe(true);
    expect(expired.find((e) => e.targetId === compacted)?.data.messages).toBe(messageCount);
    const entriesC = (await http().get('/v1/audit?limit=50').set(auth(keyC)).expect(200)).body.entries as { action: string; targetId: string; data: Record<string, unknown> }[];
    expect(entriesC.filter((e) => e.action === 'session.expired').map((e) => [e.targetId, e.data.retentionDays])).toEqual([[names.oldC, 60]]);
    expect(worker.output()).toMatch(/Retention: deleted \d session\(s\) of tenant .* idle for more than 30 day\(s\)/);

    // Once its compaction ended, the idle session goes on the next run.
    await pg().query(`UPDATE compaction_jobs SET status = 'succeeded', finished_at = now() WHERE id = $1`, [busyJob[0].id]);
    await pollUntil(async () => ((await exists(ids.busyA)) ? undefined : true), { what: 'the session whose compaction ended to be deleted' });
    expect(await exists(ids.recentA)).toBe(true);
  }, 240_000);
});
