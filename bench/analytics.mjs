// Usage and analytics benchmark (issue: usage and analytics). Seeds one tenant with 10,000
// sessions and 1,000,000 messages, ~100 usage points and 2 compaction jobs per session, by
// bulk INSERT ... SELECT generate_series straight into the benchmark database; then measures,
// over HTTP against the running API, p50/p95/p99 of GET /v1/analytics/summary on several
// date ranges and of GET /v1/sessions/:id/usage, and EXPLAINs every statement they run
// (the statements themselves, from the built persistence lib). Then adds 100,000 sessions and times session
// search with and without its trigram index (lib/session-search.mjs).
//
//   npm run bench -- analytics
//   npm run bench -- analytics --search-only   (only the session-search subsection: seeds only its sessions)
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fmt, fmtInt, percentile } from './lib/stats.mjs';
import { rng } from './lib/random.mjs';
import { benchSessionSearch, seedSearchSessions } from './lib/session-search.mjs';

const require = createRequire(import.meta.url);
const SESSIONS = 10_000;
const MESSAGES_PER_SESSION = 100;
const APPEND_POINTS_PER_SESSION = 98;
const JOBS_PER_SESSION = 2;
const DAYS = 90;
const WARMUP = 20;
const REQUESTS = 150;
const TARGET_P95_MS = 100;
const DAY_MS = 24 * 3600 * 1000;

