// Quality benchmark (issue: quality). Runs coding-agent sessions with planted facts through the
// running API and worker, for every preset at two budgets, and scores the context the service
// would send: retention of the facts per category (checks in lib/quality-facts.mjs), the
// compression ratio, and hard checks (tool pairs, roles, budget). In the same run it scores two
// baselines at the same budgets, computed locally from the same messages and token counts:
// plain truncation and observation masking (lib/quality-baselines.mjs).
//
// Sessions: generated ones (lib/quality-generator.mjs, fixed seed) or, with `--sessions <dir>`,
// JSON session files in the same format (`--dump <dir>` writes the generated ones), plus the
// real SWE-agent sessions of testdata/ with facts mined by rule (lib/quality-mine.mjs).
//
//   npm run bench -- quality [--sessions DIR] [--dump DIR] [--seed N] [--count N]
//                            [--presets a,b] [--concurrency N] [--no-real] [--json FILE]
//   node bench/quality.mjs --dump DIR [--seed N] [--count N]   (writes the sessions, runs nothing)
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { CATEGORIES, CHECK_RULES, contextText, factProblem, isRetained, isStaleOnly } from './lib/quality-facts.mjs';
import { generateQualitySessions, MODELS } from './lib/quality-generator.mjs';
import { realQualitySessions } from './lib/quality-mine.mjs';
import { MASK_PLACEHOLDER, observationMasking, truncation } from './lib/quality-baselines.mjs';
import { anthropicProblems, budgetProblems, openaiProblems } from './lib/quality-validity.mjs';
import { rng } from './lib/random.mjs';
import { fmt, fmtInt, median } from './lib/stats.mjs';

const require = createRequire(import.meta.url);
const PRESETS = ['balanced', 'factor3', 'watermark', 'two-layer', 'offload-compact', 'checkpoint-aging'];
const DEFAULT_SEED = 20261123;
const DEFAULT_COUNT = 10;
const BUDGETS = {
  a: { id: 'a', label: 'window 32,000 (reserve 4,000)', short: '32k window', window: 32_000, reserve: 4_000 },
  b: { id: 'b', label: 'budget = 25% of the session (reserve 1,000)', short: '25% of session', fraction: 0.25, reserve: 1_000 },
  c: { id: 'c', label: 'window 8,000 (reserve 1,000)', short: '8k window', window: 8_000, reserve: 1_000 },
};
const TERMINAL = new Set(['succeeded', 'skipped', 'failed']);
const JOB_TIMEOUT_MS = 120_000;

// ------------------------------------------------------------------ workload

function loadSessionFiles(dir) {
  const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
  if (files.length === 0) throw new Error(`--sessions ${dir}: no .json session files`);
  return files.map((f) => {
    const s = JSON.parse(readFileSync(path.join(dir, f), 'utf8'));
    const where = `${path.join(dir, f)}`;
    if (!Array.isArray(s.messages) || s.messages.length === 0) throw new Error(`${where}: \`messages\` must be a non-empty array`);
    if (!['anthropic', 'openai'].includes(s.format)) throw new Error(`${where}: \`format\` must be "anthropic" or "openai"`);
    if (!Array.isArray(s.facts)) throw new Error(`${where}: \`facts\` must be an array`);
    s.facts.forEach((fact, i) => {
      const problem = factProblem(fact);
      if (problem) throw new Error(`${where}: facts[${i}]: ${problem}`);
    });
    const name = String(s.name ?? f.replace(/\.json$/, ''));
    return { ...s, name, model: s.model ?? MODELS[s.format], facts: s.facts.map((x, i) => ({ ...x, id: x.id ?? `${name}/${i + 1}` })) };
  });
}

export function dumpSessions(dir, sessions) {
  mkdirSync(dir, { recursive: true });
  for (const s of sessions) writeFileSync(path.join(dir, `${s.name}.json`), `${JSON.stringify(s, null, 1)}\n`);
}

// ------------------------------------------------------------------ API client

