// History benchmark (issue #18 item 2): `messages` unpartitioned against partitioned by
// HASH(session_id), at 10M messages, in the same run. Two databases of this benchmark's own: one
// migrated with every migration but the partitioning one (the table as it was), one fully
// migrated; each gets an API process of its own and the same rows, generated inside PostgreSQL
// (20,000 sessions of skewed sizes, a few very long; an agent loop's tool calls and outputs, ~1.5 KB
// stored per message, its rows interleaved on disk as live appends interleave).
// Then, alternating between the two databases sample by sample:
// - append: one message appended through HTTP to one of the five longest sessions;
// - context read, cold: GET /v1/sessions/:id/context of a session the API has not served yet;
// - history page: GET /v1/sessions/:id/messages?after=…&limit=100 at a random offset;
// - retention: the retention job's own statement (SessionRepository.deleteIdle, from the built
//   persistence lib) on sessions idle past the retention, in batches of the worker's default size.
//
//   npm run bench -- history                    (10,000,000 messages)
//   npm run bench -- history --count 1000000    (a smaller run)
import { readdirSync, readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fmt, fmtBytes, fmtInt, median, percentile } from './lib/stats.mjs';
import { rng } from './lib/random.mjs';
import { dropDatabase, recreateDatabase } from './lib/database.mjs';

const require = createRequire(import.meta.url);
const PARTITION_MIGRATION = '20261128033000_messages_hash_partitions';
const DEFAULT_MESSAGES = 10_000_000;
const SESSIONS = 20_000;
/** The very long sessions (appends and history pages go to them), and their share of the messages. */
const LONG_SESSIONS = 5;
const LONG_SHARE = 0.05;
/** Sessions idle past the retention (every IDLE_EVERY-th one), deleted by the retention measurement. */
const IDLE_EVERY = 20;
const RETENTION_BATCH = 500;
const TEXTS = 4096;
const APPENDS = 200;
const CONTEXT_READS = 60;
const PAGES = 200;
const WARMUP = 10;
const MODEL = 'claude-sonnet-4-5';

const WORDS = ['the', 'failing', 'test', 'expects', 'a', 'rounded', 'value', 'but', 'we', 'return', 'raw', 'one', 'so', 'I', 'will',
  'check', 'where', 'it', 'is', 'computed', 'and', 'fix', 'edge', 'case', 'in', 'serialization', 'next', 'schema', 'field'];
const IDENTS = ['session', 'budget', 'tokens', 'message', 'context', 'parser', 'result', 'config', 'handler', 'request', 'payload', 'cursor'];
const FILES = ['src/fields.py', 'src/schema.py', 'src/utils.py', 'tests/test_fields.py', 'src/api/routes.ts', 'lib/parser.rb', 'cmd/server/main.go'];

/** Tool outputs (file reads of 10-50 lines) and assistant lines (25-75 words). */
function texts(seed) {
  const r = rng(seed);
  const sentence = (n) => Array.from({ length: n }, () => r.pick(WORDS)).join(' ') + '.';
  const code = (n) => `${n}:${'    '.repeat(r.int(0, 3))}${r.pick(IDENTS)} = self.${r.pick(IDENTS)}.get("${r.pick(IDENTS)}", ${r.int(0, 999)})`;
  const outputs = [];
  const thoughts = [];
  for (let i = 0; i < TEXTS; i += 1) {
    const start = r.int(1, 400);
    const lines = [`[File: /testbed/${r.pick(FILES)} (${start + 300} lines total)]`];
    for (let j = 0; j < r.int(10, 50); j += 1) lines.push(code(start + j));
    outputs.push(lines.join('\n'));
    thoughts.push(`${sentence(r.int(20, 60))} ${sentence(r.int(5, 15))}`);
  }
  return { outputs, thoughts };
}

/** Messages per session: LONG_SESSIONS very long ones, the rest a power law; even sizes (each session ends on an assistant tool call). */
function sessionSizes(total) {
  const long = Math.floor((total * LONG_SHARE) / LONG_SESSIONS / 2) * 2;
  const rest = total - long * LONG_SESSIONS;
  const weights = Array.from({ length: SESSIONS - LONG_SESSIONS }, (_, j) => (j + 50) ** -0.9);
  const sum = weights.reduce((a, b) => a + b, 0);
  const sizes = weights.map((w) => Math.max(2, Math.round((w / sum) * rest / 2) * 2));
  // Spread the big ones over the ids (a stable shuffle), so ids and sizes are not correlated.
  const r = rng(7);
  for (let i = sizes.length - 1; i > 0; i -= 1) {
    const j = r.int(0, i);
    [sizes[i], sizes[j]] = [sizes[j], sizes[i]];
  }
  return [...Array(LONG_SESSIONS).fill(long), ...sizes];
}