/** Seeding statements, in order. $1 is the tenant. Every row is derived from generate_series and hashes, so runs are repeatable. */
const SEED = [
  [
    'sessions',
    // Start times spread over the last 90 days; utilization skewed low (x³), so ~7% are at 80% or more of their budget.
    `INSERT INTO sessions (id, tenant_id, external_id, model, context_window, output_reserve, policy, last_seq, last_role,
       history_tokens, context_tokens, utilization, compactions, created_at, updated_at, last_activity_at)
     SELECT gen_random_uuid(), $1, 'bench-' || lpad(i::text, 5, '0'), (ARRAY['claude-sonnet-4-5', 'gpt-4o', 'gpt-4o-mini'])[1 + i % 3],
       200000, 8192, '{"preset":"balanced","overrides":{}}', ${MESSAGES_PER_SESSION}, 'assistant', ${MESSAGES_PER_SESSION} * 420,
       round(u * 183000)::int, round(u::numeric, 6)::float8, ${JOBS_PER_SESSION}, start, start + interval '${MESSAGES_PER_SESSION} minutes',
       start + interval '${MESSAGES_PER_SESSION} minutes'
     FROM (SELECT i, power(((i::bigint * 7919) % 10007) / 10007.0, 3) AS u,
                  now() - interval '${DAYS} days' + (i::float8 / ${SESSIONS}) * interval '${DAYS - 1} days' AS start
           FROM generate_series(1, ${SESSIONS}) i) s`,
  ],
  [
    'messages',
    `INSERT INTO messages (session_id, seq, role, blocks, raw, format, tokens, created_at)
     SELECT s.id, g, (CASE WHEN g % 2 = 1 THEN 'user' ELSE 'assistant' END)::"MessageRole",
       jsonb_build_array(jsonb_build_object('type', 'text', 'text', t)),
       json_build_object('role', CASE WHEN g % 2 = 1 THEN 'user' ELSE 'assistant' END, 'content', t),
       'anthropic', 40 + (g * 37) % 800, s.created_at + g * interval '1 minute'
     FROM sessions s
     CROSS JOIN generate_series(1, ${MESSAGES_PER_SESSION}) g
     CROSS JOIN LATERAL (SELECT 'Step ' || g || ' of ' || s.external_id || ': run the failing test in tests/test_fields.py and fix the rounding of the serialized value' AS t) x
     WHERE s.tenant_id = $1`,
  ],
  [
    'compaction_jobs',
    // 2 per session at seq 40 and 80: 82% succeeded (ratio 0.15-0.74), 12% skipped, 3% failed, 3% queued or running; 2% dry runs.
    `INSERT INTO compaction_jobs (id, session_id, tenant_id, trigger, status, policy, dry_run, from_seq, to_seq, tokens_before, tokens_after,
       llm_calls, llm_input_tokens, llm_output_tokens, llm_cost_usd, attempts, duration_ms, error, created_at, started_at, finished_at)
     SELECT gen_random_uuid(), s.id, s.tenant_id,
       (CASE WHEN h % 20 = 0 THEN 'manual' WHEN h % 20 = 1 THEN 'ingest' ELSE 'threshold' END)::"CompactionTrigger",
       st::"CompactionStatus", s.policy, h % 50 = 7, 1, 40 * k - 6, before,
       CASE st WHEN 'succeeded' THEN round(before * (0.15 + (h % 60) / 100.0))::int WHEN 'skipped' THEN before - h % 900 END,
       calls, calls * (before / 3), calls * 900, round(calls * (before / 3) * 0.000003 + calls * 900 * 0.000015, 6),
       1, 300 + h % 4000, CASE st WHEN 'failed' THEN 'upstream answered 503 after 3 retries' END,
       s.created_at + (40 * k) * interval '1 minute', s.created_at + (40 * k) * interval '1 minute',
       CASE WHEN st IN ('queued', 'running') THEN NULL ELSE s.created_at + (40 * k) * interval '1 minute' + interval '2 seconds' END
     FROM sessions s
     CROSS JOIN generate_series(1, ${JOBS_PER_SESSION}) k
     CROSS JOIN LATERAL (SELECT abs(hashtext(s.external_id || ':' || k)) AS h) hh
     CROSS JOIN LATERAL (SELECT CASE WHEN h % 100 < 3 THEN 'failed' WHEN h % 100 < 15 THEN 'skipped' WHEN h % 100 < 17 THEN 'queued'
                                     WHEN h % 100 < 18 THEN 'running' ELSE 'succeeded' END AS st,
                                146000 + h % 37000 AS before, CASE WHEN h % 3 = 0 THEN 0 ELSE 1 + h % 2 END AS calls) v
     WHERE s.tenant_id = $1`,
  ],
  [
    'usage_points',
    // An append point per batch plus a marker per applied compaction, inserted in time order so sessions interleave on disk as they do live.
    `INSERT INTO usage_points (session_id, kind, seq, context_tokens, budget, threshold, compaction_job_id, created_at)
     SELECT session_id, kind, seq, context_tokens, 183000, 146400, job_id, at FROM (
       SELECT s.id AS session_id, 'append' AS kind, g AS seq, (g * 1800 + (g * 7919) % 1500) % 150000 AS context_tokens, NULL::uuid AS job_id,
              s.created_at + g * interval '1 minute' AS at
       FROM sessions s CROSS JOIN generate_series(1, ${APPEND_POINTS_PER_SESSION}) g WHERE s.tenant_id = $1
       UNION ALL
       SELECT j.session_id, 'compaction', j.to_seq, j.tokens_after, j.id, j.finished_at
       FROM compaction_jobs j WHERE j.tenant_id = $1 AND j.status = 'succeeded' AND NOT j.dry_run
     ) p ORDER BY at`,
  ],
];

function api(apiUrl, key) {
  const headers = { authorization: `Bearer ${key}` };
  return async (pathAndQuery) => {
    const started = performance.now();
    const res = await fetch(`${apiUrl}${pathAndQuery}`, { headers });
    const text = await res.text();
    const ms = performance.now() - started;
    if (res.status !== 200) throw new Error(`GET ${pathAndQuery}: ${res.status} ${text.slice(0, 500)}`);
    return { ms, body: JSON.parse(text), bytes: Buffer.byteLength(text) };
  };
}

/** Node types and index names of a JSON plan, depth first: "Index Only Scan using sessions_tenant_id_utilization_idx". */
function planSummary(plan) {
  const out = [];
  const walk = (node) => {
    const on = node['Index Name'] ? ` using ${node['Index Name']}` : node['Relation Name'] ? ` on ${node['Relation Name']}` : '';
    if (/Scan/.test(node['Node Type'])) out.push(`${node['Node Type']}${on}`);
    for (const child of node.Plans ?? []) walk(child);
  };
  walk(plan);
  return out;
}