function client(apiUrl, key) {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const call = async (method, url, body) => {
    const res = await fetch(`${apiUrl}${url}`, { method, headers, ...(body ? { body: JSON.stringify(body) } : {}) });
    const text = await res.text();
    let json;
    try {
      json = JSON.parse(text);
    } catch {
      json = { raw: text.slice(0, 300) };
    }
    return { status: res.status, json };
  };
  return {
    call,
    async append(id, body) {
      const r = await call('POST', `/v1/sessions/${encodeURIComponent(id)}/messages`, body);
      if (r.status !== 201) throw new Error(`POST /v1/sessions/${id}/messages → ${r.status} ${JSON.stringify(r.json).slice(0, 400)}`);
      return r.json;
    },
    async history(id) {
      const out = [];
      for (let after = 0; ;) {
        const r = await call('GET', `/v1/sessions/${encodeURIComponent(id)}/messages?after=${after}&limit=1000`);
        if (r.status !== 200) throw new Error(`GET history ${id} → ${r.status}`);
        out.push(...r.json.messages);
        if (r.json.nextAfter === null || r.json.nextAfter === undefined) return out;
        after = r.json.nextAfter;
      }
    },
    async job(jobId) {
      const deadline = Date.now() + JOB_TIMEOUT_MS;
      for (;;) {
        const r = await call('GET', `/v1/jobs/${jobId}`);
        if (r.status !== 200) throw new Error(`GET /v1/jobs/${jobId} → ${r.status}`);
        if (TERMINAL.has(r.json.status)) return r.json;
        if (Date.now() > deadline) return { ...r.json, status: 'failed', error: `still ${r.json.status} after ${JOB_TIMEOUT_MS / 1000} s (benchmark timeout)` };
        await new Promise((resolve) => setTimeout(resolve, 40));
      }
    },
    context: (id, format) => call('GET', `/v1/sessions/${encodeURIComponent(id)}/context?format=${format}`),
  };
}

/** Requests of a session in batches of 6–10 messages (seeded); config and system prompt go with the first. */
function batches(session, seed, config) {
  const r = rng(seed);
  const out = [];
  for (let i = 0; i < session.messages.length; ) {
    const size = r.int(6, 10);
    out.push({
      format: session.format,
      messages: session.messages.slice(i, i + size),
      ...(i === 0 ? { model: session.model, ...config, ...(session.system ? { system: session.system } : {}) } : {}),
    });
    i += size;
  }
  return out;
}

async function pool(items, concurrency, fn) {
  const results = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await fn(items[i], i);
      }
    }),
  );
  return results;
}

// ------------------------------------------------------------------ scoring

function score(facts, text) {
  const retained = {};
  const stale = [];
  for (const f of facts) {
    retained[f.id] = isRetained(f, text);
    if (f.category === 'value' && isStaleOnly(f, text)) stale.push(f.id);
  }
  return { retained, stale };
}

function aggregate(runs, factsBySession) {
  const cats = {};
  let kept = 0;
  let total = 0;
  let stale = 0;
  for (const run of runs) {
    for (const f of factsBySession.get(run.session)) {
      const c = (cats[f.category] ??= { kept: 0, total: 0 });
      c.total += 1;
      total += 1;
      if (run.retained?.[f.id]) {
        c.kept += 1;
        kept += 1;
      }
    }
    stale += run.stale?.length ?? 0;
  }
  const sumOf = (k) => runs.reduce((n, r) => n + (r[k] ?? 0), 0);
  return {
    cats,
    overall: total ? kept / total : NaN,
    kept,
    total,
    stale,
    ratio: median(runs.map((r) => r.ratio).filter(Number.isFinite)),
    hard: runs.reduce((n, r) => n + (r.problems?.length ?? 0), 0),
    jobs: { run: sumOf('jobsRun'), succeeded: sumOf('succeeded'), skipped: sumOf('skipped'), failed: sumOf('failed') },
    fallback: runs.filter((r) => r.fallback).length,
    readErrors: runs.filter((r) => r.readError).length,
  };
}

// ------------------------------------------------------------------ the benchmark

