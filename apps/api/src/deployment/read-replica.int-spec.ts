import {
  createMigratedDatabase,
  freeLoopbackPort,
  pollUntil,
  postgresServerBinaries,
  PostgresCluster,
  RunningApp,
  startBuiltApp,
  startPrimaryCluster,
  startStreamingReplica,
  testRedisUrl,
  uniqueQueuePrefix,
} from '@compactor/testing';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import request from 'supertest';

const serverBinaries = postgresServerBinaries();
if (!serverBinaries) {
  // The one reason to skip: no initdb / pg_ctl / pg_basebackup on this machine (Debian: postgresql-15).
  console.warn('read-replica.int-spec skipped: PostgreSQL 15 server binaries missing (looked in PG_SERVER_BIN or /usr/lib/postgresql/15/bin)');
}
const describeWithServer = serverBinaries ? describe : describe.skip;

const DATABASE = 'compactor_replica';
const EXPORT_WAIT_MS = 300;

/**
 * DATABASE_REPLICA_URL (issue #18): a real streaming replica on this machine. A private primary
 * cluster (initdb, never the machine's shared server, whose pg_hba has no replication entry), a hot
 * standby of it from `pg_basebackup -R`, and the built API on both. Analytics and export read the
 * replica, appends and context reads the primary; a replica that lags shows in analytics only; a
 * replica that is down never fails a read or an append.
 */
