import { BuiltApi, FaultStack, longSweAgentSession, pollUntil, RunningApp, startFaultStack, startRedisServer, TestRedisServer } from '@compactor/testing';
import { randomBytes } from 'node:crypto';
import request from 'supertest';

const LONG = longSweAgentSession();
const SESSIONS = 25;
const APPENDS_PER_SESSION = 12;
const MESSAGES_PER_APPEND = 5;

/** An answer other than 201 or 503: the test fails on it rather than retrying. */
class UnexpectedAnswer extends Error {}

/**
 * Two APIs and two workers under load (docs/reliability.md "Under load"): built processes on one
 * test database and a Redis of their own, a few hundred appends over many sessions while the
 * workers compact them (local summarizer), one worker and one API killed with SIGKILL in the
 * middle and started again. The client does what a client behind a load balancer does: an append
 * whose connection failed is sent again, with the same Idempotency-Key, to another API.
 * Nothing acknowledged is lost or duplicated, every compaction finishes, and no session's head
 * was ever the base of two committed compactions.
 */
describe('two APIs and two workers under load, one of each killed', () => {
  let redis: TestRedisServer;
  let stack: FaultStack;

  beforeAll(async () => {
    redis = await startRedisServer();
    stack = await startFaultStack('load_faults', redis.url);
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
    await redis?.stop();
  }, 60_000);

  it('a few hundred appends with compactions, kill -9 of a worker and an API: nothing lost or doubled, every compaction finished, heads moved one at a time', async () => {
    const workerEnv = { COMPACTION_SWEEP_INTERVAL_MS: '2000', LOG_LEVEL: 'warn' };
    const apis: BuiltApi[] = [await stack.startApi(), await stack.startApi()];
    const workers: RunningApp[] = [await stack.startWorker(workerEnv), await stack.startWorker(workerEnv)];
    const auth = { Authorization: `Bearer ${stack.key}` };
    const run = randomBytes(3).toString('hex');
    const sessions = Array.from({ length: SESSIONS }, (_, s) => `load-${run}-${s}`);
    const total = SESSIONS * APPENDS_PER_SESSION;
    const started = Date.now();
    let acknowledged = 0;
    let resent = 0;
    let round = 0;

    /** One append, sent again (same key) to the next live API while connections fail or the answer is 503. */
    const append = async (session: string, k: number) => {
      const body = { model: 'gpt-4o', contextWindow: 12_000, outputReserve: 1_000, format: 'openai', messages: LONG.slice(k * MESSAGES_PER_APPEND, (k + 1) * MESSAGES_PER_APPEND) };
      const deadline = Date.now() + 30_000;
      for (;;) {
        const api = apis[round++ % apis.length];
        const res = await request(api.url)
          .post(`/v1/sessions/${session}/messages`)
          .set({ ...auth, 'Idempotency-Key': `${session}-${k}` })
          .send(body)
          .then(
            (r) => r,
            () => undefined, // the connection failed: this API was killed
          );
        if (res?.status === 201) {
          acknowledged += 1;
          return res.body as { firstSeq: number; lastSeq: number };
        }
        if (res && res.status !== 503) throw new UnexpectedAnswer(`append ${session}#${k} answered ${res.status}: ${JSON.stringify(res.body)} (API: ${api.app.output().slice(-3000)})`);
        if (Date.now() > deadline) throw new Error(`append ${session}#${k} found no API for 30 s`);
        resent += 1;
      }
    };
    /** Each session's appends in order (a client waits for one append before the next); sessions run concurrently. */
    let appendsDoneMs = 0;
    const chains = sessions.map(async (session) => {
      const answers: { firstSeq: number; lastSeq: number }[] = [];
      for (let k = 0; k < APPENDS_PER_SESSION; k += 1) answers.push(await append(session, k));
      appendsDoneMs = Math.max(appendsDoneMs, Date.now() - started);
      return answers;
    });

    // In the middle, while compactions run: kill one worker and one API, then start new ones.
    const faults = (async () => {
      await pollUntil(async () => (acknowledged >= total / 3 ? true : undefined), { timeoutMs: 60_000, what: 'a third of the appends' });
      await pollUntil(async () => ((await stack.query("SELECT 1 FROM compaction_jobs WHERE status = 'running' LIMIT 1")).length > 0 ? true : undefined), {
        timeoutMs: 30_000,
        intervalMs: 10,
        what: 'a compaction to be running',
      });
      const killedAt = Date.now() - started;
      const [api] = apis.splice(0, 1);
      await Promise.all([api.app.kill('SIGKILL'), workers[0].kill('SIGKILL')]);
      const ackAtKill = acknowledged;
      apis.push(await stack.startApi());
      workers.push(await stack.startWorker(workerEnv));
      return { killedAt, ackAtKill, restartedAt: Date.now() - started };
    })();

    const answers = await Promise.all(chains);
    const fault = await faults;
    expect(acknowledged).toBe(total);

    // Every compaction finished: no row queued or running once the workers caught up.
    await pollUntil(async () => ((await stack.query("SELECT 1 FROM compaction_jobs WHERE status IN ('queued', 'running') LIMIT 1")).length === 0 ? true : undefined), {
      timeoutMs: 40_000,
      what: `every compaction to finish (workers: ${workers.map((w) => w.output().slice(-800)).join('\n---\n')})`,
    });
    const settledMs = Date.now() - started;

    // Nothing lost or duplicated: each session holds exactly what was acknowledged, in order, seqs 1..60.
    const perSession = APPENDS_PER_SESSION * MESSAGES_PER_APPEND;
    for (const [s, session] of sessions.entries()) {
      expect(answers[s].map((a) => [a.firstSeq, a.lastSeq])).toEqual(Array.from({ length: APPENDS_PER_SESSION }, (_, k) => [k * MESSAGES_PER_APPEND + 1, (k + 1) * MESSAGES_PER_APPEND]));
      const rows = await stack.query<{ seq: number; raw: unknown }>('SELECT m.seq, m.raw FROM messages m JOIN sessions s ON s.id = m.session_id WHERE s.external_id = $1 ORDER BY m.seq', [session]);
      expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: perSession }, (_, i) => i + 1));
      expect(rows.map((r) => r.raw)).toEqual(LONG.slice(0, perSession));
    }

    // One commit per head: no version is the parent of two, every succeeded job made exactly one version from a base of its own.
    expect(await stack.query('SELECT session_id, parent_id, count(*)::int AS n FROM context_versions GROUP BY session_id, parent_id HAVING count(*) > 1')).toEqual([]);
    expect(
      await stack.query("SELECT session_id, base_version_id, count(*)::int AS n FROM compaction_jobs WHERE status = 'succeeded' AND NOT dry_run GROUP BY session_id, base_version_id HAVING count(*) > 1"),
    ).toEqual([]);
    expect(
      await stack.query(
        "SELECT j.id, count(v.id)::int AS versions FROM compaction_jobs j LEFT JOIN context_versions v ON v.compaction_job_id = j.id WHERE j.status = 'succeeded' AND NOT j.dry_run GROUP BY j.id HAVING count(v.id) <> 1",
      ),
    ).toEqual([]);
    expect(await stack.query("SELECT v.id FROM context_versions v JOIN compaction_jobs j ON j.id = v.compaction_job_id WHERE j.status <> 'succeeded'")).toEqual([]);
    // Each session's head is its newest version.
    expect(await stack.query('SELECT s.id FROM sessions s WHERE s.head_version_id IS DISTINCT FROM (SELECT v.id FROM context_versions v WHERE v.session_id = s.id ORDER BY v.number DESC LIMIT 1)')).toEqual([]);

    const jobs = await stack.query<{ status: string; n: number; taken_over: number }>('SELECT status, count(*)::int AS n, count(*) FILTER (WHERE attempts > 1)::int AS taken_over FROM compaction_jobs GROUP BY status ORDER BY status');
    const succeeded = jobs.find((j) => j.status === 'succeeded')?.n ?? 0;
    expect(succeeded).toBeGreaterThanOrEqual(SESSIONS);
    expect(jobs.find((j) => j.status === 'failed')).toBeUndefined();
    // Every context still reads, and no live process died.
    for (const session of sessions) await request(apis[0].url).get(`/v1/sessions/${session}/context`).set(auth).expect(200);
    for (const p of [...apis.map((a) => a.app), workers[1], workers[2]]) expect(p.exitCode()).toBeNull();
    console.log(
      `Under load: ${total} appends (${total * MESSAGES_PER_APPEND} messages) on ${SESSIONS} sessions through 2 APIs and 2 workers; worker and API killed at ${fault.killedAt} ms (${fault.ackAtKill} appends acknowledged), new ones up at ${fault.restartedAt} ms; ${resent} appends sent again to the other API; appends done at ${appendsDoneMs} ms, every compaction finished at ${settledMs} ms; jobs ${jobs.map((j) => `${j.status} ${j.n}${j.taken_over ? ` (${j.taken_over} taken over after a stall)` : ''}`).join(', ')}`,
    );
  }, 120_000);
});