export async function run({ apiUrl, key, root, machine, log, options = {} }) {
  const { computeBudget, messageCounter } = require(path.join(root, 'dist/apps/api/libs/compaction/src/index.js'));
  const { resolveModel } = require(path.join(root, 'dist/apps/api/libs/tokens/src/index.js'));
  const seed = Number(options.seed ?? DEFAULT_SEED);
  const count = Number(options.count ?? DEFAULT_COUNT);
  const concurrency = Number(options.concurrency ?? 3);
  const presets = options.presets ? String(options.presets).split(',').map((p) => p.trim()) : PRESETS;
  for (const p of presets) if (!PRESETS.includes(p)) throw new Error(`unknown preset ${p}; known: ${PRESETS.join(', ')}`);
  const api = client(apiUrl, key);
  const tag = randomUUID().slice(0, 6);

  const hidden = options.sessions ? loadSessionFiles(path.resolve(String(options.sessions))) : null;
  const generated = hidden ?? generateQualitySessions(seed, count);
  if (options.dump && !hidden) {
    dumpSessions(path.resolve(String(options.dump)), generated);
    log(`wrote ${generated.length} sessions to ${options.dump}`);
  }
  const real = options['no-real'] ? [] : realQualitySessions(path.join(root, 'testdata'));
  const sets = [
    { id: 'main', label: hidden ? `session files of \`${options.sessions}\`` : 'generated sessions', sessions: generated, budgets: [BUDGETS.a, BUDGETS.b] },
    ...(real.length ? [{ id: 'real', label: 'real SWE-agent sessions (testdata/)', sessions: real, budgets: [BUDGETS.b, BUDGETS.c] }] : []),
  ];
  const all = sets.flatMap((s) => s.sessions);
  const factsBySession = new Map(all.map((s) => [s.name, s.facts]));

  // 1. Probe: each session appended once, uncompacted, for the service's token counts.
  log(`probing ${all.length} sessions for their token counts`);
  const probe = new Map();
  await pool(all, concurrency, async (s, i) => {
    const id = `q-${tag}-probe-${i}`;
    for (const body of batches(s, i, { contextWindow: 100_000_000, outputReserve: 0, policy: 'watermark' })) await api.append(id, body);
    const history = await api.history(id);
    const total = history.reduce((n, m) => n + m.tokens, 0);
    const { countMessage } = messageCounter(resolveModel(s.model).spec);
    const messages = history.map((m) => ({ role: m.role, blocks: m.blocks, tokens: m.tokens }));
    const recount = (masked, original) => original.tokens - countMessage(original) + countMessage(masked);
    // Sanity: the full history retains every fact (else the check or the session file is wrong).
    const fullText = contextText({ messages });
    const missing = s.facts.filter((f) => !isRetained(f, fullText));
    let toolTokens = 0;
    for (const m of history) {
      const results = m.blocks.filter((b) => b.type === 'tool_result');
      if (m.role !== 'user' && m.role !== 'tool') continue;
      if (results.length === 0 && m.role !== 'tool') continue;
      toolTokens += m.tokens;
    }
    probe.set(s.name, { total, messages, recount, missing, toolTokens });
    log(`probed ${s.name}: ${history.length} messages, ${fmtInt(total)} tokens`);
  });
  const sanity = all.flatMap((s) => probe.get(s.name).missing.map((f) => `${s.name}: ${f.id}`));
  if (sanity.length) log(`WARNING: facts absent from their own full history: ${sanity.join('; ')}`);

  const windowFor = (budget, s) => {
    if (budget.window) return budget.window;
    const target = Math.floor(probe.get(s.name).total * budget.fraction);
    let w = Math.max(1_024, target + budget.reserve);
    while (computeBudget({ contextWindow: w, outputReserve: budget.reserve }).budget < target) w += Math.max(1, Math.ceil((target - computeBudget({ contextWindow: w, outputReserve: budget.reserve }).budget) / 2));
    return w;
  };

  // 2. Every preset at every budget, sessions in parallel.
  const runs = [];
  const groups = [];
  for (const set of sets) {
    for (const budget of set.budgets) {
      for (const preset of presets) {
        const started = performance.now();
        const results = await pool(set.sessions, concurrency, (s, i) => runSession(api, s, `${set.id}-${i}`, i, preset, budget, windowFor(budget, s), tag, probe.get(s.name).total));
        const ms = performance.now() - started;
        runs.push(...results.map((r) => ({ ...r, set: set.id, budget: budget.id, method: preset })));
        groups.push({ set: set.id, budget: budget.id, method: preset, ms });
        const agg = aggregate(results, factsBySession);
        log(`${set.id} ${budget.short} ${preset}: retention ${fmt(agg.overall * 100)}%, ratio ${fmt(agg.ratio, 3)}, hard ${agg.hard}, jobs ${agg.jobs.run} (${agg.jobs.failed} failed), ${fmt(ms / 1000)} s`);
      }
      // Baselines at the same budgets, from the same messages and counts.
      for (const s of set.sessions) {
        const p = probe.get(s.name);
        const budgetTokens = computeBudget({ contextWindow: windowFor(budget, s), outputReserve: budget.reserve }).budget;
        const served = runs.find((r) => r.set === set.id && r.budget === budget.id && r.session === s.name && Number.isFinite(r.budgetTokens));
        if (served && served.budgetTokens !== budgetTokens) log(`WARNING: ${s.name}: the service's budget is ${served.budgetTokens}, the baselines use ${budgetTokens}`);
        const t = truncation(p.messages, budgetTokens);
        const m = observationMasking(p.messages, budgetTokens, p.recount);
        for (const [method, ctx] of [['truncation', t], ['masking', m]]) {
          // Over the budget (the system prompt or the newest turn alone does not fit) is not sendable: it scores 0, as the service's 422 does.
          const over = ctx.tokens > budgetTokens;
          runs.push({
            set: set.id,
            budget: budget.id,
            method,
            session: s.name,
            window: windowFor(budget, s),
            ratio: ctx.tokens / p.total,
            ...(over ? { readError: `over budget: ${fmtInt(ctx.tokens)} tokens for a ${fmtInt(budgetTokens)}-token budget (not sendable; scored 0)` } : {}),
            ...score(s.facts, over ? '' : contextText({ messages: ctx.messages })),
          });
        }
      }
    }
  }

  if (options.json) {
    writeFileSync(path.resolve(String(options.json)), `${JSON.stringify({ seed, count, presets, groups, runs: runs.map(({ retained, ...r }) => ({ ...r, lost: Object.keys(retained ?? {}).filter((k) => !retained[k]) })) }, null, 1)}\n`);
    log(`wrote the raw results to ${options.json}`);
  }
  return report({ sets, runs, groups, presets, factsBySession, probe, machine, seed, count, concurrency, hidden: Boolean(hidden), sanity, all });
}