describeWithServer('read replica (DATABASE_REPLICA_URL)', () => {
  let primary: PostgresCluster;
  let replica: PostgresCluster;
  let api: RunningApp;
  let apiUrl: string;
  const key = `ck_replica_${randomBytes(16).toString('hex')}`;
  const timings: Record<string, number> = {};

  beforeAll(async () => {
    const [primaryPort, replicaPort, apiPort] = await Promise.all([freeLoopbackPort(), freeLoopbackPort(), freeLoopbackPort()]);
    let t = Date.now();
    primary = startPrimaryCluster(primaryPort);
    const databaseUrl = await createMigratedDatabase(primary, DATABASE);
    timings.primaryMs = Date.now() - t;
    t = Date.now();
    replica = startStreamingReplica(primary, replicaPort);
    timings.replicaMs = Date.now() - t;
    api = await startBuiltApp(
      'api',
      {
        DATABASE_URL: databaseUrl,
        DATABASE_REPLICA_URL: replica.url(DATABASE),
        DATABASE_REPLICA_EXPORT_WAIT_MS: String(EXPORT_WAIT_MS),
        REDIS_URL: testRedisUrl(),
        QUEUE_PREFIX: uniqueQueuePrefix('replica'),
        HOST: '127.0.0.1',
        PORT: String(apiPort),
        LOG_LEVEL: 'warn',
        COMPACTOR_INIT_API_KEY: key,
      },
      /Compactor API listening/,
    );
    apiUrl = `http://127.0.0.1:${apiPort}`;
  }, 60_000);

  afterAll(async () => {
    await api?.stop();
    replica?.remove();
    primary?.remove();
    console.log(`read-replica.int-spec timings (ms): ${JSON.stringify(timings)}`);
  });

  const http = () => request(apiUrl);
  const auth = () => ({ Authorization: `Bearer ${key}` });
  const append = (id: string, n: number) =>
    http()
      .post(`/v1/sessions/${id}/messages`)
      .set(auth())
      .send({ model: 'gpt-4o', contextWindow: 64_000, format: 'openai', messages: [{ role: 'user', content: `message ${n} ${randomBytes(8).toString('hex')}` }] })
      .expect(201);
  const usagePoints = async (id: string) => {
    const res = await http().get(`/v1/sessions/${id}/usage`).set(auth()).expect(200);
    return res.body as { points: unknown[]; contextTokens: number };
  };
  const exportMessages = async (id: string) => {
    const res = await http().get(`/v1/sessions/${id}/export`).set(auth()).buffer(true).parse((r, done) => {
      let text = '';
      r.on('data', (d: Buffer) => (text += d.toString('utf8')));
      r.on('end', () => done(null, text));
    });
    expect(res.status).toBe(200);
    return (JSON.parse(res.body as string) as { messages: { seq: number }[] }).messages.map((m) => m.seq);
  };
  /** On the replica's `postgres` database, so the test's own queries never show up in the app database's activity. */
  const onReplica = async <T>(sql: string): Promise<T[]> => {
    const c = new Client({ connectionString: replica.url('postgres') });
    await c.connect();
    try {
      return (await c.query(sql)).rows as T[];
    } finally {
      await c.end();
    }
  };
  /** The API's connections on the replica, per pool (the pools keep idle connections for 10 s). */
  const replicaConnections = async () => {
    const rows = await onReplica<{ application_name: string; n: number }>(
      `SELECT application_name, count(*)::int AS n FROM pg_stat_activity WHERE datname = '${DATABASE}' GROUP BY application_name`,
    );
    return Object.fromEntries(rows.map((r) => [r.application_name, r.n])) as Record<string, number>;
  };
  const onPrimary = async <T>(sql: string): Promise<T[]> => {
    const c = new Client({ connectionString: primary.url(DATABASE) });
    await c.connect();
    try {
      return (await c.query(sql)).rows as T[];
    } finally {
      await c.end();
    }
  };

  it('analytics and export read the replica, appends and context reads the primary; a lagging replica shows only in analytics, never in an export', async () => {
    const id = `replica-${randomBytes(4).toString('hex')}`;
    await append(id, 1);
    await append(id, 2);
    // Replication is asynchronous: poll until the replica has replayed both appends' usage points.
    let t = Date.now();
    await pollUntil(async () => ((await usagePoints(id)).points.length === 2 ? true : undefined), { what: 'the replica to replay two appends', timeoutMs: 10_000 });
    timings.firstReplayMs = Date.now() - t;
    const summary = await http().get('/v1/analytics/summary').set(auth()).expect(200);
    expect(summary.body).toHaveProperty('sessionsNearBudget');
    expect((await replicaConnections())['compactor-replica-analytics']).toBeGreaterThan(0);
    // The API's primary pools never name themselves for the replica.
    expect(await onPrimary(`SELECT 1 FROM pg_stat_activity WHERE application_name LIKE 'compactor-replica-%'`)).toHaveLength(0);

    // Replay paused: the replica lags by as much as we like.
    await onReplica('SELECT pg_wal_replay_pause()');
    await pollUntil(async () => ((await onReplica<{ s: string }>('SELECT pg_get_wal_replay_pause_state() AS s'))[0].s === 'paused' ? true : undefined), { what: 'replay paused' });
    await append(id, 3);
    // The append and the context read are the primary's: the third message is there at once.
    expect((await http().get(`/v1/sessions/${id}`).set(auth()).expect(200)).body.messageCount).toBe(3);
    // (Consecutive user messages come merged into one in the OpenAI format.)
    expect(JSON.stringify((await http().get(`/v1/sessions/${id}/context`).set(auth()).expect(200)).body.messages)).toContain('message 3 ');
    const stale = await usagePoints(id);
    // The usage series is the replica's (two points); its current tokens come from the session row on the primary.
    expect(stale.points).toHaveLength(2);
    // The export must not miss an acknowledged append: it waits EXPORT_WAIT_MS for the replica, then reads the primary.
    t = Date.now();
    expect(await exportMessages(id)).toEqual([1, 2, 3]);
    timings.exportWhileLaggingMs = Date.now() - t;
    expect(timings.exportWhileLaggingMs).toBeGreaterThanOrEqual(EXPORT_WAIT_MS);
    expect((await replicaConnections())['compactor-replica-export']).toBeUndefined();

    await onReplica('SELECT pg_wal_replay_resume()');
    t = Date.now();
    await pollUntil(async () => ((await usagePoints(id)).points.length === 3 ? true : undefined), { what: 'the replica to catch up', timeoutMs: 10_000 });
    timings.catchUpAfterResumeMs = Date.now() - t;
    // Caught up: the export reads the replica (its own pool's connection appears there).
    t = Date.now();
    expect(await exportMessages(id)).toEqual([1, 2, 3]);
    timings.exportFromReplicaMs = Date.now() - t;
    expect((await replicaConnections())['compactor-replica-export']).toBeGreaterThan(0);
  }, 40_000);

  it('a replica that is down: appends succeed, analytics and export fall back to the primary (fresh), and the replica is used again once it is back', async () => {
    const id = `replica-down-${randomBytes(4).toString('hex')}`;
    await append(id, 1);
    replica.stop();
    await append(id, 2);
    let t = Date.now();
    expect((await usagePoints(id)).points).toHaveLength(2);
    timings.firstReadAfterReplicaDownMs = Date.now() - t;
    await http().get('/v1/analytics/summary').set(auth()).expect(200);
    expect(await exportMessages(id)).toEqual([1, 2]);
    expect(api.output()).toContain('read replica unavailable');
    expect(api.exitCode()).toBeNull();

    replica.start();
    await append(id, 3);
    // After REPLICA_RETRY_AFTER_MS the API tries the replica again; its analytics pool reconnects there.
    t = Date.now();
    await pollUntil(
      async () => {
        const usage = await usagePoints(id);
        return usage.points.length === 3 && ((await replicaConnections())['compactor-replica-analytics'] ?? 0) > 0 ? true : undefined;
      },
      { what: 'analytics back on the replica', timeoutMs: 15_000, intervalMs: 200 },
    );
    timings.backOnReplicaMs = Date.now() - t;
    // A warning at most once per 5 s window (one here unless the restart took longer), with no URL in it.
    const warnings = api.output().match(/read replica unavailable/g) ?? [];
    expect(warnings.length).toBeGreaterThanOrEqual(1);
    expect(warnings.length).toBeLessThanOrEqual(1 + Math.floor(timings.backOnReplicaMs / 5000));
    expect(api.output()).not.toContain('postgresql://');
  }, 40_000);
});
