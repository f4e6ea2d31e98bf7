import { createTestDatabase, freePort, longSweAgentSession, pollUntil, RunningApp, startBuiltApp, startTcpRelay, startWorkerFor, TcpRelay, TestDatabase, testRedisUrl, uniqueQueuePrefix } from '@compactor/testing';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import request from 'supertest';


const LONG = longSweAgentSession();

/**
 * PostgreSQL restarts, failovers and terminated connections never crash a process (docs/reliability.md).
 * The built API and the built worker (own processes, as production runs them: an unhandled 'error'
 * event would end them) reach the test database through a TCP relay: `pg_terminate_backend`
 * kills their connections on the server, and taking the relay down is the database going away
 * (refused connections, open ones cut) without touching the machine's shared server.
 */
describe('PostgreSQL outages', () => {
  let db: TestDatabase;
  let relay: TcpRelay;
  let api: RunningApp;
  let apiUrl: string;
  let worker: RunningApp;
  const key = `ck_outage_${randomBytes(16).toString('hex')}`;

  beforeAll(async () => {
    db = await createTestDatabase('pg_outage');
    const url = new URL(db.url);
    relay = await startTcpRelay({ host: url.hostname, port: Number(url.port || 5432) });
    const port = await freePort();
    const config = { DATABASE_URL: relay.urlFor(db.url), REDIS_URL: testRedisUrl(), QUEUE_PREFIX: uniqueQueuePrefix('pg-outage') };
    api = await startBuiltApp('api', { ...config, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', COMPACTOR_INIT_API_KEY: key }, /Compactor API listening/);
    apiUrl = `http://127.0.0.1:${port}`;
    worker = await startWorkerFor(config);
  }, 60_000);
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
    await relay?.close();
    await db?.drop();
    // The built worker drains its running jobs for up to SHUTDOWN_TIMEOUT_MS (30 s) before it exits.
  }, 60_000);
  const http = () => request(apiUrl);
  const auth = () => ({ Authorization: `Bearer ${key}` });
  const append = (id: string, messages: unknown[]) =>
    http()
      .post(`/v1/sessions/${id}/messages`)
      .set(auth())
      .send({ model: 'gpt-4o', contextWindow: 24_000, outputReserve: 2_000, format: 'openai', messages });
  const admin = async <T>(run: (c: Client) => Promise<T>) => {
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      return await run(client);
    } finally {
      await client.end();
    }
  };
  /** Every backend of the test database but the asking one; returns how many were terminated. */
  const terminateAll = () =>
    admin(async (c) => (await c.query<{ n: number }>('SELECT count(*)::int AS n FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()) t', [db.name])).rows[0].n);

  it('pg_terminate_backend of every connection: the API and the worker live on, and the next requests and compactions succeed', async () => {
    const id = `pg-terminate-${Date.now()}`;
    let i = 0;
    await append(id, LONG.slice(i, (i += 6))).expect(201);
    let terminated = 0;
    for (let round = 0; round < 3; round += 1) {
      terminated += await terminateAll();
      // The next request may meet a connection that died a moment ago (503, retry): it succeeds within the deadline.
      const res = await pollUntil(async () => {
        const r = await http().get(`/v1/sessions/${id}`).set(auth());
        if (r.status !== 200) expect(r.status).toBe(503);
        return r.status === 200 ? r : undefined;
      }, { timeoutMs: 10_000, what: 'the session to be read again' });
      expect(res.body.id).toBe(id);
    }
    expect(terminated).toBeGreaterThanOrEqual(3);
    expect(api.exitCode()).toBeNull();
    expect(worker.exitCode()).toBeNull();

    // The worker still compacts: append until a compaction is scheduled, and it finishes.
    let jobId: string | undefined;
    while (!jobId && i < LONG.length) {
      jobId = (await append(id, LONG.slice(i, (i += 6))).expect(201)).body.compaction.jobId;
    }
    expect(jobId).toBeDefined();
    await terminateAll();
    const job = await pollUntil(async () => {
      const r = await http().get(`/v1/jobs/${jobId}`).set(auth());
      return r.status === 200 && ['succeeded', 'skipped', 'failed'].includes(r.body.status) ? r.body : undefined;
    }, { timeoutMs: 60_000, what: `job ${jobId} to finish (worker: ${worker.output().slice(-1500)})` });
    expect(job.status).toBe('succeeded');
    expect(api.exitCode()).toBeNull();
    expect(worker.exitCode()).toBeNull();
    for (const output of [api.output(), worker.output()]) expect(output).not.toMatch(/Emitted 'error' event|Unhandled/);
  }, 120_000);

  it('while the database is unreachable, requests answer 503 with Retry-After at once; when it returns they succeed', async () => {
    const id = `pg-down-${Date.now()}`;
    await append(id, LONG.slice(0, 4)).expect(201);
    await relay.down();
    try {
      for (const req of [() => http().get(`/v1/sessions/${id}`).set(auth()), () => append(id, LONG.slice(4, 6)), () => http().get(`/v1/sessions/${id}/context`).set(auth())]) {
        const started = Date.now();
        const res = await req();
        expect({ status: res.status, retryAfter: res.headers['retry-after'], code: res.body.error?.code }).toEqual({ status: 503, retryAfter: '5', code: 'database_unavailable' });
        expect(Date.now() - started).toBeLessThan(6_000);
      }
    } finally {
      await relay.up();
    }
    const res = await pollUntil(async () => {
      const r = await append(id, LONG.slice(4, 6));
      return r.status === 201 ? r : undefined;
    }, { timeoutMs: 15_000, what: 'an append to succeed once the database is back' });
    expect(res.body.firstSeq).toBe(5);
    expect(api.exitCode()).toBeNull();
    expect(worker.exitCode()).toBeNull();
  }, 60_000);
});
