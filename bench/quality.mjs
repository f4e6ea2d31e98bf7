// Quality benchmark (issue: quality). Runs coding-agent sessions with known facts through the
// running API and worker, for every preset at several budgets, and scores the context the
// service would send: retention of the facts per category (checks in lib/quality-facts.mjs), the
// compression ratio, hard checks (tool pairs, roles, budget), how full the served context is,
// whether consecutive reads keep the previous read's messages as their prefix (the prompt
// cache), and compactions per 100 turns. In the same run it scores two baselines at the same
// budgets, computed locally from the same messages and token counts: plain truncation and
// observation masking (lib/quality-baselines.mjs).
//
// Sets (`--sets generated,real,paraphrase`, all three by default):
// - generated: sessions of lib/quality-generator.mjs (fixed seed) or, with `--sessions <dir>`,
//   JSON session files in the same format (`--dump <dir>` writes the generated ones);
// - real: every real agent trace of testdata/ (Claude Code, OpenHands, Aider, SWE-agent;
//   lib/quality-real.mjs) with facts mined by rule (lib/quality-mine.mjs); `--no-real` drops it,
//   `--aider N` keeps only the N Aider sessions with the most user turns;
// - paraphrase: the generated sessions with the facts said in independent wording.
//
//   npm run bench -- quality [--sets a,b] [--sessions DIR] [--dump DIR] [--seed N] [--count N]
//                            [--presets a,b] [--concurrency N] [--no-real] [--aider N] [--json FILE]
//                            [--overrides JSON] [--no-write]   (policy overrides for every session; do not write docs)
//   node bench/quality.mjs --dump DIR [--seed N] [--count N]   (writes the sessions, runs nothing)
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { contextText, factProblem, isRetained, isStaleOnly } from './lib/quality-facts.mjs';
import { generateQualitySessions, MODELS } from './lib/quality-generator.mjs';
import { loadRealSessions, turnsOf } from './lib/quality-real.mjs';
import { observationMasking, truncation } from './lib/quality-baselines.mjs';
import { anthropicProblems, budgetProblems, openaiProblems } from './lib/quality-validity.mjs';
import { report } from './lib/quality-report.mjs';
import { rng } from './lib/random.mjs';
import { fmt, fmtInt } from './lib/stats.mjs';

const require = createRequire(import.meta.url);
export const PRESETS = ['balanced', 'factor3', 'watermark', 'two-layer', 'offload-compact', 'checkpoint-aging'];
export const DEFAULT_SEED = 20261123;
export const DEFAULT_COUNT = 10;
/** `summary`: the budget Claude Code's own summary has, the larger of 3% of the session's tokens and 1,500 tokens. */
export const BUDGETS = {
  a: { id: 'a', label: 'window 32,000 (reserve 4,000)', short: '32k window', window: 32_000, reserve: 4_000 },
  b: { id: 'b', label: 'budget = 25% of the session (reserve 1,000)', short: '25% of session', fraction: 0.25, reserve: 1_000 },
  s: { id: 's', label: 'summary size: budget = max(3% of the session, 1,500) (reserve 1,000)', short: 'summary size', fraction: 0.03, min: 1_500, reserve: 1_000 },
};
export const SET_IDS = ['generated', 'real', 'paraphrase'];
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
    /**
     * Waits for the run that covers an append's trigger. A trigger folded into a job that had not started ends at once as
     * `skipped` `superseded-by:<that job>` (docs/reliability.md "Deduplication"): the wait goes on with that job, or the
     * next read would race it.
     */
    async job(jobId) {
      const deadline = Date.now() + JOB_TIMEOUT_MS;
      const seen = new Set([jobId]);
      for (;;) {
        const r = await call('GET', `/v1/jobs/${jobId}`);
        if (r.status !== 200) throw new Error(`GET /v1/jobs/${jobId} → ${r.status}`);
        if (r.json.supersededBy && !seen.has(r.json.supersededBy)) {
          jobId = r.json.supersededBy;
          seen.add(jobId);
          continue;
        }
        if (TERMINAL.has(r.json.status)) return r.json;
        if (Date.now() > deadline) return { ...r.json, status: 'failed', error: `still ${r.json.status} after ${JOB_TIMEOUT_MS / 1000} s (benchmark timeout)` };
        await new Promise((resolve) => setTimeout(resolve, 40));
      }
    },
    context: (id, format) => call('GET', `/v1/sessions/${encodeURIComponent(id)}/context?format=${format}`),
    /** How many events of a type the session has (null if the events could not be read). */
    async countEvents(id, type) {
      let n = 0;
      for (let after = '0'; ;) {
        const r = await call('GET', `/v1/sessions/${encodeURIComponent(id)}/events?type=${type}&limit=500&order=asc&after=${after}`);
        if (r.status !== 200) return null;
        n += r.json.events.length;
        if (!r.json.nextCursor || r.json.events.length === 0) return n;
        after = r.json.nextCursor;
      }
    },
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
    if ((f.category === 'value' || f.category === 'test') && isStaleOnly(f, text)) stale.push(f.id);
  }
  return { retained, stale };
}

