import {
  createTestDatabase,
  freeLoopbackPort,
  longSweAgentSession,
  pgbouncerBinary,
  PgBouncer,
  pollUntil,
  RunningApp,
  startBuiltApp,
  startPgBouncer,
  startWorkerFor,
  TestDatabase,
  testRedisUrl,
  uniqueQueuePrefix,
} from '@compactor/testing';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import request from 'supertest';

const bouncerBinary = pgbouncerBinary();
if (!bouncerBinary) console.warn('pgbouncer.int-spec skipped: pgbouncer is not installed (Debian: apt-get install -y pgbouncer; .ci/run installs it)');
const describeWithBouncer = bouncerBinary ? describe : describe.skip;

const LONG = longSweAgentSession();
/** Server connections the bouncer may open to the test database, for the API and the worker together. */
const POOL_SIZE = 3;
/** The test's own direct connections, left out of the count. */
const WATCHER = 'pgbouncer-spec-watch';

/**
 * PgBouncer in transaction mode in front of PostgreSQL (issue #18): the built API and worker reach
 * the test database only through a private pgbouncer (Debian's; 1.18 here, which cannot keep named
 * prepared statements in transaction mode), with DATABASE_PREPARED_STATEMENTS=false. Appends,
 * context reads and a compaction run through it on at most POOL_SIZE server connections.
 */