/** `--search-only`: the documented analytics section with its session-search subsection replaced. */
function withSearchSection(root, searchLines) {
  const file = path.join(root, 'docs/benchmarks.md');
  const doc = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const section = doc.match(/<!-- bench:analytics:start -->\n([\s\S]*?)\n<!-- bench:analytics:end -->/)?.[1] ?? '## Usage and analytics';
  return `${section.split('\n### Session search')[0].trimEnd()}\n\n${searchLines.join('\n')}`;
}

async function searchOnly({ db, get, tenantId, databaseUrl, root, log }) {
  const seeded = await seedSearchSessions(db, tenantId);
  log(`seeded ${fmtInt(seeded.rows)} sessions in ${fmt(seeded.ms / 1000)} s`);
  return benchSessionSearch({ db, get, tenantId, databaseUrl, root, log, seeded });
}

export async function run({ apiUrl, key, databaseUrl, root, machine, options = {}, log }) {
  const { ANALYTICS_SQL } = require(path.join(root, 'dist/apps/api/libs/persistence/src/analytics.repository.js'));
  const { default: pg } = await import('pg');
  const db = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  const get = api(apiUrl, key);
  const { rows: tenants } = await db.query(`SELECT tenant_id AS id FROM api_keys WHERE name = 'init' AND revoked_at IS NULL`);
  if (tenants.length !== 1) throw new Error('the benchmark key has no tenant');
  const tenantId = tenants[0].id;
  if (options['search-only']) {
    const lines = await searchOnly({ db, get, tenantId, databaseUrl, root, log });
    await db.end();
    return withSearchSection(root, lines);
  }

  // ------------------------------------------------------------------ seed
  const seedStarted = performance.now();
  const seedTimes = [];
  for (const [table, sql] of SEED) {
    const started = performance.now();
    const res = await db.query(sql, [tenantId]);
    seedTimes.push({ table, rows: res.rowCount, ms: performance.now() - started });
    log(`seeded ${table}: ${fmtInt(res.rowCount)} rows in ${fmt((performance.now() - started) / 1000)} s`);
  }
  // What autovacuum would have done by now on a live database: statistics and the visibility map (index-only scans).
  const vacuumStarted = performance.now();
  for (const table of ['sessions', 'compaction_jobs', 'usage_points', 'messages']) await db.query(`VACUUM (ANALYZE) ${table}`);
  const vacuumMs = performance.now() - vacuumStarted;
  const seedMs = performance.now() - seedStarted;
  log(`seeded in ${fmt(seedMs / 1000)} s (VACUUM ANALYZE ${fmt(vacuumMs / 1000)} s)`);
  const { rows: sizes } = await db.query(
    `SELECT relname AS table, pg_total_relation_size(relid) AS bytes FROM pg_stat_user_tables
     WHERE relname IN ('sessions', 'messages', 'usage_points', 'compaction_jobs')`,
  );
  const sizeOf = Object.fromEntries(sizes.map((s) => [s.table, Number(s.bytes)]));

  // ------------------------------------------------------------------ measure
  const now = Date.now();
  const iso = (ms) => new Date(ms).toISOString();
  const ranges = [
    ['last 24 hours', `?from=${iso(now - DAY_MS)}`],
    ['last 7 days', `?from=${iso(now - 7 * DAY_MS)}`],
    ['last 30 days (default)', ''],
    ['last 90 days', `?from=${iso(now - 90 * DAY_MS)}`],
    ['last 365 days', `?from=${iso(now - 365 * DAY_MS)}`],
  ];
  const results = [];
  for (const [label, query] of ranges) {
    const url = `/v1/analytics/summary${query}`;
    for (let i = 0; i < WARMUP; i += 1) await get(url);
    const samples = [];
    let last;
    for (let i = 0; i < REQUESTS; i += 1) {
      last = await get(url);
      samples.push(last.ms);
    }
    const jobs = last.body.compactions.total;
    results.push({ label: `summary, ${label}`, detail: `${fmtInt(jobs)} compactions, ${last.body.compactionsPerDay.length} days`, samples, bytes: last.bytes });
    log(`summary ${label}: p95 ${fmt(percentile(samples, 95))} ms (${fmtInt(jobs)} compactions)`);
  }
  const r = rng(20261123);
  const sessionId = () => `bench-${String(r.int(1, SESSIONS)).padStart(5, '0')}`;
  for (let i = 0; i < WARMUP; i += 1) await get(`/v1/sessions/${sessionId()}/usage`);
  const usageSamples = [];
  let usageLast;
  for (let i = 0; i < REQUESTS; i += 1) {
    usageLast = await get(`/v1/sessions/${sessionId()}/usage`);
    usageSamples.push(usageLast.ms);
  }
  results.push({ label: 'usage series of a random session', detail: `${usageLast.body.points.length} points`, samples: usageSamples, bytes: usageLast.bytes });
  log(`usage: p95 ${fmt(percentile(usageSamples, 95))} ms`);
  const last = ranges.at(-1)[1];
  const summary365 = (await get(`/v1/analytics/summary${last}`)).body;

  // ------------------------------------------------------------------ explain
  const { rows: oneSession } = await db.query(`SELECT id FROM sessions WHERE tenant_id = $1 AND external_id = 'bench-05000'`, [tenantId]);
  const range30 = [tenantId, new Date(now - 30 * DAY_MS), new Date(now)];
  const range365 = [tenantId, new Date(now - 365 * DAY_MS), new Date(now)];
  const statements = [
    ['usagePoints', [tenantId, oneSession[0].id, '0', 1001]],
    ['jobsPerDay', range30, range365],
    ['ratioStats', range30, range365],
    ['recentFailures', [...range30, 10], [...range365, 10]],
    ['nearBudgetCount', [tenantId, 0.8]],
    ['nearBudgetTop', [tenantId, 0.8, 10]],
  ];
  const explains = [];
  for (const [name, ...paramSets] of statements) {
    const runs = [];
    for (const params of paramSets) {
      // Run twice: the second (cached, as on a live database) is the one reported.
      await db.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${ANALYTICS_SQL[name]}`, params);
      const { rows } = await db.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${ANALYTICS_SQL[name]}`, params);
      const plan = rows[0]['QUERY PLAN'][0];
      runs.push({ scans: planSummary(plan.Plan), ms: plan['Execution Time'], rows: plan.Plan['Actual Rows'] });
    }
    explains.push({ name, runs });
  }
  // Last: it adds 100,000 sessions to the tenant, which the measurements above do not count.
  const searchSeeded = await seedSearchSessions(db, tenantId);
  log(`seeded ${fmtInt(searchSeeded.rows)} search sessions in ${fmt(searchSeeded.ms / 1000)} s`);
  const searchLines = await benchSessionSearch({ db, get, tenantId, databaseUrl, root, log, seeded: searchSeeded });
  await db.end();

  // ------------------------------------------------------------------ report
  const stats = results.map((x) => ({ ...x, p50: percentile(x.samples, 50), p95: percentile(x.samples, 95), p99: percentile(x.samples, 99) }));
  const worst = stats.reduce((a, b) => (b.p95 > a.p95 ? b : a));
  const met = stats.every((x) => x.p95 <= TARGET_P95_MS);
  const seqScan = (x) => x.scans.some((s) => s.startsWith('Seq Scan'));
  const seqScans = explains.filter((e) => e.runs.some(seqScan));
  const seqOnlyWhole = seqScans.every((e) => e.runs.length > 1 && !seqScan(e.runs[0]));
  const slowest = explains.map((e) => ({ name: e.name, ms: Math.max(...e.runs.map((x) => x.ms)) })).reduce((a, b) => (b.ms > a.ms ? b : a));
  const summarySql365 = explains.filter((e) => e.runs.length > 1).reduce((n, e) => n + e.runs[1].ms, 0) + explains.filter((e) => e.name.startsWith('nearBudget')).reduce((n, e) => n + e.runs[0].ms, 0);
  const lines = [
    '## Usage and analytics',
    '',
    `Run ${new Date().toISOString().slice(0, 10)} on ${machine}. The API runs built (\`NODE_ENV=production\`, log level warn) on the real PostgreSQL and Redis; the client is in a separate process on the same machine and sends one request at a time, timed at the client with the response body read.`,
    '',
    `Data, in one tenant (the worst case for tenant-scoped queries), written by \`INSERT … SELECT generate_series\` in ${fmt(seedMs / 1000)} s (VACUUM ANALYZE included, ${fmt(vacuumMs / 1000)} s, as autovacuum would have run): ${seedTimes.map((s) => `${fmtInt(s.rows)} ${s.table}`).join(', ')}. Sessions start over the last ${DAYS} days; each has ${MESSAGES_PER_SESSION} messages, ${JOBS_PER_SESSION} compaction jobs (82% succeeded, 12% skipped, 3% failed, 3% queued or running, 2% dry runs) and a usage point per append plus a marker per applied compaction; ~7% of sessions are at 80% of their budget or more. Usage points are inserted in time order, so a session's points are spread over the table as they are live.`,
    '',
    `| table | rows | size with indexes |`,
    `|---|---:|---:|`,
    ...seedTimes.map((s) => `| ${s.table} | ${fmtInt(s.rows)} | ${fmt(sizeOf[s.table] / 2 ** 20, 0)} MB |`),
    '',
    `${REQUESTS} requests per line after ${WARMUP} warm-up requests. The summary runs ${Object.keys(ANALYTICS_SQL).length - 1} statements side by side on the API's pg pool, plus one BullMQ count of the compaction queue in Redis.`,
    '',
    '| request | answer | response | p50 | p95 | p99 | target p95 ≤ 100 ms |',
    '|---|---|---:|---:|---:|---:|---|',
    ...stats.map((x) => `| ${x.label} | ${x.detail} | ${fmt(x.bytes / 1024)} KB | ${fmt(x.p50)} ms | ${fmt(x.p95)} ms | ${fmt(x.p99)} ms | ${x.p95 <= TARGET_P95_MS ? 'met' : '**missed**'} |`),
    '',
    `The last 365 days cover all ${fmtInt(summary365.compactions.total)} compactions (${fmtInt(summary365.tokensSaved)} tokens saved, median ratio ${fmt(summary365.compressionRatios.median ?? NaN, 3)}), ${fmtInt(summary365.sessionsNearBudget.count)} sessions near their budget.`,
    '',
    'Plans (`EXPLAIN (ANALYZE, BUFFERS)` of the statements the endpoints run, taken from the built persistence lib, second run; 30-day range, then 365-day range where the statement takes one; the times include EXPLAIN ANALYZE\'s per-row timing, so they are higher than the same statements take in a request):',
    '',
    ...explains.map((e) => `- \`${e.name}\`: ${e.runs.map((x) => `${[...new Set(x.scans)].join(' + ')} — ${fmt(x.ms, 2)} ms`).join('; ')}`),
    '',
    `Target: p95 at most ${TARGET_P95_MS} ms with ${fmtInt(SESSIONS)} sessions and ${fmtInt(SESSIONS * MESSAGES_PER_SESSION)} messages — ${met ? 'met' : '**missed**'} (worst: ${worst.label}, p95 ${fmt(worst.p95)} ms). ${
      seqScans.length === 0
        ? 'No statement scans a table sequentially.'
        : seqOnlyWhole
          ? `${seqScans.map((e) => `\`${e.name}\``).join(' and ')} read the index alone on 30 days, and the table sequentially on 365 days: that range holds every job of the table (one tenant owns them all here), and reading the whole table (${fmt(sizeOf.compaction_jobs / 2 ** 20, 0)} MB with its indexes) costs the planner less than the index; with several tenants the index range is the narrower read.`
          : `**Sequential scans** in: ${seqScans.map((e) => e.name).join(', ')}.`
    } What bounds the summary is the aggregation over the range's compaction jobs: its statements take ${fmt(summarySql365, 1)} ms of database time together on 365 days (the slowest, \`${slowest.name}\`, ${fmt(slowest.ms, 1)} ms), growing linearly with the jobs in the range; they run side by side, so the request pays about the slowest one plus HTTP, auth and serialization. The usage series costs one index range scan on \`usage_points (session_id, id)\`, a heap page per point.`,
    '',
    ...searchLines,
  ];
  return lines.join('\n');
}