/** JSON with object keys sorted, so two reads of the same message compare equal byte for byte. */
export function canonicalJson(value) {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .filter((k) => value[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** A served context as the prefix comparison sees it: the system prompt (if any), then each message, as canonical JSON. */
const prefixUnits = (ctx) => [...(ctx.system !== undefined && ctx.system !== null ? [`system:${canonicalJson(ctx.system)}`] : []), ...(ctx.messages ?? []).map(canonicalJson)];

/**
 * Whether the newer read keeps the older read as its prefix. Every unit of the older read must
 * equal the newer read's unit at the same place, with one allowance for the older read's live
 * tail (its last assistant message and the messages after it): a message there may instead have
 * grown at its end (the next append continued it: content blocks or text added after its own,
 * OpenAI tool calls that were left out while unanswered served once answered). Returns the
 * index of the first unit that breaks the prefix, or -1.
 */
function prefixBreak(olderUnits, olderMessages, newerUnits, newerMessages, offset) {
  let tail = olderMessages.length - 1;
  while (tail > 0 && olderMessages[tail].role !== 'assistant') tail -= 1;
  for (let i = 0; i < olderUnits.length; i += 1) {
    if (olderUnits[i] === newerUnits[i]) continue;
    const live = i - offset >= tail && i >= offset;
    if (!live || !grewAtEnd(olderMessages[i - offset], newerMessages[i - offset])) return i;
  }
  return -1;
}

function grewAtEnd(a, b) {
  if (!a || !b || a.role !== b.role) return false;
  const rest = (m) => canonicalJson({ ...m, content: undefined, tool_calls: undefined });
  if (rest(a) !== rest(b)) return false;
  const listPrefix = (x = [], y = []) => Array.isArray(x) && Array.isArray(y) && y.length >= x.length && x.every((v, k) => canonicalJson(v) === canonicalJson(y[k]));
  // OpenAI: the calls of a message whose results had not arrived yet are served once they have.
  if (!listPrefix(a.tool_calls ?? [], b.tool_calls ?? [])) return false;
  if (typeof a.content === 'string' && typeof b.content === 'string') return b.content.startsWith(a.content);
  if ((a.content === null || a.content === undefined || a.content === '') && (b.content === null || b.content === undefined || b.content === '')) return true;
  return listPrefix(a.content, b.content);
}

// ------------------------------------------------------------------ the benchmark

function selectSets(options) {
  const chosen = options.sets ? String(options.sets).split(',').map((x) => x.trim()).filter(Boolean) : [...SET_IDS];
  for (const id of chosen) if (!SET_IDS.includes(id)) throw new Error(`unknown set ${id}; known: ${SET_IDS.join(', ')}`);
  return chosen.filter((id) => !(id === 'real' && options['no-real']));
}

export async function run({ apiUrl, key, root, machine, log, options = {} }) {
  const { computeBudget, budgetFloor, messageCounter } = require(path.join(root, 'dist/apps/api/libs/compaction/src/index.js'));
  const { resolveModel } = require(path.join(root, 'dist/apps/api/libs/tokens/src/index.js'));
  const seed = Number(options.seed ?? DEFAULT_SEED);
  const count = Number(options.count ?? DEFAULT_COUNT);
  const concurrency = Number(options.concurrency ?? 3);
  const presets = options.presets ? String(options.presets).split(',').map((p) => p.trim()) : PRESETS;
  for (const p of presets) if (!PRESETS.includes(p)) throw new Error(`unknown preset ${p}; known: ${PRESETS.join(', ')}`);
  const setIds = selectSets(options);
  const overrides = options.overrides ? JSON.parse(String(options.overrides)) : undefined;
  if (overrides) log(`policy overrides for every session: ${JSON.stringify(overrides)}`);
  const api = client(apiUrl, key);
  const tag = randomUUID().slice(0, 6);
  const notes = [];

  const hidden = options.sessions ? loadSessionFiles(path.resolve(String(options.sessions))) : null;
  const generated = hidden ?? generateQualitySessions(seed, count);
  if (options.dump && !hidden) {
    dumpSessions(path.resolve(String(options.dump)), generated);
    log(`wrote ${generated.length} sessions to ${options.dump}`);
  }
  const sets = [];
  if (setIds.includes('generated')) {
    sets.push({ id: 'generated', label: hidden ? `session files of \`${options.sessions}\`` : 'generated sessions', sessions: generated, budgets: [BUDGETS.a, BUDGETS.b, BUDGETS.s] });
  }
  let realSkipped = [];
  if (setIds.includes('real')) {
    const aiderLimit = options.aider !== undefined ? Number(options.aider) : Infinity;
    const { sessions, skipped } = loadRealSessions(path.join(root, 'testdata'), { aiderLimit });
    realSkipped = skipped;
    for (const s of skipped) log(`real traces: left out ${s.what} (${s.why})`);
    sets.push({ id: 'real', label: 'real agent traces (testdata/)', sessions, budgets: [BUDGETS.b, BUDGETS.s] });
    if (options.dump) {
      dumpSessions(path.resolve(String(options.dump), 'real'), sessions);
      log(`wrote ${sessions.length} real sessions to ${path.join(String(options.dump), 'real')}`);
    }
  }
  if (setIds.includes('paraphrase')) {
    if (hidden) notes.push('The paraphrase set needs the generator: with `--sessions` it is not run.');
    else {
      const para = generateQualitySessions(seed, count, { wording: 'paraphrase' });
      const names = new Set(generated.map((s) => s.name));
      const same = para.every((s, i) => canonicalJson(s.messages) === canonicalJson(generated[i]?.messages));
      if (same) notes.push('The generator in this checkout ignores `{ wording: "paraphrase" }`: the paraphrase set equals the generated set.');
      const renamed = para.map((s) => (names.has(s.name) ? { ...s, name: `para-${s.name}`, facts: s.facts.map((f) => ({ ...f, id: `para-${f.id}` })) } : s));
      sets.push({ id: 'paraphrase', label: 'generated sessions, paraphrased wording', sessions: renamed, budgets: [BUDGETS.b, BUDGETS.s] });
    }
  }
  if (sets.length === 0) throw new Error('no set to run (see --sets, --no-real)');
  for (const set of sets) {
    const counts = {};
    for (const s of set.sessions) for (const f of s.facts) counts[f.category] = (counts[f.category] ?? 0) + 1;
    log(`${set.id}: ${set.sessions.length} sessions, facts ${Object.entries(counts).map(([c, n]) => `${c} ${n}`).join(', ')}`);
  }
  const all = sets.flatMap((s) => s.sessions);
  const factsBySession = new Map(all.map((s) => [s.name, s.facts]));

  // 1. Probe: each session appended once, uncompacted, for the service's token counts.
  log(`probing ${all.length} sessions for their token counts`);
  const probe = new Map();
  const rejected = [];
  await pool(all, concurrency, async (s, i) => {
    const id = `q-${tag}-probe-${i}`;
    try {
      for (const body of batches(s, i, { contextWindow: 100_000_000, outputReserve: 0, policy: 'watermark' })) await api.append(id, body);
    } catch (error) {
      rejected.push({ session: s.name, error: String(error.message ?? error) });
      log(`REJECTED ${s.name}: ${String(error.message ?? error).slice(0, 300)}`);
      return;
    }
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
    probe.set(s.name, { total, messages, recount, missing, toolTokens, turns: s.turns ?? turnsOf(s) });
  });
  for (const set of sets) set.sessions = set.sessions.filter((s) => probe.has(s.name));
  log(`probed: ${[...probe.values()].reduce((n, p) => n + p.total, 0).toLocaleString('en-US')} tokens in all`);
  const sanity = all.flatMap((s) => probe.get(s.name)?.missing.map((f) => `${s.name}: ${f.id}`) ?? []);
  if (sanity.length) log(`WARNING: facts absent from their own full history: ${sanity.join('; ')}`);

  /** The smallest window whose budget reaches the target and passes the budget floor (a budget under it is a 400). */
  const windows = new Map();
  const windowFor = (budget, s) => {
    if (budget.window) return { window: budget.window, target: null, floored: false };
    const k = `${budget.id}/${s.name}`;
    if (windows.has(k)) return windows.get(k);
    const target = Math.max(budget.min ?? 0, Math.floor((probe.get(s.name)?.total ?? 0) * budget.fraction));
    const ok = (w) => {
      const b = computeBudget({ contextWindow: w, outputReserve: budget.reserve }).budget;
      return b >= target && b >= budgetFloor(w);
    };
    let w = Math.max(1_024, target + budget.reserve);
    let step = 1_024;
    while (!ok(w)) w += step;
    // back off in halving steps to the smallest passing window
    while (step > 1) {
      step = Math.floor(step / 2);
      while (w - step >= 1_024 && ok(w - step)) w -= step;
    }
    const out = { window: w, target, budget: computeBudget({ contextWindow: w, outputReserve: budget.reserve }).budget, floored: budgetFloor(w) > target };
    windows.set(k, out);
    return out;
  };

  // What the floor allows with a 1,000-token reserve (for the report): the least budget at all, and the window of a 1,500-token budget.
  const floorFacts = (() => {
    const least = windowFor({ id: 'least', fraction: 0, reserve: 1_000 }, { name: '(least)' });
    const summary = windowFor({ id: 'min1500', fraction: 0, min: 1_500, reserve: 1_000 }, { name: '(1500)' });
    return { least, summary, summaryFloor: budgetFloor(summary.window) };
  })();

  // 2. Every preset at every budget, sessions in parallel.
  const runs = [];
  const groups = [];
  for (const set of sets) {
    for (const budget of set.budgets) {
      for (const preset of presets) {
        const started = performance.now();
        const results = await pool(set.sessions, concurrency, (s, i) => runSession(api, s, `${set.id}-${i}`, i, preset, budget, windowFor(budget, s).window, tag, probe.get(s.name), overrides));
        const ms = performance.now() - started;
        runs.push(...results.map((r) => ({ ...r, set: set.id, budget: budget.id, method: preset })));
        groups.push({ set: set.id, budget: budget.id, method: preset, ms });
        const kept = results.reduce((n, r) => n + Object.values(r.retained ?? {}).filter(Boolean).length, 0);
        const total = set.sessions.reduce((n, s) => n + s.facts.length, 0);
        log(`${set.id} ${budget.short} ${preset}: retention ${fmt((kept / total) * 100)}%, hard ${results.reduce((n, r) => n + r.problems.length, 0)}, jobs ${results.reduce((n, r) => n + r.jobsRun, 0)} (${results.reduce((n, r) => n + r.failed, 0)} failed), ${fmt(ms / 1000)} s`);
      }
      // Baselines at the same budgets, from the same messages and counts.
      for (const s of set.sessions) {
        const p = probe.get(s.name);
        const { window } = windowFor(budget, s);
        const budgetTokens = computeBudget({ contextWindow: window, outputReserve: budget.reserve }).budget;
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
            window,
            budgetTokens,
            ratio: ctx.tokens / p.total,
            ...(over ? { readError: `over budget: ${fmtInt(ctx.tokens)} tokens for a ${fmtInt(budgetTokens)}-token budget (not sendable; scored 0)` } : {}),
            ...score(s.facts, over ? '' : contextText({ messages: ctx.messages })),
          });
        }
      }
    }
  }

  if (options.json) {
    writeFileSync(
      path.resolve(String(options.json)),
      `${JSON.stringify({ seed, count, presets, sets: sets.map((s) => ({ id: s.id, sessions: s.sessions.map((x) => x.name) })), groups, runs: runs.map(({ retained, ...r }) => ({ ...r, lost: Object.keys(retained ?? {}).filter((k) => !retained[k]) })), facts: Object.fromEntries(sets.flatMap((s) => s.sessions.flatMap((x) => x.facts ?? [])).map((f) => [f.id, f])) }, null, 1)}\n`,
    );
    log(`wrote the raw results to ${options.json}`);
  }
  return report({ sets, runs, groups, presets, factsBySession, probe, machine, seed, count, concurrency, hidden: Boolean(hidden), sanity, all, windowFor, realSkipped, rejected, notes, floorFacts, budgets: BUDGETS, defaults: { seed: DEFAULT_SEED, count: DEFAULT_COUNT } });
}