describeWithBouncer('behind PgBouncer in transaction mode', () => {
  let db: TestDatabase;
  let bouncer: PgBouncer;
  let api: RunningApp;
  let worker: RunningApp;
  let apiUrl: string;
  const key = `ck_bouncer_${randomBytes(16).toString('hex')}`;

  beforeAll(async () => {
    db = await createTestDatabase('pgbouncer');
    const target = new URL(db.url);
    const [bouncerPort, apiPort] = await Promise.all([freeLoopbackPort(), freeLoopbackPort()]);
    bouncer = await startPgBouncer({ port: bouncerPort, target: { host: target.hostname, port: Number(target.port || 5432) }, poolMode: 'transaction', poolSize: POOL_SIZE });
    const config = { DATABASE_URL: bouncer.url(db.name), REDIS_URL: testRedisUrl(), QUEUE_PREFIX: uniqueQueuePrefix('pgbouncer') };
    api = await startBuiltApp(
      'api',
      { ...config, DATABASE_PREPARED_STATEMENTS: 'false', HOST: '127.0.0.1', PORT: String(apiPort), LOG_LEVEL: 'warn', COMPACTOR_INIT_API_KEY: key },
      /Compactor API listening/,
    );
    apiUrl = `http://127.0.0.1:${apiPort}`;
    worker = await startWorkerFor(config, { DATABASE_PREPARED_STATEMENTS: 'false' });
  }, 60_000);

  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
    await bouncer?.stop();
    await db?.drop();
  });

  const http = () => request(apiUrl);
  const auth = () => ({ Authorization: `Bearer ${key}` });
  /** Server connections to the test database on PostgreSQL itself (not through the bouncer). */
  const serverConnections = async () => {
    const c = new Client({ connectionString: db.url, application_name: WATCHER });
    await c.connect();
    try {
      const { rows } = await c.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name <> $2', [db.name, WATCHER]);
      return rows[0].n;
    } finally {
      await c.end();
    }
  };

  it('this pgbouncer cannot keep named statements in transaction mode (why DATABASE_PREPARED_STATEMENTS=false)', async () => {
    const version = execFileSync(bouncerBinary as string, ['--version'], { encoding: 'utf8' }).split('\n')[0];
    console.log(`pgbouncer.int-spec: ${version}`);
    // One server connection: two clients that each prepare "append-1" meet the same server session.
    const single = await startPgBouncer({ port: await freeLoopbackPort(), target: { host: '127.0.0.1', port: Number(new URL(db.url).port || 5432) }, poolMode: 'transaction', poolSize: 1 });
    // On the `postgres` database, so the test database's server connections are only the apps'.
    const a = new Client({ connectionString: single.url('postgres') });
    const b = new Client({ connectionString: single.url('postgres') });
    try {
      await a.connect();
      await b.connect();
      await a.query({ name: 'append-1', text: 'SELECT 1 AS one' });
      const named = await b.query({ name: 'append-1', text: 'SELECT 1 AS one' }).then(
        () => null,
        (error: { code?: string; message: string }) => error,
      );
      const [major, minor] = (/PgBouncer (\d+)\.(\d+)/.exec(version) ?? []).slice(1).map(Number);
      if (major === 1 && minor < 21) {
        // Before 1.21 the bouncer passes Parse through: the second client's statement name is already taken on the server.
        expect(named?.code).toBe('42P05');
      }
      // Unnamed statements (Prisma's adapter, and ours with the setting off) work for both.
      expect((await b.query({ text: 'SELECT $1::int AS n', values: [2] })).rows[0].n).toBe(2);
      expect((await a.query({ text: 'SELECT $1::int AS n', values: [3] })).rows[0].n).toBe(3);
    } finally {
      await a.end().catch(() => undefined);
      await b.end().catch(() => undefined);
      await single.stop();
    }
  });

  it('appends (concurrent, several sessions), context reads and a compaction work through the bouncer on at most its pool size of server connections', async () => {
    const ids = [0, 1, 2, 3, 4, 5, 6, 7].map((n) => `bouncer-${n}-${randomBytes(4).toString('hex')}`);
    const append = (id: string, from: number, to: number) =>
      http()
        .post(`/v1/sessions/${id}/messages`)
        .set(auth())
        .send({ model: 'gpt-4o', contextWindow: 128_000, format: 'openai', messages: LONG.slice(from, to) });
    // 8 sessions × 8 single-message appends, the sessions side by side: the API's pool asks for more connections than the bouncer has,
    // so its clients meet other clients' server connections (with named statements on, this fails: 42P05 / 26000).
    const started = Date.now();
    let maxServerConnections = 0;
    const watch = setInterval(() => {
      serverConnections().then(
        (n) => (maxServerConnections = Math.max(maxServerConnections, n)),
        () => undefined,
      );
    }, 20);
    try {
      await Promise.all(
        ids.map(async (id) => {
          for (let i = 0; i < 8; i += 1) {
            const res = await append(id, i, i + 1);
            expect(res.status).toBe(201);
          }
        }),
      );
    } finally {
      clearInterval(watch);
    }
    const appendMs = Date.now() - started;
    for (const id of ids) {
      const session = await http().get(`/v1/sessions/${id}`).set(auth()).expect(200);
      expect(session.body.messageCount).toBe(8);
      const context = await http().get(`/v1/sessions/${id}/context`).set(auth()).expect(200);
      expect(context.body.messages.length).toBeGreaterThan(0);
    }
    // A compaction through the bouncer (the worker's Prisma transactions, the API's reads): append to a small window until one is scheduled.
    const small = `bouncer-compact-${randomBytes(4).toString('hex')}`;
    let jobId: string | undefined;
    for (let i = 0; !jobId && i < LONG.length; i += 6) {
      const res = await http()
        .post(`/v1/sessions/${small}/messages`)
        .set(auth())
        .send({ model: 'gpt-4o', contextWindow: 24_000, outputReserve: 2_000, format: 'openai', messages: LONG.slice(i, i + 6) })
        .expect(201);
      jobId = res.body.compaction?.jobId;
    }
    expect(jobId).toBeDefined();
    const job = await pollUntil(
      async () => {
        const r = await http().get(`/v1/jobs/${jobId}`).set(auth());
        return r.status === 200 && ['succeeded', 'skipped', 'failed'].includes(r.body.status) ? r.body : undefined;
      },
      { timeoutMs: 30_000, what: `the compaction to finish (worker: ${worker.output().slice(-1000)})` },
    );
    expect(job.status).toBe('succeeded');
    expect(job.tokensAfter).toBeLessThan(job.tokensBefore);
    const after = await http().get(`/v1/sessions/${small}/context`).set(auth()).expect(200);
    expect(after.body.messages.length).toBeGreaterThan(0);
    await http().get(`/v1/sessions/${small}/export`).set(auth()).expect(200);

    const pools = (await bouncer.show('POOLS')).filter((p) => p.database === db.name);
    const stats = (await bouncer.show('STATS')).filter((s) => s.database === db.name);
    const transactions = Number(stats[0]?.total_xact_count ?? 0);
    console.log(
      `pgbouncer.int-spec: 64 appends in ${appendMs} ms, at most ${maxServerConnections} server connections seen (pool size ${POOL_SIZE}), ${transactions} transactions through the bouncer, pools ${JSON.stringify(pools)}`,
    );
    expect(transactions).toBeGreaterThan(64);
    expect(maxServerConnections).toBeLessThanOrEqual(POOL_SIZE);
    for (const output of [api.output(), worker.output()]) expect(output).not.toMatch(/prepared statement|Unhandled|ERROR/);
    expect(api.exitCode()).toBeNull();
    expect(worker.exitCode()).toBeNull();
  }, 60_000);
});
