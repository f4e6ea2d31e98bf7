import { BuiltTestStack, FakeLlm, FakeLlmRequest, pollUntil, startTestStack } from '@compactor/testing';
import { randomBytes } from 'node:crypto';
import request from 'supertest';

/** two-layer's chunk size (characters): one block below is one chunk. */
const CHUNK = 50_000;
const FINISHED = ['succeeded', 'skipped', 'failed'];

/** Block `k` of a big tool result: exactly one two-layer chunk of log lines, each starting with `block<k>-`. */
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

/** Which chunk a summarizer call carried (undefined for any other call). */
const chunkOf = (r: FakeLlmRequest) => [1, 2, 3].find((k) => r.userContent?.includes(`block${k}-00001 `));
const countOf = <T>(xs: T[], x: T) => xs.filter((y) => y === x).length;

/**
 * kill -9 (docs/reliability.md "A killed worker", "A killed API"): built processes, as production
 * runs them, on a test database of their own; the only fake is the LLM upstream.
 * - A worker killed while it waits for the LLM in the middle of a three-chunk compaction: a new
 *   worker takes the job over within seconds, reuses the summary the killed run saved, and the job
 *   finishes once, with one answered LLM call per chunk and one new context version.
 * - An API killed while appends are in flight: replaying every append (same Idempotency-Key) on a
 *   second API gives the first answer where there was one, and the history holds every message once.
 * - An API stopped with SIGTERM (a deploy) while appends are in flight: the requests it read are
 *   answered (not 500: the database pool closes only after them), the others are sent again.
 */