async function runSession(api, s, key, index, preset, budget, window, tag, total) {
  const id = `q-${tag}-${preset}-${budget.id}-${key}`;
  const out = { session: s.name, id, window, jobsRun: 0, succeeded: 0, skipped: 0, failed: 0, problems: [], fallback: null, readError: null, jobErrors: [] };
  const started = performance.now();
  try {
    for (const body of batches(s, index, { contextWindow: window, outputReserve: budget.reserve, policy: preset })) {
      const res = await api.append(id, body);
      out.budgetTokens ??= res.usage?.budget;
      if (res.compaction?.jobId) {
        const job = await api.job(res.compaction.jobId);
        out.jobsRun += 1;
        out[job.status] += 1;
        if (job.status === 'failed') out.jobErrors.push(job.error);
      }
    }
  } catch (error) {
    out.problems.push({ check: 'append', detail: String(error.message ?? error) });
    return out;
  }
  const reads = {};
  for (const format of ['anthropic', 'openai']) {
    const r = await api.context(id, format);
    if (r.status !== 200) {
      out.readError = `${format}: ${r.status} ${r.json?.error?.code ?? ''} ${r.json?.error?.message ?? ''}`.trim();
      if (r.status !== 422) out.problems.push({ check: `read ${format}`, detail: out.readError });
      continue;
    }
    reads[format] = r.json;
    out.fallback ??= r.json.fallback ?? null;
    for (const p of budgetProblems(r.json)) out.problems.push({ check: `budget (${format})`, detail: p });
  }
  if (reads.anthropic) for (const p of anthropicProblems(reads.anthropic.messages)) out.problems.push({ check: 'anthropic tool pairs/roles', detail: p });
  if (reads.openai) for (const p of openaiProblems(reads.openai.messages)) out.problems.push({ check: 'openai tool pairs/roles', detail: p });
  const native = reads[s.format];
  out.ms = performance.now() - started;
  if (!native) {
    out.retained = {};
    out.stale = [];
    return out;
  }
  out.tokens = native.tokens;
  out.ratio = native.tokens / total;
  out.checkpoints = native.checkpoints?.length ?? 0;
  Object.assign(out, score(s.facts, contextText(native)));
  return out;
}