const externalId = (i) => `hist-${String(i).padStart(5, '0')}`;
const toolId = (seq) => `toolu_${String(seq).padStart(7, '0')}`;

/**
 * The SQL of every migration, in order; unpartitioned, without the partitioning one, and without the statements of
 * later migrations that name a partition (`"messages_p3"`: the plain table has none), so both databases get the
 * same later changes to the table otherwise (its compression, say).
 */
function migrationScripts(root, partitioned) {
  const dir = path.join(root, 'prisma/migrations');
  const names = readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
  return names
    .filter((name) => partitioned || name !== PARTITION_MIGRATION)
    .map((name) => {
      const sql = readFileSync(path.join(dir, name, 'migration.sql'), 'utf8');
      if (partitioned || name < PARTITION_MIGRATION) return sql;
      return sql
        .split('\n')
        .filter((line) => !/"messages_p\d+"/.test(line))
        .join('\n');
    });
}

async function createDatabase(pg, baseUrl, name, scripts) {
  const url = await recreateDatabase(baseUrl, name);
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  for (const sql of scripts) await db.query(sql);
  await db.end();
  return url;
}

async function startApi(root, env, port) {
  const child = spawn(process.execPath, [path.join(root, 'dist/apps/api/apps/api/src/main.js')], { env: { ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'] });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the API on port ${port} exited with code ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/health/ready`)).ok) return { child, url };
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  child.kill('SIGTERM');
  throw new Error(`the API on port ${port} did not become ready within 60 s`);
}

/**
 * Seeds one database: the message templates come from three real appends (so blocks, meta and raw are what the
 * API stores), the texts from a table of TEXTS variants, and the rows in seq-major order (every session's
 * message 1, then every session's message 2...), interleaved on disk as concurrent agents' appends are.
 */
async function seed(db, { apiUrl, key, sizes, text, log, label }) {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const tpl = `tpl-${label}`;
  const post = async (body) => {
    const res = await fetch(`${apiUrl}/v1/sessions/${tpl}/messages`, { method: 'POST', headers, body: JSON.stringify(body) });
    if (res.status !== 201) throw new Error(`template append: ${res.status} ${(await res.text()).slice(0, 300)}`);
  };
  await post({
    format: 'anthropic',
    model: MODEL,
    contextWindow: 50_000_000,
    messages: [
      { role: 'user', content: '@@TEXT@@' },
      { role: 'assistant', content: [{ type: 'text', text: '@@TEXT@@' }, { type: 'tool_use', id: 'toolu_ZZIDZZ', name: 'read_file', input: { path: 'src/fields.py' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_ZZIDZZ', content: '@@TEXT@@' }] },
    ],
  });
  const { rows: [{ tenant_id: tenantId }] } = await db.query(`SELECT tenant_id FROM sessions WHERE external_id = $1`, [tpl]);
  await db.query(`CREATE TABLE bench_texts (i int PRIMARY KEY, output text NOT NULL, thought text NOT NULL)`);
  await db.query(`INSERT INTO bench_texts SELECT i - 1, o, t FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS x(o, t, i)`, [text.outputs, text.thoughts]);
  await db.query(`CREATE TABLE bench_sizes (i int PRIMARY KEY, n int NOT NULL, id uuid NOT NULL DEFAULT gen_random_uuid())`);
  await db.query(`INSERT INTO bench_sizes (i, n) SELECT i, n FROM unnest($1::int[]) WITH ORDINALITY AS x(n, i)`, [sizes]);
  await db.query(`CREATE INDEX ON bench_sizes (n)`);
  let t0 = performance.now();
  // Sessions idle for 60 days (every IDLE_EVERY-th), the others active in the last day.
  await db.query(
    `INSERT INTO sessions (id, tenant_id, external_id, model, context_window, output_reserve, policy, last_seq, last_role, open_tool_use_ids,
       history_tokens, created_at, updated_at, last_activity_at)
     SELECT b.id, $1, 'hist-' || lpad(b.i::text, 5, '0'), $2, 50000000, 8192, '{"preset":"balanced","overrides":{}}', b.n, 'assistant',
       ARRAY['toolu_' || lpad(b.n::text, 7, '0')], b.n::bigint * 330, at - interval '1 day', at, at
     FROM bench_sizes b CROSS JOIN LATERAL (SELECT CASE WHEN b.i % ${IDLE_EVERY} = 0 THEN now() - interval '60 days' ELSE now() - interval '1 hour' END AS at) a`,
    [tenantId, MODEL],
  );
  log(`${label}: ${fmtInt(sizes.length)} sessions in ${fmt((performance.now() - t0) / 1000)} s`);
  // Message 1 is the user's task, then assistant tool calls (even seqs) and their results (odd seqs).
  t0 = performance.now();
  const { rowCount } = await db.query(
    `WITH tpl AS (
       SELECT max(blocks::text) FILTER (WHERE seq = 1) AS b1, max(raw::text) FILTER (WHERE seq = 1) AS r1, max(meta::text) FILTER (WHERE seq = 1) AS m1,
              max(blocks::text) FILTER (WHERE seq = 2) AS b2, max(raw::text) FILTER (WHERE seq = 2) AS r2, max(meta::text) FILTER (WHERE seq = 2) AS m2,
              max(blocks::text) FILTER (WHERE seq = 3) AS b3, max(raw::text) FILTER (WHERE seq = 3) AS r3, max(meta::text) FILTER (WHERE seq = 3) AS m3
       FROM messages WHERE session_id = (SELECT id FROM sessions WHERE external_id = $1))
     INSERT INTO messages (session_id, seq, role, blocks, meta, raw, format, tokens, tool_use_ids, created_at)
     SELECT s.id, g, (CASE WHEN g % 2 = 0 THEN 'assistant' ELSE 'user' END)::"MessageRole",
       replace(replace(CASE WHEN g = 1 THEN tpl.b1 WHEN g % 2 = 0 THEN tpl.b2 ELSE tpl.b3 END, '"@@TEXT@@"', to_json(x.t)::text), 'ZZIDZZ', x.id)::json,
       CASE WHEN g = 1 THEN tpl.m1 WHEN g % 2 = 0 THEN tpl.m2 ELSE tpl.m3 END::json,
       replace(replace(CASE WHEN g = 1 THEN tpl.r1 WHEN g % 2 = 0 THEN tpl.r2 ELSE tpl.r3 END, '"@@TEXT@@"', to_json(x.t)::text), 'ZZIDZZ', x.id)::json,
       'anthropic', 20 + length(x.t) / 4, CASE WHEN g % 2 = 0 THEN ARRAY['toolu_' || x.id] ELSE ARRAY[]::text[] END,
       now() - interval '1 day' + g * interval '1 second'
     FROM tpl, generate_series(1, (SELECT max(n) FROM bench_sizes)) g
     CROSS JOIN LATERAL (SELECT b.id, b.i FROM bench_sizes b WHERE b.n >= g) s
     CROSS JOIN LATERAL (SELECT CASE WHEN g % 2 = 0 THEN tx.thought ELSE tx.output END AS t,
                                lpad((CASE WHEN g % 2 = 0 THEN g ELSE g - 1 END)::text, 7, '0') AS id
                         FROM bench_texts tx WHERE tx.i = abs(hashint4(s.i * 7919 + g)) % ${TEXTS}) x`,
    [tpl],
  );
  const genSeconds = (performance.now() - t0) / 1000;
  log(`${label}: ${fmtInt(rowCount)} messages in ${fmt(genSeconds)} s`);
  await db.query(`DELETE FROM sessions WHERE external_id = $1`, [tpl]);
  await db.query(`DROP TABLE bench_texts, bench_sizes`);
  t0 = performance.now();
  await db.query('VACUUM ANALYZE messages');
  await db.query('VACUUM ANALYZE sessions');
  log(`${label}: VACUUM ANALYZE in ${fmt((performance.now() - t0) / 1000)} s`);
  const { rows: [size] } = await db.query(`SELECT pg_total_relation_size('messages')::float8 AS total, (SELECT count(*) FROM pg_inherits WHERE inhparent = 'messages'::regclass)::int AS parts`);
  // A partitioned table has no storage of its own: its size is its partitions'.
  const { rows: [parts] } = await db.query(`SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0)::float8 AS total FROM pg_inherits WHERE inhparent = 'messages'::regclass`);
  const { rows: [raw] } = await db.query(`SELECT avg(octet_length(raw::text))::float8 AS bytes FROM messages TABLESAMPLE SYSTEM (1)`);
  return { tenantId, rows: rowCount, genSeconds, bytes: size.total + parts.total, partitions: size.parts, rawBytes: raw.bytes };
}

function summary(values) {
  return { p50: median(values), p95: percentile(values, 95), n: values.length };
}

export async function run({ key, databaseUrl, root, machine, options = {}, serviceEnv, port, log }) {
  const total = Number(options.count ?? DEFAULT_MESSAGES);
  if (!Number.isInteger(total) || total < SESSIONS * 4) throw new Error(`--count must be an integer of at least ${SESSIONS * 4}`);
  const { default: pg } = await import('pg');
  const { SessionRepository } = require(path.join(root, 'dist/apps/api/libs/persistence/src/session.repository.js'));
  const { PgPoolService } = require(path.join(root, 'dist/apps/api/libs/persistence/src/pg-pool.service.js'));
  const stamp = `${process.pid}`;
  const variants = [
    { label: 'unpartitioned', name: `compactor_bench_hist_flat_${stamp}`, partitioned: false, port: port + 30 },
    { label: 'partitioned', name: `compactor_bench_hist_part_${stamp}`, partitioned: true, port: port + 31 },
  ];
  const started = [];
  const pools = [];
  try {
    for (const v of variants) {
      v.url = await createDatabase(pg, databaseUrl, v.name, migrationScripts(root, v.partitioned));
      v.api = await startApi(root, { ...serviceEnv, DATABASE_URL: v.url, COMPACTOR_INIT_API_KEY: key, QUEUE_PREFIX: `${serviceEnv.QUEUE_PREFIX}-${v.label}` }, v.port);
      started.push(v.api.child);
      v.db = new pg.Pool({ connectionString: v.url, max: 2 });
      v.db.on('error', () => undefined);
      pools.push(v.db);
    }
    const sizes = sessionSizes(total);
    const text = texts(18);
    log(`seeding ${fmtInt(sizes.reduce((a, b) => a + b, 0))} messages over ${fmtInt(SESSIONS)} sessions into both databases at once`);
    const seeded = await Promise.all(variants.map((v) => seed(v.db, { apiUrl: v.api.url, key, sizes, text, log, label: v.label })));
    variants.forEach((v, i) => Object.assign(v, seeded[i]));

    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const timed = async (url, init, expect) => {
      const t0 = performance.now();
      const res = await fetch(url, { ...init, headers });
      const body = await res.text();
      const ms = performance.now() - t0;
      if (res.status !== expect) throw new Error(`${init?.method ?? 'GET'} ${url}: ${res.status} ${body.slice(0, 300)}`);
      return { ms, bytes: Buffer.byteLength(body) };
    };
    /** Runs `sample(v, i)` for i < n, alternating which database goes first; returns the times per variant. */
    const interleaved = async (n, sample) => {
      for (const v of variants) v.times = [];
      for (let i = 0; i < n + WARMUP; i += 1) {
        const order = i % 2 === 0 ? variants : [...variants].reverse();
        for (const v of order) {
          const ms = await sample(v, i);
          if (i >= WARMUP) v.times.push(ms);
        }
      }
      return variants.map((v) => summary(v.times));
    };
    const r = rng(42);
    const longIds = Array.from({ length: LONG_SESSIONS }, (_, i) => i + 1);
    const results = {};

    // Appends to the long sessions: a tool result for the open call, then the next call, round robin.
    const next = new Map(longIds.map((i) => [i, sizes[i - 1]]));
    const appendPlan = Array.from({ length: APPENDS + WARMUP }, (_, k) => {
      const i = longIds[k % LONG_SESSIONS];
      const seq = next.get(i) + 1;
      next.set(i, seq);
      const message =
        seq % 2 === 1
          ? { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolId(seq - 1), content: text.outputs[k % TEXTS] }] }
          : { role: 'assistant', content: [{ type: 'text', text: text.thoughts[k % TEXTS] }, { type: 'tool_use', id: toolId(seq), name: 'read_file', input: { path: FILES[k % FILES.length] } }] };
      return { i, body: JSON.stringify({ format: 'anthropic', messages: [message] }) };
    });
    log('appends');
    results.append = await interleaved(APPENDS, async (v, k) => (await timed(`${v.api.url}/v1/sessions/${externalId(appendPlan[k].i)}/messages`, { method: 'POST', body: appendPlan[k].body }, 201)).ms);

    // Cold context reads: sessions of a few hundred messages (the median session is much shorter), never served before, none idle.
    const readable = sizes.map((n, j) => ({ i: j + 1, n })).filter((s) => s.i > LONG_SESSIONS && s.i % IDLE_EVERY !== 0);
    const inRange = readable.filter((s) => s.n >= 200 && s.n <= 1000);
    // A small --count has few such sessions: the largest ones then.
    const candidates = inRange.length >= CONTEXT_READS + WARMUP ? inRange : readable.sort((a, b) => b.n - a.n).slice(0, CONTEXT_READS + WARMUP);
    const contextPlan = Array.from({ length: CONTEXT_READS + WARMUP }, (_, k) => candidates[(k * 7919) % candidates.length]);
    const contextBytes = [];
    log(`cold context reads (sessions of ${fmtInt(Math.min(...contextPlan.map((s) => s.n)))}-${fmtInt(Math.max(...contextPlan.map((s) => s.n)))} messages)`);
    results.context = await interleaved(CONTEXT_READS, async (v, k) => {
      const res = await timed(`${v.api.url}/v1/sessions/${externalId(contextPlan[k].i)}/context?format=anthropic`, {}, 200);
      contextBytes.push(res.bytes);
      return res.ms;
    });

    // History pages at random offsets of the long sessions.
    const pagePlan = Array.from({ length: PAGES + WARMUP }, (_, k) => {
      const i = longIds[k % LONG_SESSIONS];
      return { i, after: r.int(0, sizes[i - 1] - 100) };
    });
    log('history pages');
    results.page = await interleaved(PAGES, async (v, k) => (await timed(`${v.api.url}/v1/sessions/${externalId(pagePlan[k].i)}/messages?after=${pagePlan[k].after}&limit=100`, {}, 200)).ms);

    // Retention: the job's statement, batch by batch, alternating databases, until no idle session is left.
    log('retention');
    const repos = variants.map((v) => {
      const pool = new PgPoolService(v.url);
      pools.push({ end: () => pool.onModuleDestroy() });
      return new SessionRepository(null, pool);
    });
    const idleBefore = new Date(Date.now() - 30 * 24 * 3600 * 1000);
    const retention = variants.map(() => ({ sessions: 0, messages: 0, ms: 0, batches: [] }));
    for (let round = 0, busy = true; busy; round += 1) {
      busy = false;
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const j of order) {
        const t0 = performance.now();
        const batch = await repos[j].deleteIdle(variants[j].tenantId, idleBefore, RETENTION_BATCH, { retentionDays: 30 });
        const ms = performance.now() - t0;
        if (batch.deleted.length === 0) continue;
        busy = true;
        const messages = batch.deleted.reduce((sum, s) => sum + s.lastSeq, 0);
        Object.assign(retention[j], { sessions: retention[j].sessions + batch.deleted.length, messages: retention[j].messages + messages, ms: retention[j].ms + ms });
        retention[j].batches.push(ms);
      }
    }

    const [flat, part] = variants;
    const ratio = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${fmt(a / b, 2)}×` : 'n/a');
    const row = (name, key2) => {
      const [a, b] = results[key2];
      return `| ${name} | ${fmt(a.p50)} | ${fmt(b.p50)} | ${ratio(b.p50, a.p50)} | ${fmt(a.p95)} | ${fmt(b.p95)} | ${ratio(b.p95, a.p95)} | ${a.n} |`;
    };
    const rate = (x, unit) => (x.ms > 0 ? fmtInt(x[unit] / (x.ms / 1000)) : 'n/a');
    const longN = sizes[0];
    const sorted = [...sizes].sort((a, b) => a - b);
    const lines = [
      '## History: `messages` unpartitioned and partitioned by HASH(session_id)',
      '',
      `Run on ${machine}, PostgreSQL ${(await flat.db.query('SHOW server_version')).rows[0].server_version}, ${new Date().toISOString().slice(0, 10)}; ` +
        `load average at the end ${(await import('node:os')).loadavg().map((x) => fmt(x)).join(' / ')} (the machine is shared: read ratios, not absolutes). ` +
        `\`npm run bench -- history${total !== DEFAULT_MESSAGES ? ` --count ${total}` : ''}\`.`,
      '',
      `Two databases, each with ${fmtInt(flat.rows)} messages over ${fmtInt(SESSIONS)} sessions, generated in PostgreSQL: ` +
        `${LONG_SESSIONS} sessions of ${fmtInt(longN)} messages, the others a power law (median ${fmtInt(sorted[Math.floor(sorted.length / 2)])}, ` +
        `p99 ${fmtInt(sorted[Math.floor(sorted.length * 0.99)])}); an agent loop's shape (a task, then tool calls and their outputs, ${fmtInt(flat.rawBytes)} bytes of provider JSON per message on average), ` +
        'rows interleaved on disk across sessions as concurrent appends are. *Unpartitioned*: every migration but ' +
        `\`${PARTITION_MIGRATION}\` (the table as it was; later migrations' statements on partitions left out); *partitioned*: every migration (${flat.partitions === 0 ? part.partitions : '?'} hash partitions). ` +
        'Each has an API process of its own (built, production mode); samples alternate between the two, ' +
        `first one then the other, after ${WARMUP} warm-up samples each.`,
      '',
      '| | unpartitioned | partitioned |',
      '|---|---|---|',
      `| messages | ${fmtInt(flat.rows)} | ${fmtInt(part.rows)} |`,
      `| size of \`messages\` (heap, TOAST, indexes) | ${fmtBytes(flat.bytes)} (${fmtInt(flat.bytes / flat.rows)} B per message) | ${fmtBytes(part.bytes)} (${fmtInt(part.bytes / part.rows)} B per message) |`,
      `| generation (one INSERT … SELECT, both at once) | ${fmt(flat.genSeconds)} s | ${fmt(part.genSeconds)} s |`,
      '',
      '| ms | p50 unpartitioned | p50 partitioned | ratio | p95 unpartitioned | p95 partitioned | ratio | samples each |',
      '|---|---|---|---|---|---|---|---|',
      row(`append, one message through HTTP to a session of ~${fmtInt(longN)} messages`, 'append'),
      row(`context read, cold (first read of a session of ${fmtInt(Math.min(...contextPlan.map((s) => s.n)))}-${fmtInt(Math.max(...contextPlan.map((s) => s.n)))} messages, ~${fmtBytes(median(contextBytes))} body)`, 'context'),
      row(`history page (\`?after=…&limit=100\`, random offset in a session of ~${fmtInt(longN)})`, 'page'),
      '',
      `Retention: the job's own statement (\`SessionRepository.deleteIdle\`, batches of ${RETENTION_BATCH} sessions, alternating databases), ` +
        `deleting every ${IDLE_EVERY}th session (idle for 60 days) with its messages by cascade:`,
      '',
      '| | unpartitioned | partitioned | ratio (partitioned / unpartitioned) |',
      '|---|---|---|---|',
      `| deleted | ${fmtInt(retention[0].sessions)} sessions, ${fmtInt(retention[0].messages)} messages | ${fmtInt(retention[1].sessions)} sessions, ${fmtInt(retention[1].messages)} messages | |`,
      `| time | ${fmt(retention[0].ms / 1000)} s (batch p50 ${fmt(median(retention[0].batches) / 1000, 2)} s) | ${fmt(retention[1].ms / 1000)} s (batch p50 ${fmt(median(retention[1].batches) / 1000, 2)} s) | ${ratio(retention[1].ms, retention[0].ms)} |`,
      `| sessions/s | ${rate(retention[0], 'sessions')} | ${rate(retention[1], 'sessions')} | ${ratio(retention[1].sessions / retention[1].ms, retention[0].sessions / retention[0].ms)} |`,
      `| messages/s | ${rate(retention[0], 'messages')} | ${rate(retention[1], 'messages')} | ${ratio(retention[1].messages / retention[1].ms, retention[0].messages / retention[0].ms)} |`,
    ];
    return lines.join('\n');
  } finally {
    for (const child of started) if (child.exitCode === null) child.kill('SIGTERM');
    await Promise.all(started.map((c) => (c.exitCode === null && c.signalCode === null ? once(c, 'exit') : undefined)));
    await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
    for (const v of variants) await dropDatabase(databaseUrl, v.name).catch((error) => log(`could not drop ${v.name}: ${error.message}`));
  }
}