describe('kill -9 of a worker and of an API, SIGTERM of an API', () => {
  let stack: BuiltTestStack;
  let fake: FakeLlm;
  /** While set, the summarizer call for chunk 2 is held (never answered): the worker is killed meanwhile. */
  let holdChunk2 = true;

  beforeAll(async () => {
    stack = await startTestStack({ label: 'sigkill', api: 'built', llm: { respond: (r) => (holdChunk2 && chunkOf(r) === 2 ? { until: new Promise<never>(() => undefined) } : undefined) } });
    fake = stack.fake;
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
  }, 60_000);
  const auth = () => ({ Authorization: `Bearer ${stack.key}` });
  const jobRow = async (id: string) =>
    (
      await stack.query<{ status: string; attempts: number; error: string | null; llm_calls: number; intermediate: Record<string, unknown>; started_at: Date; result_version_id: string | null }>(
        'SELECT status, attempts, error, llm_calls, intermediate, started_at, result_version_id FROM compaction_jobs WHERE id = $1',
        [id],
      )
    )[0];

  it('a worker killed mid-compaction: the job is taken over within seconds, finishes once, pays each chunk once and moves the head once', async () => {
    const api = await stack.startApi();
    const killed = await stack.startWorker(stack.summarizer());
    const id = `sigkill-worker-${randomBytes(4).toString('hex')}`;
    const output = block(1) + block(2) + block(3);
    const res = await request(api.url)
      .post(`/v1/sessions/${id}/messages`)
      .set(auth())
      .send({
        model: 'gpt-4o',
        policy: 'two-layer',
        format: 'openai',
        messages: [
          { role: 'user', content: 'Why is the worker slow?' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_log', type: 'function', function: { name: 'read_log', arguments: '{"path":"worker.log"}' } }] },
          { role: 'tool', tool_call_id: 'call_log', content: output },
        ],
      })
      .expect(201);
    const jobId: string = res.body.compaction.jobId;
    expect(jobId).toEqual(expect.any(String));

    // The run summarized chunk 1 and waits for the LLM on chunk 2.
    await pollUntil(async () => fake.completionRequests().find((r) => chunkOf(r) === 2), { timeoutMs: 60_000, what: `the summarizer call for chunk 2 (worker: ${killed.output().slice(-1500)})` });
    const before = await jobRow(jobId);
    expect({ status: before.status, attempts: before.attempts, saved: Object.keys(before.intermediate).length }).toEqual({ status: 'running', attempts: 1, saved: 1 });

    await killed.kill('SIGKILL');
    const killedAt = Date.now();
    holdChunk2 = false;
    const worker = await stack.startWorker(stack.summarizer());
    const workerUpMs = Date.now() - killedAt;

    const done = await pollUntil(
      async () => {
        const row = await jobRow(jobId);
        return FINISHED.includes(row.status) ? row : undefined;
      },
      { timeoutMs: 60_000, what: `job ${jobId} to finish after the kill (worker: ${worker.output().slice(-1500)})` },
    );
    const pickupMs = new Date(done.started_at).getTime() - killedAt;
    const finishedMs = Date.now() - killedAt;
    // Once: the killed run and the run that took it over, no third; one answered call per chunk (3).
    expect({ status: done.status, attempts: done.attempts, error: done.error, llmCalls: done.llm_calls }).toEqual({ status: 'succeeded', attempts: 2, error: null, llmCalls: 3 });
    // Taken over within seconds: the default lock (8 s from its last renewal) plus one or two stalled checks (every 2 s).
    expect(pickupMs).toBeLessThan(15_000);

    // Chunk 1's saved summary was reused, not paid again; chunk 2's call cut by the kill was asked again, never answered twice.
    const calls = fake.completionRequests();
    expect(calls.every((r) => chunkOf(r) !== undefined)).toBe(true);
    expect([1, 2, 3].map((k) => countOf(calls.map(chunkOf), k))).toEqual([1, 2, 1]);
    const answered = calls.filter((r) => r.outcome === 'answer').map(chunkOf);
    expect(answered.sort()).toEqual([1, 2, 3]);

    // The head moved once: one new context version, made by this job, is the head.
    const versions = await stack.query<{ id: string; job: string | null; head: boolean }>(
      'SELECT v.id, v.compaction_job_id AS job, (s.head_version_id = v.id) AS head FROM context_versions v JOIN sessions s ON s.id = v.session_id WHERE s.external_id = $1 ORDER BY v.number',
      [id],
    );
    expect(versions.filter((v) => v.job === jobId)).toEqual([{ id: done.result_version_id, job: jobId, head: true }]);
    expect(versions.filter((v) => v.job !== null && v.job !== jobId)).toEqual([]);
    // The context serves the summary in the result's place.
    const context = (await request(api.url).get(`/v1/sessions/${id}/context?format=openai`).set(auth()).expect(200)).body;
    const tool = context.messages.find((m: { role: string }) => m.role === 'tool');
    expect(tool.content.length).toBeLessThan(output.length / 5);
    console.log(`Worker SIGKILL: new worker up ${workerUpMs} ms after the kill, job taken over (attempt 2 started) ${pickupMs} ms after, succeeded ${finishedMs} ms after; LLM calls per chunk ${[1, 2, 3].map((k) => countOf(calls.map(chunkOf), k)).join('/')} (chunk 2's first cut by the kill)`);
  }, 120_000);

  /**
   * 40 appends (8 sessions × 5, each with its Idempotency-Key) sent at once to one API, which gets
   * `signal` as soon as the first answer arrives; then all of them are sent again to a second API.
   * Returns the first API's answers by status (`cut` for a connection that failed).
   */
  const appendsThroughAStoppedApi = async (signal: 'SIGKILL' | 'SIGTERM') => {
    const stopped = await stack.startApi();
    const survivor = await stack.startApi();
    const sessions = Array.from({ length: 8 }, (_, s) => `${signal.toLowerCase()}-api-${s}-${randomBytes(4).toString('hex')}`);
    const appends = sessions.flatMap((session) => Array.from({ length: 5 }, (_, n) => ({ session, key: `${session}-append-${n}`, text: `${session} turn ${n}` })));
    const send = (url: string, a: (typeof appends)[number]) =>
      request(url)
        .post(`/v1/sessions/${a.session}/messages`)
        .set({ ...auth(), 'Idempotency-Key': a.key })
        .send({
          model: 'gpt-4o',
          format: 'openai',
          messages: [
            { role: 'user', content: a.text },
            { role: 'assistant', content: `answer to ${a.text}` },
          ],
        });

    const first = new Map<string, { firstSeq: number; lastSeq: number }>();
    const statuses: Record<string, number> = {};
    let firstAnswer!: () => void;
    const answeredOnce = new Promise<void>((resolve) => (firstAnswer = resolve));
    const inFlight = appends.map((a) =>
      send(stopped.url, a).then(
        (r) => {
          statuses[r.status] = (statuses[r.status] ?? 0) + 1;
          if (r.status === 201) first.set(a.key, { firstSeq: r.body.firstSeq, lastSeq: r.body.lastSeq });
          firstAnswer();
        },
        () => (statuses.cut = (statuses.cut ?? 0) + 1),
      ),
    );
    await answeredOnce;
    await stopped.app.kill(signal);
    await Promise.all(inFlight);
    expect(first.size).toBeGreaterThan(0);

    // Every append sent again to the survivor: the first answer where there was one.
    for (const a of appends) {
      const r = await send(survivor.url, a);
      expect(r.status).toBe(201);
      if (first.has(a.key)) expect({ firstSeq: r.body.firstSeq, lastSeq: r.body.lastSeq }).toEqual(first.get(a.key));
    }
    // And once more: replays of replays change nothing.
    expect((await send(survivor.url, appends[appends.length - 1])).status).toBe(201);

    // Nothing lost or duplicated: per session, seqs 1..10 without a gap, each turn's text exactly once.
    for (const session of sessions) {
      const rows = await stack.query<{ seq: number; raw: { content: unknown } }>(
        'SELECT m.seq, m.raw FROM messages m JOIN sessions s ON s.id = m.session_id WHERE s.external_id = $1 ORDER BY m.seq',
        [session],
      );
      expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
      const texts = rows.map((r) => r.raw.content);
      for (const a of appends.filter((x) => x.session === session)) expect([countOf(texts, a.text), countOf(texts, `answer to ${a.text}`)]).toEqual([1, 1]);
    }
    return { statuses, output: stopped.app.output() };
  };

  it('an API killed while appends are in flight: every append sent again to a second API applies once and answers as the first did', async () => {
    const { statuses } = await appendsThroughAStoppedApi('SIGKILL');
    console.log(`API SIGKILL: 40 appends in flight, the killed API answered ${JSON.stringify(statuses)}; all sent again to the second API, each applied once`);
  }, 120_000);

  it('an API stopped (SIGTERM, a deploy) while appends are in flight answers every request it read, never with a 5xx', async () => {
    const { statuses, output } = await appendsThroughAStoppedApi('SIGTERM');
    // 201, or a connection closed before the API read the request (the client sends it again); no 500 or 503.
    expect(Object.keys(statuses).filter((k) => k !== '201' && k !== 'cut')).toEqual([]);
    expect(output).not.toMatch(/Cannot use a pool after calling end|unhandled error/);
    console.log(`API SIGTERM: 40 appends in flight, the stopping API answered ${JSON.stringify(statuses)}; all sent again to the second API, each applied once`);
  }, 120_000);
});