// ------------------------------------------------------------------ report

const pct = (x) => (Number.isFinite(x) ? `${fmt(x * 100, 0)}%` : '—');
const verdict = (ok) => (ok ? 'met' : '**missed**');

function report({ sets, runs, groups, presets, factsBySession, probe, machine, seed, concurrency, hidden, sanity, all }) {
  const lines = ['## Quality: fact retention under compaction', ''];
  const sum = (xs) => xs.reduce((n, x) => n + x, 0);
  const main = sets.find((s) => s.id === 'main');
  const totals = main.sessions.map((s) => probe.get(s.name).total);
  const toolShare = sum(main.sessions.map((s) => probe.get(s.name).toolTokens)) / sum(totals);
  lines.push(
    `Run ${new Date().toISOString().slice(0, 10)} on ${machine}. The built API and one worker (\`WORKER_CONCURRENCY\` default, summarizer \`local\`) run on the real PostgreSQL and Redis; each session is appended in batches of 6–10 messages, and whenever an append schedules a compaction the client waits for its job before the next append, then reads the context in both provider shapes. ${presets.length} presets and the two baselines are measured in the same run.`,
    '',
    hidden
      ? `Sessions: ${main.sessions.length} ${main.label}, ${fmtInt(Math.min(...totals))}–${fmtInt(Math.max(...totals))} tokens each (median ${fmtInt(median(totals))}); tool output is ${fmt(toolShare * 100, 0)}% of their tokens.`
      : `Sessions: ${main.sessions.length} generated coding-agent sessions (seed ${seed}; Python, TypeScript and Go projects; ${main.sessions.filter((s) => s.format === 'anthropic').length} Anthropic-shaped, ${main.sessions.filter((s) => s.format === 'openai').length} OpenAI-shaped; parallel tool calls in about a fifth of the turns), ${fmtInt(Math.min(...totals))}–${fmtInt(Math.max(...totals))} tokens each as the service counts them (median ${fmtInt(median(totals))}); tool output (file reads, test runs with tracebacks, greps, shell output) is ${fmt(toolShare * 100, 0)}% of their tokens. Facts are planted in varied wording with seeded random names, mostly in the first 60% of each session (pending tasks at 78–92%, latest values of changing settings at 45–80%), between ordinary steps.`,
    '',
  );
  const catCounts = (set) => {
    const c = {};
    for (const s of set.sessions) for (const f of s.facts) c[f.category] = (c[f.category] ?? 0) + 1;
    return c;
  };
  lines.push('How a fact counts as retained (every check reads all text of the context as sent: system prompt, goal block, checkpoint summaries, messages, tool calls and their arguments, tool results, masked or offloaded placeholders; lowercased, whitespace collapsed):', '');
  const usedCats = new Set(all.flatMap((s) => s.facts.map((f) => f.category)));
  for (const c of CATEGORIES) if (usedCats.has(c.id)) lines.push(`- **${c.label}**: ${CHECK_RULES[c.id]}.`);
  lines.push(
    '',
    `Compression ratio: context tokens as the service reports them (or the baseline's kept tokens) ÷ the session's total tokens, median over sessions. Hard checks, per session and context read: Anthropic shape (user first, roles alternate, every \`tool_result\` answers a \`tool_use\` of the message right before and every \`tool_use\` is answered in the next), OpenAI shape (tool messages follow the assistant message that called them, every call answered), budget (\`tokens\` ≤ \`usage.budget\`). Baselines, from the session's full history and the per-message token counts the service stored: **truncation** keeps the system prompt and the newest messages that fit, never starting on a tool result whose call was cut; **masking** replaces tool outputs by \`${MASK_PLACEHOLDER}\`, oldest first, until the context fits, then truncates if still over. A baseline context still over the budget (the system prompt, or the system prompt and the newest message, do not fit) could not be sent: it scores 0 for that session, as a \`422 budget_too_small\` read does for the service.`,
    '',
  );
  if (sanity.length) lines.push(`**Warning**: ${sanity.length} fact(s) are not found even in their session's full history (${sanity.slice(0, 5).join('; ')}); their check or session file is wrong.`, '');
  else lines.push('Sanity: every fact is found by its check in its session\'s full history (100% before compaction).', '');

  const row = (set, budgetId, method) => {
    const rs = runs.filter((r) => r.set === set.id && r.budget === budgetId && r.method === method);
    return { rs, agg: aggregate(rs, factsBySession) };
  };
  for (const set of sets) {
    const counts = catCounts(set);
    const cats = CATEGORIES.filter((c) => counts[c.id]);
    lines.push(`### ${set.id === 'main' ? (hidden ? 'Session files' : 'Generated sessions') : 'Real SWE-agent sessions'}`, '');
    if (set.id === 'real') {
      const rt = set.sessions.map((s) => probe.get(s.name).total);
      lines.push(`${set.sessions.length} sessions of \`testdata/swe-agent-trajectories\`, ${fmtInt(Math.min(...rt))}–${fmtInt(Math.max(...rt))} tokens each; a 32,000 window would not compact them, so they run at 25% of their tokens and at an 8,000 window. Facts are mined by rule (quality-mine.mjs): identifiers of the task statement that the agent reuses, the files it acts on, exception lines of tool outputs.`, '');
    }
    lines.push(`Facts: ${cats.map((c) => `${counts[c.id]} ${c.label}`).join(', ')} (${sum(Object.values(counts))} in all).`, '');
    const budgetNotes = set.budgets.map((b) => {
      const rs = runs.filter((r) => r.set === set.id && r.budget === b.id && r.window);
      const ws = rs.map((r) => r.window);
      const bs = rs.map((r) => r.budgetTokens).filter(Number.isFinite);
      return `${b.label}: context window ${fmtInt(Math.min(...ws))}${Math.max(...ws) !== Math.min(...ws) ? `–${fmtInt(Math.max(...ws))}` : ''}, budget ${bs.length ? `${fmtInt(Math.min(...bs))}${Math.max(...bs) !== Math.min(...bs) ? `–${fmtInt(Math.max(...bs))}` : ''}` : 'n/a'} tokens`;
    });
    lines.push(`Budgets: ${budgetNotes.join('; ')}.`, '');
    lines.push(
      `| budget | method | ${cats.map((c) => c.label).join(' | ')} | overall | context / session | hard-check failures | compactions run / ok / skipped / failed | fallback reads | 422 reads | wall |`,
      `|---|---|${cats.map(() => '---:').join('|')}|---:|---:|---:|---:|---:|---:|---:|`,
    );
    for (const budgetId of set.budgets.map((b) => b.id)) {
      for (const method of [...presets, 'truncation', 'masking']) {
        const { agg } = row(set, budgetId, method);
        const g = groups.find((x) => x.set === set.id && x.budget === budgetId && x.method === method);
        const baseline = !g;
        const cells = cats.map((c) => {
          const v = agg.cats[c.id];
          const text = v ? pct(v.kept / v.total) : '—';
          return c.id === 'value' && agg.stale ? `${text} (${agg.stale} stale)` : text;
        });
        lines.push(
          `| ${BUDGETS[budgetId].short} | ${baseline ? `*${method}*` : method === 'balanced' ? '**balanced**' : method} | ${cells.join(' | ')} | ${method === 'balanced' ? `**${pct(agg.overall)}**` : pct(agg.overall)} | ${fmt(agg.ratio, 3)} | ${baseline ? '—' : agg.hard} | ${baseline ? '—' : `${agg.jobs.run} / ${agg.jobs.succeeded} / ${agg.jobs.skipped} / ${agg.jobs.failed}`} | ${baseline ? '—' : agg.fallback} | ${baseline ? '—' : agg.readErrors} | ${baseline ? '—' : `${fmt(g.ms / 1000)} s`} |`,
        );
      }
    }
    lines.push('');
  }
  lines.push(`"stale": changing values for which the context states only an outdated value. Wall time: all sessions of the row, ${concurrency} at a time, appends, compaction jobs and reads included.`, '');

  // Hard-check failures, grouped by method and kind of problem (numbers and ids stripped), with one example each.
  const failing = runs.filter((r) => r.problems?.length);
  if (failing.length) {
    const groupsOf = new Map();
    for (const r of failing) {
      for (const p of r.problems) {
        const kind = `${p.check}: ${p.detail.replace(/^message \d+: /, '').replace(/\b(toolu|call)_\w+/g, '<id>').replace(/\d+/g, 'N')}`;
        const k = `${r.method}\u0000${kind}`;
        const g = groupsOf.get(k) ?? { method: r.method, kind, problems: 0, runs: new Set(), example: null };
        g.problems += 1;
        g.runs.add(`${r.session}/${r.budget}`);
        g.example ??= `\`${r.session}\` at ${BUDGETS[r.budget].short} (session id \`${r.id}\`): ${p.detail}`;
        groupsOf.set(k, g);
      }
    }
    lines.push('Hard-check failures, by method and kind (session runs affected, problems, first example):', '');
    for (const g of groupsOf.values()) lines.push(`- ${g.method}, ${g.kind} — ${g.runs.size} session run(s), ${g.problems} problem(s); e.g. ${g.example}`);
    lines.push('');
  }
  const jobFailures = runs.filter((r) => r.jobErrors?.length);
  if (jobFailures.length) {
    lines.push('Failed compaction jobs (first error per session run):', '');
    for (const r of jobFailures.slice(0, 12)) lines.push(`- \`${r.session}\` ${r.method} ${BUDGETS[r.budget].short}: ${r.jobErrors.length} failed — ${String(r.jobErrors[0]).slice(0, 200)}`);
    lines.push('');
  }
  const readErrors = runs.filter((r) => r.readError);
  if (readErrors.length) {
    lines.push('Context reads that failed (the session scores 0 retention there):', '');
    for (const r of readErrors.slice(0, 12)) lines.push(`- \`${r.session}\` ${r.method} ${BUDGETS[r.budget].short} (window ${fmtInt(r.window)}): ${r.readError}`);
    lines.push('');
  }

  // Targets for balanced.
  if (presets.includes('balanced')) {
    const at = (setId, budgetId, method) => row(sets.find((s) => s.id === setId), budgetId, method).agg;
    const mainA = at('main', 'a', 'balanced');
    const mainB = at('main', 'b', 'balanced');
    const limits = (agg) => {
      const low = CATEGORIES.filter((c) => agg.cats[c.id] && agg.cats[c.id].kept < agg.cats[c.id].total).map((c) => `${c.label} ${pct(agg.cats[c.id].kept / agg.cats[c.id].total)}`);
      return low.length ? `; limited by ${low.join(', ')}` : '';
    };
    const strict = ['constraint', 'locked'].map((c) => {
      const kept = mainA.cats[c]?.kept + mainB.cats[c]?.kept;
      const total = mainA.cats[c]?.total + mainB.cats[c]?.total;
      return { c, kept, total };
    });
    const hardAll = runs.filter((r) => r.method === 'balanced').reduce((n, r) => n + (r.problems?.length ?? 0), 0);
    const versus = sets.flatMap((set) =>
      set.budgets.map((b) => {
        const ours = at(set.id, b.id, 'balanced').overall;
        const t = at(set.id, b.id, 'truncation').overall;
        const m = at(set.id, b.id, 'masking').overall;
        return { label: `${set.id === 'main' ? (hidden ? 'files' : 'generated') : 'real'} ${b.short}`, ok: ours > t && ours > m, ours, t, m };
      }),
    );
    const strictLabel = { constraint: 'constraints', locked: 'locked decisions' };
    const use = (budgetId) => median(runs.filter((r) => r.set === 'main' && r.budget === budgetId && r.method === 'balanced' && r.budgetTokens).map((r) => r.tokens / r.budgetTokens));
    lines.push(
      '### Targets for `balanced` with the `local` summarizer',
      '',
      `- At least 90% retention overall at the 32k window — ${verdict(mainA.overall >= 0.9)} (${pct(mainA.overall)}, ${mainA.kept}/${mainA.total}${mainA.overall >= 0.9 ? '' : limits(mainA)}; the final context fills ${pct(use('a'))} of its budget, median).`,
      `- At least 90% retention overall at 25% of the session — ${verdict(mainB.overall >= 0.9)} (${pct(mainB.overall)}, ${mainB.kept}/${mainB.total}${mainB.overall >= 0.9 ? '' : limits(mainB)}; the final context fills ${pct(use('b'))} of its budget, median).`,
      `- 100% of constraints and locked decisions (both budgets) — ${verdict(strict.every((x) => x.kept === x.total))} (${strict.map((x) => `${strictLabel[x.c]} ${x.kept}/${x.total}`).join(', ')}).`,
      `- 0 hard-check failures — ${verdict(hardAll === 0)} (${hardAll}, all sessions and budgets).`,
      `- Above both baselines at every budget — ${verdict(versus.every((v) => v.ok))} (${versus.map((v) => `${v.label}: ${pct(v.ours)} vs truncation ${pct(v.t)}, masking ${pct(v.m)}`).join('; ')}).`,
      '',
    );
    const lost = runs
      .filter((r) => r.method === 'balanced' && r.retained)
      .flatMap((r) => factsBySession.get(r.session).filter((f) => !r.retained[f.id]).map((f) => ({ r, f })));
    if (lost.length) {
      const byCat = CATEGORIES.map((c) => ({ c, items: lost.filter((x) => x.f.category === c.id) })).filter((x) => x.items.length);
      lines.push(`Facts \`balanced\` lost: ${lost.length} (${byCat.map((x) => `${x.items.length} ${x.c.label}`).join(', ')}), over all budgets and sessions. Examples (where the fact was planted, how far into the session):`, '');
      for (const { items } of byCat) {
        const picks = [items[0], items.find((x) => x.r.budget !== items[0].r.budget && x.r.session !== items[0].r.session)].filter(Boolean);
        for (const { r, f } of picks) {
          lines.push(`- ${f.category}, ${BUDGETS[r.budget].short}, \`${r.session}\`${f.where ? `, ${f.where.replace('_', ' ')}` : ''}${Number.isFinite(f.at) ? ` at ${fmt(f.at * 100, 0)}%` : ''}: ${String(f.text ?? JSON.stringify(f.check)).replace(/\s+/g, ' ').slice(0, 140)}`);
        }
      }
      lines.push('');
    }
  }

  lines.push(
    '### Measuring other sessions',
    '',
    `\`npm run bench -- quality --dump <dir>\` (or, without starting anything, \`node bench/quality.mjs --dump <dir>\`) writes the generated sessions as JSON files \`{ name, format, model, system?, messages, facts: [{ id, category, check: { all?: [terms], near?: [name, value, maxChars] }, stale?, where?, at?, text? }] }\`. \`npm run bench -- quality --sessions <dir>\` measures every \`*.json\` file of \`<dir>\` in that format instead of the generated set, with the same budgets, presets, baselines, checks and report (categories: ${CATEGORIES.map((c) => `\`${c.id}\``).join(', ')}). Other options: \`--seed N\`, \`--count N\` (generated sessions; default ${DEFAULT_SEED}, ${DEFAULT_COUNT}), \`--presets a,b\`, \`--concurrency N\` (sessions at a time, default 3), \`--no-real\`, \`--json FILE\` (raw per-session results).`,
  );
  return lines.join('\n');
}

// `node bench/quality.mjs --dump DIR`: write the generated sessions without running anything.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const value = (name, fallback) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 && args[i + 1] ? args[i + 1] : fallback;
  };
  const dir = value('dump');
  if (!dir) {
    console.error('usage: node bench/quality.mjs --dump <dir> [--seed N] [--count N] [--wording original|paraphrase]   (to run the benchmark: npm run bench -- quality)');
    process.exit(1);
  }
  const sessions = generateQualitySessions(Number(value('seed', DEFAULT_SEED)), Number(value('count', DEFAULT_COUNT)), { wording: value('wording', 'original') });
  dumpSessions(path.resolve(dir), sessions);
  console.log(`wrote ${sessions.length} sessions to ${dir}`);
}