async function runSession(api, s, key, index, preset, budget, window, tag, probed, overrides) {
  const id = `q-${tag}-${preset}-${budget.id}-${key}`;
  const out = { session: s.name, id, window, turns: probed.turns, jobsRun: 0, succeeded: 0, skipped: 0, failed: 0, compressed: null, problems: [], fallback: null, readError: null, jobErrors: [], fills: [], pairs: 0, prefixKept: 0, breaksWithoutCompaction: 0, breakExample: null, midReadErrors: 0, reads: 0 };
  const started = performance.now();
  let previous = null; // the previous successful read: its prefix units and context version
  let last = null;
  try {
    for (const body of batches(s, index, { contextWindow: window, outputReserve: budget.reserve, policy: overrides ? { preset, overrides } : preset })) {
      const res = await api.append(id, body);
      out.budgetTokens ??= res.usage?.budget;
      if (res.compaction?.jobId) {
        const job = await api.job(res.compaction.jobId);
        out.jobsRun += 1;
        out[job.status] += 1;
        if (job.status === 'failed') out.jobErrors.push(job.error);
      }
      // What the agent would send next: the context after this append (and its compaction).
      const r = await api.context(id, s.format);
      out.reads += 1;
      last = r;
      if (r.status !== 200) {
        out.midReadErrors += 1;
        continue;
      }
      const units = prefixUnits(r.json);
      const offset = units.length - (r.json.messages?.length ?? 0);
      const version = r.json.contextVersion ?? null;
      if (previous) {
        out.pairs += 1;
        const at = previous.offset === offset ? prefixBreak(previous.units, previous.messages, units, r.json.messages ?? [], offset) : 0;
        if (at === -1) out.prefixKept += 1;
        else if (version === previous.version) {
          // No compaction applied between the two reads (same context version), yet the prefix changed.
          out.breaksWithoutCompaction += 1;
          const a = previous.units[at];
          const b = units[at] ?? '';
          let c = 0;
          while (c < a.length && a[c] === b[c]) c += 1;
          out.breakExample ??= { read: out.pairs, unit: at, of: previous.units.length, char: c, before: a.slice(Math.max(0, c - 60), c + 100), after: b.slice(Math.max(0, c - 60), c + 100), fallback: r.json.fallback ?? null };
        }
      }
      previous = { units, version, offset, messages: r.json.messages ?? [] };
      // After the session's first compaction (a context version is in force).
      if (version !== null && r.json.usage?.budget) out.fills.push(r.json.tokens / r.json.usage.budget);
    }
  } catch (error) {
    out.problems.push({ check: 'append', detail: String(error.message ?? error) });
    return out;
  }
  out.compressed = await api.countEvents(id, 'compressed');
  const reads = {};
  for (const format of ['anthropic', 'openai']) {
    const r = format === s.format && last ? last : await api.context(id, format);
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
  out.ratio = native.tokens / probed.total;
  out.checkpoints = native.checkpoints?.length ?? 0;
  // Kept for `--json` (the final context as sent, to audit what was lost); not part of any table.
  out.context = native;
  Object.assign(out, score(s.facts, contextText(native)));
  return out;
}

// `node bench/quality.mjs --dump DIR`: write the generated sessions without running anything.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const usage = 'usage: node bench/quality.mjs --dump <dir> [--seed N] [--count N] [--wording original|paraphrase]   (to run the benchmark: npm run bench -- quality)';
  let values;
  try {
    ({ values } = parseArgs({ options: { dump: { type: 'string' }, seed: { type: 'string' }, count: { type: 'string' }, wording: { type: 'string' } }, strict: true }));
  } catch (error) {
    console.error(`${error.message}\n${usage}`);
    process.exit(1);
  }
  const dir = values.dump;
  if (!dir) {
    console.error(usage);
    process.exit(1);
  }
  const sessions = generateQualitySessions(Number(values.seed || DEFAULT_SEED), Number(values.count || DEFAULT_COUNT), { wording: values.wording || 'original' });
  dumpSessions(path.resolve(dir), sessions);
  console.log(`wrote ${sessions.length} sessions to ${dir}`);
}
