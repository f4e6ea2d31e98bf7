import { JobName, JobQueue, QueueName } from '@compactor/jobs';
import { longSweAgentSession, pollUntil, RunningApp, startWorkerFor } from '@compactor/testing';
import { randomBytes, randomUUID } from 'node:crypto';
import { Client } from 'pg';
import request from 'supertest';
import { startTestApi, TestApi } from '../test-app';

/** A long real session (the SWE-agent runs of testdata/ one after another), as in compaction.int-spec.ts. */
const LONG = longSweAgentSession();

interface AppendResponse {
  lastSeq: number;
  usage: { contextTokens: number; budget: number; threshold: number; utilization: number };
  compaction: { scheduled: boolean; jobId?: string };
}
interface JobView {
  id: string;
  status: string;
  trigger: string;
  reason: string | null;
  tokensBefore: number | null;
  tokensAfter: number | null;
  llmCalls: number;
  llmInputTokens: number;
  llmOutputTokens: number;
  llmCostUsd: number;
}
interface UsagePoint {
  seq: number;
  kind: string;
  contextTokens: number;
  budget: number;
  threshold: number;
  at: string;
  compaction?: { jobId: string; tokensBefore: number | null; tokensAfter: number | null; trigger: string | null };
}

const uid = (label: string) => `${label}-${randomBytes(4).toString('hex')}`;
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
function median(xs: number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/**
 * Usage series and the analytics summary on the real API, Postgres and Redis, with a worker
 * process running real compactions for tenant A; tenant B's compaction history is written
 * straight into compaction_jobs at fixed past dates, so ranges, days and sums are exact.
 */
describe('usage and analytics', () => {
  let api: TestApi;
  let worker: RunningApp;
  let db: Client;
  let keyA: string;
  let keyB: string;
  const longId = uid('long');
  const appends: AppendResponse[] = [];
  const jobs: JobView[] = [];
  const http = () => request(api.app.getHttpServer());
  const auth = (k: string) => ({ Authorization: `Bearer ${k}` });
  const job = async (id: string) => (await http().get(`/v1/jobs/${id}`).set(auth(keyA)).expect(200)).body as JobView;
  const finished = (id: string) =>
    pollUntil(
      async () => {
        const j = await job(id);
        return ['succeeded', 'skipped', 'failed'].includes(j.status) ? j : undefined;
      },
      { timeoutMs: 60_000, what: `job ${id} to finish (worker output: ${worker.output().slice(-2000)})` },
    );
  const summary = async (key: string, query = '') => (await http().get(`/v1/analytics/summary${query}`).set(auth(key)).expect(200)).body;

  /** Appends plain text until the session is at about `utilization` of its budget; a trigger at 100% keeps it from compacting. */
  async function nearBudgetSession(key: string, id: string, utilization: number): Promise<AppendResponse> {
    const policy = { preset: 'balanced', overrides: { triggerFraction: 1 } };
    let res: AppendResponse = (
      await http()
        .post(`/v1/sessions/${id}/messages`)
        .set(auth(key))
        .send({ model: 'gpt-4o', contextWindow: 4_096, outputReserve: 0, policy, messages: [{ role: 'user', content: 'start' }] })
        .expect(201)
    ).body;
    // "word " is one token with gpt-4o's encoding: close the gap in two steps (the second corrects the message overhead).
    for (const role of ['assistant', 'user']) {
      const gap = Math.floor(res.usage.budget * utilization) - res.usage.contextTokens;
      res = (await http().post(`/v1/sessions/${id}/messages`).set(auth(key)).send({ messages: [{ role, content: 'word '.repeat(Math.max(gap, 1)) }] }).expect(201)).body;
    }
    expect(res.compaction.scheduled).toBe(false);
    return res;
  }

  beforeAll(async () => {
    api = await startTestApi();
    keyA = await api.tenantKey();
    keyB = await api.tenantKey();
    db = new Client({ connectionString: api.config.DATABASE_URL });
    await db.connect();
    worker = await startWorkerFor(api.config);
    // Tenant A: a long real session that compacts in the background; each scheduled run is awaited before the next append.
    for (let i = 0; i < LONG.length; i += 8) {
      const res: AppendResponse = (
        await http()
          .post(`/v1/sessions/${longId}/messages`)
          .set(auth(keyA))
          .send({ model: 'gpt-4o', contextWindow: 32_000, outputReserve: 4_000, policy: 'balanced', format: 'openai', messages: LONG.slice(i, i + 8) })
          .expect(201)
      ).body;
      appends.push(res);
      if (res.compaction.scheduled) jobs.push(await finished(res.compaction.jobId!));
    }
  }, 300_000);
  afterAll(async () => {
    await worker?.stop();
    await db?.end();
    await api?.close();
  });

  describe('GET /v1/sessions/:id/usage', () => {
    it('has a point per append with the numbers the append answered, and a marker per applied compaction with its job', async () => {
      const succeeded = jobs.filter((j) => j.status === 'succeeded');
      expect(succeeded.length).toBeGreaterThan(0);
      expect(jobs.filter((j) => j.status === 'failed')).toEqual([]);

      const body = (await http().get(`/v1/sessions/${longId}/usage`).set(auth(keyA)).expect(200)).body;
      const points = body.points as UsagePoint[];
      expect(body.nextCursor).toBeNull();
      expect(points.filter((p) => p.kind === 'append').map(({ seq, contextTokens, budget, threshold }) => ({ seq, contextTokens, budget, threshold }))).toEqual(
        appends.map((a) => ({ seq: a.lastSeq, contextTokens: a.usage.contextTokens, budget: a.usage.budget, threshold: a.usage.threshold })),
      );
      for (const p of points.filter((x) => x.kind === 'append')) expect(p.compaction).toBeUndefined();

      const markers = points.filter((p) => p.kind === 'compaction');
      expect(markers.map((p) => p.compaction!.jobId).sort()).toEqual(succeeded.map((j) => j.id).sort());
      for (const marker of markers) {
        const j = succeeded.find((x) => x.id === marker.compaction!.jobId)!;
        expect(marker.compaction).toEqual({ jobId: j.id, tokensBefore: j.tokensBefore, tokensAfter: j.tokensAfter, trigger: j.trigger });
        // Each run was awaited before the next append: the compaction point drops below the append point before it.
        const before = points[points.indexOf(marker) - 1];
        expect(before.kind).toBe('append');
        expect(marker.seq).toBe(before.seq);
        expect(marker.contextTokens).toBeLessThan(before.contextTokens);
        expect(marker.budget).toBe(before.budget);
      }
      // Oldest first.
      points.slice(1).forEach((p, i) => {
        expect(p.seq).toBeGreaterThanOrEqual(points[i].seq);
        expect(Date.parse(p.at)).toBeGreaterThanOrEqual(Date.parse(points[i].at));
      });

      const session = (await http().get(`/v1/sessions/${longId}`).set(auth(keyA)).expect(200)).body;
      expect({ sessionId: body.sessionId, budget: body.budget, threshold: body.threshold, contextTokens: body.contextTokens }).toEqual({
        sessionId: longId,
        budget: session.usage.budget,
        threshold: session.usage.threshold,
        contextTokens: session.usage.contextTokens,
      });
      expect(body.threshold).toBe(Math.floor(body.budget * 0.9));
    });

    it('pages with after/limit through exactly the same points', async () => {
      const all = (await http().get(`/v1/sessions/${longId}/usage`).set(auth(keyA)).expect(200)).body.points as UsagePoint[];
      const paged: UsagePoint[] = [];
      let pages = 0;
      for (let after: string | null = ''; after !== null; pages += 1) {
        const page: { points: UsagePoint[]; nextCursor: string | null } = (await http().get(`/v1/sessions/${longId}/usage?limit=4${after ? `&after=${after}` : ''}`).set(auth(keyA)).expect(200)).body;
        expect(page.points.length).toBeLessThanOrEqual(4);
        paged.push(...page.points);
        after = page.nextCursor;
      }
      expect(paged).toEqual(all);
      expect(pages).toBe(Math.ceil(all.length / 4));
    });

    it("answers 404 for an unknown session and for another tenant's, and 400 naming a bad parameter", async () => {
      await http().get(`/v1/sessions/${uid('missing')}/usage`).set(auth(keyA)).expect(404);
      const other = await http().get(`/v1/sessions/${longId}/usage`).set(auth(keyB)).expect(404);
      expect(other.body.error.code).toBe('session_not_found');
      for (const [query, field] of [
        ['limit=0', 'limit'],
        ['limit=5001', 'limit'],
        ['limit=abc', 'limit'],
        ['after=-1', 'after'],
        ['after=xyz', 'after'],
        ['bogus=1', '(body)'],
      ]) {
        const res = await http().get(`/v1/sessions/${longId}/usage?${query}`).set(auth(keyA)).expect(400);
        expect([query, res.body.error.code]).toEqual([query, 'validation_failed']);
        if (field !== '(body)') expect([query, res.body.error.details.fields[0].field]).toEqual([query, field]);
      }
    });
  });

  describe('GET /v1/sessions/:id/usage?maxPoints=', () => {
    type Positioned = UsagePoint & { position: number };
    const pageAll = async (key: string, id: string) => {
      const all: UsagePoint[] = [];
      for (let after: string | null = ''; after !== null; ) {
        const page: { points: UsagePoint[]; nextCursor: string | null } = (await http().get(`/v1/sessions/${id}/usage?limit=5000${after ? `&after=${after}` : ''}`).set(auth(key)).expect(200)).body;
        all.push(...page.points);
        after = page.nextCursor;
      }
      return all;
    };

    it('a series of fewer points comes whole, each with its position', async () => {
      const all = await pageAll(keyA, longId);
      const body = (await http().get(`/v1/sessions/${longId}/usage?maxPoints=${Math.max(100, all.length)}`).set(auth(keyA)).expect(200)).body;
      expect(body.totalPoints).toBe(all.length);
      expect(body.stretches).toBeUndefined();
      expect(body.nextCursor).toBeNull();
      expect(body.points).toEqual(all.map((p, position) => ({ ...p, position })));
    });

    it('draws 30,001 points in at most 601: every marker with the point before it, and the highest and lowest append of every stretch, past the first 20,000 too', async () => {
      // A session of another tenant, its usage points written straight into the table: a flat series with a
      // compaction near the start and markers, peaks and a dip after the 20,000th point (the dashboard once stopped there).
      const key = await api.tenantKey();
      const id = uid('long-usage');
      await http().post(`/v1/sessions/${id}/messages`).set(auth(key)).send({ model: 'gpt-4o', messages: [{ role: 'user', content: 'start' }] }).expect(201);
      const { rows } = await db.query<{ id: string }>('SELECT id FROM sessions WHERE external_id = $1', [id]);
      const markers: Record<number, string> = { 5_000: 'compaction', 21_000: 'compaction', 24_000: 'restore', 25_500: 'goal_update', 27_000: 'compaction', 29_990: 'compaction' };
      const special: Record<number, number> = { 20_999: 60_000, 22_222: 90_000, 23_333: 5, 26_001: 70_000 };
      await db.query(
        `INSERT INTO usage_points (session_id, kind, seq, context_tokens, budget, threshold)
         SELECT $1, COALESCE(($2::jsonb ->> g::text), 'append'), g, COALESCE(($3::jsonb ->> g::text)::int, CASE WHEN $2::jsonb ? g::text THEN 500 ELSE 1000 + g % 100 END),
                CASE WHEN g >= 28000 THEN 2 * first.budget ELSE first.budget END, first.threshold
         FROM generate_series(1, 30000) g, (SELECT budget, threshold FROM usage_points WHERE session_id = $1) first`,
        [rows[0].id, JSON.stringify(markers), JSON.stringify(special)],
      );
      const all = await pageAll(key, id);
      expect(all).toHaveLength(30_001);

      const body = (await http().get(`/v1/sessions/${id}/usage?maxPoints=600`).set(auth(key)).expect(200)).body;
      const drawn = body.points as Positioned[];
      expect(body.totalPoints).toBe(30_001);
      expect(body.nextCursor).toBeNull();
      // 600 less room for the 6 markers, the points before them and the first and last: 293 stretches of two appends; the budget's one move adds a point.
      expect(body.stretches).toBe(293);
      expect(drawn.length).toBeLessThanOrEqual(601);
      // Each drawn point is the series' own point at its position, oldest first.
      for (const p of drawn) expect(p).toEqual({ ...all[p.position], position: p.position });
      expect(drawn.map((p) => p.position)).toEqual([...new Set(drawn.map((p) => p.position))].sort((a, b) => a - b));
      const at = new Set(drawn.map((p) => p.position));
      // Every compaction, restore and goal update, each with the point before it (the peak it cut), and the first and last points.
      const markerPositions = all.flatMap((p, i) => (p.kind === 'append' ? [] : [i]));
      expect(markerPositions.map((i) => all[i].seq)).toEqual(Object.keys(markers).map(Number));
      for (const i of markerPositions) expect([i, at.has(i), at.has(i - 1)]).toEqual([i, true, true]);
      expect(drawn.filter((p) => p.kind === 'compaction')).toHaveLength(4);
      expect(at.has(0) && at.has(30_000)).toBe(true);
      // The peaks and the dip beyond the 20,000th point, and the budget's move.
      for (const seq of [22_222, 23_333, 26_001]) expect(drawn.find((p) => p.seq === seq && p.kind === 'append')?.contextTokens).toBe(special[seq]);
      expect(drawn.find((p) => p.budget === 2 * all[0].budget)?.seq).toBe(28_000);
      // Every stretch's highest and lowest append.
      const stretchOf = (position: number) => Math.floor((position * body.stretches) / all.length);
      const extremes = (points: Positioned[]) => {
        const out = new Map<number, [number, number]>();
        for (const p of points.filter((x) => x.kind === 'append')) {
          const [high, low] = out.get(stretchOf(p.position)) ?? [-Infinity, Infinity];
          out.set(stretchOf(p.position), [Math.max(high, p.contextTokens), Math.min(low, p.contextTokens)]);
        }
        return [...out.entries()].sort((a, b) => a[0] - b[0]);
      };
      const series = extremes(all.map((p, position) => ({ ...p, position })));
      expect(series).toHaveLength(body.stretches);
      expect(extremes(drawn)).toEqual(series);
    });

    it('answers 400 naming maxPoints out of range or combined with paging', async () => {
      for (const query of ['maxPoints=99', 'maxPoints=20001', 'maxPoints=abc', 'maxPoints=600&limit=10', 'maxPoints=600&after=5']) {
        const res = await http().get(`/v1/sessions/${longId}/usage?${query}`).set(auth(keyA)).expect(400);
        expect([query, res.body.error.details.fields[0].field]).toEqual([query, 'maxPoints']);
      }
    });
  });

  describe('GET /v1/analytics/summary', () => {
    let bSession: { id: string; tenantId: string };
    const bJobs: Record<string, string> = {};
    const sessionB = uid('b-jobs');
    const nearA = uid('a-near');
    const nearB85 = uid('b-near-85');
    const nearB95 = uid('b-near-95');
    const near: Record<string, AppendResponse> = {};

    beforeAll(async () => {
      near[nearA] = await nearBudgetSession(keyA, nearA, 0.9);
      near[nearB85] = await nearBudgetSession(keyB, nearB85, 0.85);
      near[nearB95] = await nearBudgetSession(keyB, nearB95, 0.95);
      await http().post('/v1/sessions').set(auth(keyB)).send({ id: sessionB, model: 'gpt-4o' }).expect(201);
      bSession = (await db.query('SELECT id, tenant_id AS "tenantId" FROM sessions WHERE external_id = $1', [sessionB])).rows[0];
      // Tenant B's compaction history, at fixed instants around day boundaries.
      const rows: [string, string, string, boolean, number | null, number | null, number, number, number, string, string | null, string][] = [
        // name, trigger, status, dry run, before, after, llm calls, in, out, cost, error, created at
        ['s1', 'threshold', 'succeeded', false, 10_000, 2_000, 1, 5_000, 500, '0.0125', null, '2025-03-01T10:00:00Z'],
        ['s2', 'threshold', 'succeeded', false, 8_000, 6_000, 2, 100, 10, '0.001', null, '2025-03-01T23:59:59.999Z'],
        ['f1', 'manual', 'failed', false, null, null, 3, 0, 0, '0', 'upstream answered 503', '2025-03-02T00:00:00Z'],
        ['k1', 'threshold', 'skipped', false, 5_000, 4_900, 0, 0, 0, '0', null, '2025-03-02T12:00:00Z'],
        ['d1', 'manual', 'succeeded', true, 9_000, 1_000, 1, 1_000, 100, '0.5', null, '2025-03-02T13:00:00Z'],
        ['s3', 'watermark', 'succeeded', false, 4_000, 1_000, 0, 0, 0, '0', null, '2025-03-03T00:00:00Z'],
        ['now', 'threshold', 'succeeded', false, 6_000, 3_000, 0, 0, 0, '0', null, new Date(Date.now() - 60_000).toISOString()],
      ];
      for (const [name, trigger, status, dryRun, before, after, calls, input, output, cost, error, at] of rows) {
        bJobs[name] = randomUUID();
        await db.query(
          `INSERT INTO compaction_jobs (id, session_id, tenant_id, trigger, status, policy, dry_run, tokens_before, tokens_after,
             llm_calls, llm_input_tokens, llm_output_tokens, llm_cost_usd, error, created_at, finished_at)
           VALUES ($1, $2, $3, $4::"CompactionTrigger", $5::"CompactionStatus", '{"preset":"balanced"}', $6, $7, $8, $9, $10, $11, $12, $13, $14, $14::timestamptz + interval '5 seconds')`,
          [bJobs[name], bSession.id, bSession.tenantId, trigger, status, dryRun, before, after, calls, input, output, cost, error, at],
        );
      }
    });

    it("sums tenant A's real compactions exactly as their jobs report them", async () => {
      const s = await summary(keyA);
      const succeeded = jobs.filter((j) => j.status === 'succeeded');
      const ratios = succeeded.map((j) => j.tokensAfter! / j.tokensBefore!);
      expect(s.compactions).toEqual({
        total: jobs.length,
        succeeded: succeeded.length,
        skipped: jobs.filter((j) => j.status === 'skipped').length,
        failed: 0,
        queued: 0,
        running: 0,
      });
      expect(s.tokensSaved).toBe(sum(succeeded.map((j) => j.tokensBefore! - j.tokensAfter!)));
      expect(s.tokensSaved).toBeGreaterThan(0);
      expect(s.compressionRatios.median).toBeCloseTo(median(ratios)!, 5);
      const expectedBuckets = Array.from({ length: 10 }, (_, b) => ratios.filter((r) => r >= b / 10 && (b === 9 || r < (b + 1) / 10)).length);
      expect(s.compressionRatios.buckets.map((b: { count: number }) => b.count)).toEqual(expectedBuckets);
      expect(s.compressionRatios.buckets[3]).toEqual({ from: 0.3, to: 0.4, count: expectedBuckets[3] });
      expect(s.llm.calls).toBe(sum(jobs.map((j) => j.llmCalls)));
      expect(s.llm.inputTokens).toBe(sum(jobs.map((j) => j.llmInputTokens)));
      expect(s.llm.outputTokens).toBe(sum(jobs.map((j) => j.llmOutputTokens)));
      expect(s.llm.costUsd).toBeCloseTo(sum(jobs.map((j) => j.llmCostUsd)), 6);
      // The default range: the last 30 days, every UTC day present.
      expect(Date.parse(s.to) - Date.parse(s.from)).toBe(30 * 24 * 3600 * 1000);
      expect(s.compactionsPerDay.length).toBe(31);
      expect(s.compactionsPerDay.at(-1).day).toBe(new Date(Date.parse(s.to)).toISOString().slice(0, 10));
      expect(sum(s.compactionsPerDay.map((d: { count: number }) => d.count))).toBe(jobs.length);
      expect(sum(s.compactionsPerDay.map((d: { tokensSaved: number }) => d.tokensSaved))).toBe(s.tokensSaved);
      expect(s.failures).toEqual({ total: 0, perDay: s.compactionsPerDay.map((d: { day: string }) => ({ day: d.day, count: 0 })), recent: [] });
    });

    it('counts, per UTC day, what tenant B did in the range: dry runs only in LLM usage, skipped runs save nothing', async () => {
      const s = await summary(keyB, '?from=2025-03-01&to=2025-03-02');
      expect(s).toMatchObject({
        from: '2025-03-01T00:00:00.000Z',
        to: '2025-03-03T00:00:00.000Z',
        tokensSaved: 10_000,
        compactions: { total: 4, succeeded: 2, skipped: 1, failed: 1, queued: 0, running: 0 },
        compactionsPerDay: [
          { day: '2025-03-01', count: 2, succeeded: 2, skipped: 0, failed: 0, tokensSaved: 10_000 },
          { day: '2025-03-02', count: 2, succeeded: 0, skipped: 1, failed: 1, tokensSaved: 0 },
        ],
        llm: { calls: 7, inputTokens: 6_100, outputTokens: 610, costUsd: 0.5135 },
        failures: {
          total: 1,
          perDay: [
            { day: '2025-03-01', count: 0 },
            { day: '2025-03-02', count: 1 },
          ],
          recent: [{ jobId: bJobs.f1, sessionId: sessionB, trigger: 'manual', error: 'upstream answered 503', at: '2025-03-02T00:00:05.000Z' }],
        },
      });
      // The summarizer's usage per day adds up to the range's totals (dry runs included).
      type Day = { llmCalls: number; llmTokens: number; llmCostUsd: number };
      expect(sum(s.compactionsPerDay.map((d: Day) => d.llmCalls))).toBe(7);
      expect(sum(s.compactionsPerDay.map((d: Day) => d.llmTokens))).toBe(6_710);
      expect(sum(s.compactionsPerDay.map((d: Day) => d.llmCostUsd))).toBeCloseTo(0.5135, 6);
      expect(s.compressionRatios.median).toBeCloseTo(0.475, 10);
      expect(s.compressionRatios.buckets.filter((b: { count: number }) => b.count > 0)).toEqual([
        { from: 0.2, to: 0.3, count: 1 },
        { from: 0.7, to: 0.8, count: 1 },
      ]);
    });

    it('takes date-times as exact instants, `to` exclusive, and answers zeros for an empty range', async () => {
      const edge = await summary(keyB, '?from=2025-03-01T12:00:00Z&to=2025-03-02T00:00:00Z');
      expect(edge.compactions.total).toBe(1);
      expect(edge.tokensSaved).toBe(2_000);
      const nextDay = await summary(keyB, '?from=2025-03-03&to=2025-03-03');
      expect(nextDay.compactions).toMatchObject({ total: 1, succeeded: 1 });
      expect(nextDay.compactionsPerDay).toEqual([{ day: '2025-03-03', count: 1, succeeded: 1, skipped: 0, failed: 0, tokensSaved: 3_000, llmCalls: 0, llmTokens: 0, llmCostUsd: 0 }]);
      const offset = await summary(keyB, `?from=${encodeURIComponent('2025-03-02T01:00:00+01:00')}&to=2025-03-02`);
      expect(offset.from).toBe('2025-03-02T00:00:00.000Z');
      expect(offset.compactions.total).toBe(2);

      const empty = await summary(keyB, '?from=2024-01-01&to=2024-01-31');
      expect(empty).toMatchObject({ tokensSaved: 0, compactions: { total: 0, succeeded: 0, skipped: 0, failed: 0 }, llm: { calls: 0, costUsd: 0 } });
      expect(empty.compressionRatios.median).toBeNull();
      expect(empty.compactionsPerDay).toHaveLength(31);
      expect(empty.compressionRatios.buckets.every((b: { count: number }) => b.count === 0)).toBe(true);
    });

    it("keeps tenants apart: each sees only its own compactions and sessions near their budget", async () => {
      const a = await summary(keyA);
      const b = await summary(keyB);
      // B's default range holds only its job of a minute ago; A's is exactly its own (previous test).
      expect(b.compactions).toEqual({ total: 1, succeeded: 1, skipped: 0, failed: 0, queued: 0, running: 0 });
      expect(b.tokensSaved).toBe(3_000);
      expect(a.compactions.total).toBe(jobs.length);
      expect(a.failures.recent).toEqual([]);

      expect(b.sessionsNearBudget.threshold).toBe(0.8);
      expect(b.sessionsNearBudget.count).toBe(2);
      expect(b.sessionsNearBudget.sessions).toEqual(
        [nearB95, nearB85].map((id) => ({
          id,
          model: 'gpt-4o',
          utilization: near[id].usage.utilization,
          contextTokens: near[id].usage.contextTokens,
          lastActivityAt: expect.any(String),
        })),
      );
      expect(near[nearB85].usage.utilization).toBeGreaterThanOrEqual(0.8);
      expect(near[nearB95].usage.utilization).toBeGreaterThan(near[nearB85].usage.utilization);
      const aNear = a.sessionsNearBudget.sessions.map((x: { id: string }) => x.id);
      expect(aNear).toContain(nearA);
      expect(aNear).not.toContain(nearB85);
      expect(aNear).not.toContain(nearB95);
      expect(a.sessionsNearBudget.count).toBe(aNear.length);

      // A fresh tenant sees nothing at all.
      const c = await summary(await api.tenantKey(['read']), '?from=2025-01-01&to=2025-12-31');
      expect(c).toMatchObject({ tokensSaved: 0, compactions: { total: 0 }, llm: { calls: 0 }, failures: { total: 0, recent: [] }, sessionsNearBudget: { count: 0, sessions: [] } });
    });

    it('reports the depth of the compaction queue', async () => {
      // The worker takes nothing delayed: a run parked an hour ahead shows as delayed until removed.
      const queue = api.app.get(JobQueue);
      const parked = await queue.enqueue(JobName.Compact, { jobId: randomUUID(), sessionId: bSession.id, tenantId: bSession.tenantId }, { delay: 3_600_000 });
      try {
        const s = await summary(keyA);
        expect(s.queueDepth).toEqual({ waiting: expect.any(Number), active: expect.any(Number), delayed: 1, failed: expect.any(Number) });
      } finally {
        await queue.queue(QueueName.Compaction).remove(parked);
      }
      const after = await pollUntil(async () => {
        const s = await summary(keyA);
        return s.queueDepth.waiting + s.queueDepth.active + s.queueDepth.delayed === 0 ? s : undefined;
      }, { what: 'the compaction queue to be empty' });
      expect(after.queueDepth.delayed).toBe(0);
    });

    it('answers 400 naming the field for bad dates, from not before to, a range over 366 days or an unknown parameter', async () => {
      for (const [query, field] of [
        ['from=yesterday', 'from'],
        ['to=2025-13-01', 'to'],
        ['from=2025-03-01T10:00:00', 'from'],
        ['from=2025-03-05&to=2025-03-01', 'from'],
        ['from=2025-03-02T00:00:00Z&to=2025-03-02T00:00:00Z', 'from'],
        ['from=2024-01-01&to=2025-01-02', 'to'],
        ['from=2025-01-01&from=2025-01-02', 'from'],
        ['since=2025-01-01', '(body)'],
      ]) {
        const res = await http().get(`/v1/analytics/summary?${query}`).set(auth(keyA)).expect(400);
        expect([query, res.body.error.code]).toEqual([query, 'validation_failed']);
        if (field !== '(body)') expect([query, res.body.error.details.fields[0].field]).toEqual([query, field]);
        expect(res.body.error.message).toContain(field === '(body)' ? 'since' : field);
      }
      // A year and a day (leap years) is the most a range spans.
      await http().get('/v1/analytics/summary?from=2024-01-01&to=2024-12-31').set(auth(keyA)).expect(200);
    });

    it('needs an API key (every scope reads: `ingest` reads too)', async () => {
      await http().get('/v1/analytics/summary').expect(401);
      await http().get(`/v1/sessions/${longId}/usage`).expect(401);
      await http().get('/v1/analytics/summary').set(auth(`${keyA}x`)).expect(401);
      const ingestOnly = await api.tenantKey(['ingest']);
      await http().get('/v1/analytics/summary').set(auth(ingestOnly)).expect(200);
    });
  });
});
