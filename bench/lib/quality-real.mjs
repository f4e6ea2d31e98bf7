// Loaders for the real agent sessions of testdata/ (copied byte for byte from the team's shared
// data; testdata/README.md says what each folder holds). Each loader turns one trace into the
// quality benchmark's session-file format `{ name, format, model, system?, messages, facts }`,
// in the provider shape the REST API accepts, and says what it left out and why: nothing is
// skipped silently (`skipped` lists every trace, session or line kind not turned into messages).
//
// - Claude Code `.jsonl`: the main chain only (`isSidechain: true` lines are a Task subagent's
//   own conversation, `summary` lines are titles); the chain is rebuilt by `parentUuid` from
//   the last main-chain line; the lines of one API response (same `message.id`) are one
//   assistant message; consecutive user lines (a slash command and its expanded prompt, the
//   tool results of one response) are one user message. Anthropic shape, `tool_use` and
//   `tool_result` blocks as recorded, so every call stays paired with its result.
// - OpenHands events (eval `output.jsonl`, GUI-mode bare array): the `system` action is the
//   system message; actions with `tool_call_metadata` become one assistant message per LLM
//   response (its `content` and `tool_calls` as the model wrote them); their observations
//   become `tool` messages; user/agent `message` actions become user/assistant messages; an
//   `error` observation with no tool call (the model's call was rejected) is a user message;
//   `finish` is assistant text (it has no observation to pair with). OpenAI shape.
// - OpenHands resolver (older schema, no tool-call ids): the agent wrote its commands in text
//   (CodeAct's `<execute_bash>` / `<execute_ipython>` tags, as its instruction asks); each
//   action is assistant text (thought + tagged command), each observation the next user message.
// - Aider `chat-history.md`: split at `# aider chat started at` headers; `#### ` lines are user
//   text, `> ` lines are aider's console (not sent as conversation; left out), all other lines
//   assistant text; consecutive blocks of one role are one message. Sessions with at least
//   MIN_AIDER_TURNS user turns are kept (or the largest ones if fewer qualify). Anthropic shape
//   for Claude models, OpenAI shape otherwise (the `Models:` console line names the model).
// - SWE-agent `.traj` (both folders): `history` as recorded (OpenAI shape; the API reads the
//   `tool_call_ids` list of its tool messages, and keeps `thought`/`action`/`agent` as extras).
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { mineSessionFacts } from './quality-mine.mjs';

export const MIN_AIDER_TURNS = 10;
const COUNT_MODEL = { anthropic: 'claude-sonnet-4-5', openai: 'gpt-4o' };

const sorted = (dir, ext) => (existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(ext)).sort() : []);

// ------------------------------------------------------------------ Claude Code

function claudeCode(file, skipped) {
  const name = `claude-code-${path.basename(file, '.jsonl').slice(0, 8)}`;
  const lines = readFileSync(file, 'utf8').split('\n').filter((l) => l.trim());
  const rows = [];
  lines.forEach((l, i) => {
    try {
      rows.push(JSON.parse(l));
    } catch {
      skipped.push({ what: `${name} line ${i + 1}`, why: 'not JSON' });
    }
  });
  const kinds = { summary: 0, sidechain: 0, other: 0, offChain: 0 };
  const main = [];
  for (const r of rows) {
    if (r.type === 'summary') kinds.summary += 1;
    else if (r.isSidechain) kinds.sidechain += 1;
    else if ((r.type === 'user' || r.type === 'assistant') && r.message) main.push(r);
    else kinds.other += 1;
  }
  // The chain: from the last main line back by parentUuid (lines of abandoned branches are not on it).
  const byUuid = new Map(main.map((r) => [r.uuid, r]));
  const chain = [];
  for (let r = main[main.length - 1]; r; r = r.parentUuid ? byUuid.get(r.parentUuid) : undefined) chain.push(r);
  chain.reverse();
  kinds.offChain = main.length - chain.length;
  if (kinds.summary) skipped.push({ what: `${name}: ${kinds.summary} summary line(s)`, why: 'a title, not a message' });
  if (kinds.sidechain) skipped.push({ what: `${name}: ${kinds.sidechain} sidechain line(s)`, why: "a Task subagent's own conversation (its result reaches the main chain as the Task tool_result)" });
  if (kinds.other) skipped.push({ what: `${name}: ${kinds.other} line(s) of other types`, why: 'not a user or assistant message' });
  if (kinds.offChain) skipped.push({ what: `${name}: ${kinds.offChain} main line(s) off the chain`, why: 'not an ancestor of the last line (an abandoned branch)' });

  const messages = [];
  let model;
  let lastId = null;
  let acrossResponses = 0;
  for (const r of chain) {
    const role = r.message.role ?? r.type;
    const content = typeof r.message.content === 'string' ? [{ type: 'text', text: r.message.content }] : r.message.content.map((b) => ({ ...b }));
    if (role === 'assistant') model ??= r.message.model;
    const prev = messages[messages.length - 1];
    // One API response is split over lines sharing message.id; a user turn over consecutive user lines.
    if (prev && prev.role === role) {
      if (role === 'assistant' && r.message.id !== lastId) acrossResponses += 1;
      prev.content.push(...content);
    } else messages.push({ role, content });
    lastId = role === 'assistant' ? r.message.id : null;
  }
  if (acrossResponses) skipped.push({ what: `${name}: ${acrossResponses} assistant response(s) with no user line before them`, why: 'merged into the assistant message before (Anthropic roles alternate)' });
  return { name, source: 'claude-code-viewer-demo', agent: 'Claude Code', format: 'anthropic', model: model ?? COUNT_MODEL.anthropic, messages };
}

// ------------------------------------------------------------------ OpenHands

/** Events with `id`/`source` (eval output and GUI mode). */
function openHandsEvents(name, events, model, skipped) {
  const messages = [];
  const ignored = new Map();
  const ignore = (kind, why) => ignored.set(kind, { n: (ignored.get(kind)?.n ?? 0) + 1, why });
  const answered = new Set();
  let open = null; // the assistant message of the current LLM response
  for (const e of events) {
    const meta = e.tool_call_metadata;
    if (e.action === 'system') {
      messages.push({ role: 'system', content: e.args?.content ?? e.message });
      open = null;
    } else if (e.action === 'message') {
      const text = e.args?.content ?? e.message ?? '';
      messages.push({ role: e.source === 'user' ? 'user' : 'assistant', content: text });
      open = null;
    } else if (e.action === 'finish') {
      const response = meta?.model_response?.choices?.[0]?.message;
      const parts = [response?.content, e.args?.final_thought].filter((t) => typeof t === 'string' && t.trim());
      messages.push({ role: 'assistant', content: [...new Set(parts)].join('\n\n') || e.message });
      open = null;
    } else if (e.action && meta) {
      const responseId = meta.model_response?.id;
      const response = meta.model_response?.choices?.[0]?.message ?? {};
      if (!open || open.responseId !== responseId) {
        const calls = (response.tool_calls ?? []).map((c) => ({ id: c.id, type: 'function', function: { name: c.function?.name, arguments: c.function?.arguments ?? '{}' } }));
        open = { responseId, message: { role: 'assistant', content: response.content ?? '', tool_calls: calls } };
        messages.push(open.message);
      }
      if (!open.message.tool_calls.some((c) => c.id === meta.tool_call_id)) {
        open.message.tool_calls.push({ id: meta.tool_call_id, type: 'function', function: { name: meta.function_name, arguments: JSON.stringify(e.args ?? {}) } });
      }
    } else if (e.observation && meta) {
      if (answered.has(meta.tool_call_id)) {
        ignore(`second observation of one call`, 'a call is answered once');
        continue;
      }
      answered.add(meta.tool_call_id);
      messages.push({ role: 'tool', tool_call_id: meta.tool_call_id, content: String(e.content ?? '') });
    } else if (e.observation === 'error') {
      messages.push({ role: 'user', content: String(e.content ?? e.message ?? '') });
      open = null;
    } else if (e.action === 'recall' || e.observation === 'recall') ignore('recall', 'workspace and microagent info for the agent framework, not sent as a message');
    else if (e.observation === 'agent_state_changed' || e.action === 'change_agent_state') ignore('agent state', 'GUI bookkeeping, not conversation');
    else if (e.observation === 'null') ignore('null observation', 'no content');
    else ignore(e.action ?? e.observation ?? 'unknown', 'no conversation content');
  }
  for (const [kind, { n, why }] of ignored) skipped.push({ what: `${name}: ${n} ${kind} event(s)`, why });
  // Every call answered: an unanswered one (none seen in these files) is reported and dropped.
  for (const m of messages) {
    if (!m.tool_calls) continue;
    const unanswered = m.tool_calls.filter((c) => !answered.has(c.id));
    if (unanswered.length) skipped.push({ what: `${name}: tool call(s) ${unanswered.map((c) => c.function.name).join(', ')}`, why: 'no observation answers them' });
    m.tool_calls = m.tool_calls.filter((c) => answered.has(c.id));
    if (m.tool_calls.length === 0) delete m.tool_calls;
  }
  return { name, format: 'openai', model, messages };
}

function openHandsResolver(name, row, skipped) {
  const messages = [];
  let other = 0;
  for (const e of row.history) {
    if (e.action === 'message') messages.push({ role: 'user', content: e.content });
    else if (e.action === 'run') messages.push({ role: 'assistant', content: `${e.thought ?? ''}\n<execute_bash>\n${e.command}\n</execute_bash>`.trim() });
    else if (e.action === 'run_ipython') messages.push({ role: 'assistant', content: `${e.thought ?? ''}\n<execute_ipython>\n${e.code}\n</execute_ipython>`.trim() });
    else if (e.action === 'finish') messages.push({ role: 'assistant', content: e.thought ?? '' });
    else if (e.observation) messages.push({ role: 'user', content: String(e.content ?? '') });
    else other += 1;
  }
  if (other) skipped.push({ what: `${name}: ${other} event(s)`, why: 'neither message, run, run_ipython, finish nor observation' });
  // The resolver file records no model: counted as gpt-4o.
  return { name, format: 'openai', model: COUNT_MODEL.openai, messages, textCommands: true };
}

function openHands(dir, skipped) {
  const out = [];
  const evalFile = path.join(dir, 'multi_swe_bench/output.jsonl');
  if (existsSync(evalFile)) {
    for (const line of readFileSync(evalFile, 'utf8').split('\n').filter((l) => l.trim())) {
      const row = JSON.parse(line);
      const model = row.metadata?.llm_config?.model ?? COUNT_MODEL.openai;
      out.push({ ...openHandsEvents(`openhands-${row.instance_id}`, row.history, model, skipped), source: 'openhands-examples/multi_swe_bench', agent: 'OpenHands CodeActAgent' });
    }
  }
  const resolverFile = path.join(dir, 'resolver_mock_output/output.jsonl');
  if (existsSync(resolverFile)) {
    for (const line of readFileSync(resolverFile, 'utf8').split('\n').filter((l) => l.trim())) {
      const row = JSON.parse(line);
      out.push({ ...openHandsResolver(`openhands-resolver-${row.issue?.repo ?? 'repo'}-${row.issue?.number ?? out.length}`, row, skipped), source: 'openhands-examples/resolver_mock_output', agent: 'OpenHands resolver' });
    }
  }
  for (const f of sorted(path.join(dir, 'runtime_trajs'), '.json')) {
    const events = JSON.parse(readFileSync(path.join(dir, 'runtime_trajs', f), 'utf8'));
    const model = events.find((e) => e.tool_call_metadata?.model_response?.model)?.tool_call_metadata.model_response.model ?? COUNT_MODEL.openai;
    out.push({ ...openHandsEvents(`openhands-${path.basename(f, '.json')}`, events, model, skipped), source: 'openhands-examples/runtime_trajs', agent: 'OpenHands CodeActAgent (GUI)' });
  }
  return out;
}

// ------------------------------------------------------------------ Aider

const HEADER = '# aider chat started at ';

/** Sessions of an aider chat history: { started, lines } (the text before the first header is a session too). */
export function aiderChunks(text) {
  const chunks = [{ started: null, lines: [] }];
  for (const line of text.split('\n')) {
    if (line.startsWith(HEADER)) chunks.push({ started: line.slice(HEADER.length).trim(), lines: [] });
    else chunks[chunks.length - 1].lines.push(line);
  }
  return chunks;
}

function aiderSession(chunk, index) {
  const messages = [];
  let model = null;
  let dropped = 0;
  let turns = 0;
  const push = (role, text) => {
    const prev = messages[messages.length - 1];
    if (prev && prev.role === role) prev.content = `${prev.content}\n${text}`;
    else messages.push({ role, content: text });
  };
  let block = null;
  const flush = () => {
    if (!block) return;
    const text = block.lines.join('\n').trim();
    if (text) {
      if (messages.length === 0 && block.role === 'assistant') dropped += 1;
      else push(block.role, text);
    }
    block = null;
  };
  for (const raw of chunk.lines) {
    const line = raw.endsWith('  ') ? raw.slice(0, -2) : raw;
    let role;
    let text = line;
    if (line.startsWith('####')) {
      role = 'user';
      text = line.slice(line.startsWith('#### ') ? 5 : 4);
    } else if (line.startsWith('>')) {
      if (!model) {
        const at = line.indexOf('Model');
        if (at >= 0 && line.slice(at).startsWith('Models: ')) model = line.slice(at + 8).split(' ')[0];
        else if (at >= 0 && line.slice(at).startsWith('Model: ')) model = line.slice(at + 7).split(' ')[0];
      }
      flush();
      continue;
    } else role = 'assistant';
    if (role === 'user' && block?.role !== 'user') turns += 1;
    if (block && block.role !== role) flush();
    block ??= { role, lines: [] };
    block.lines.push(text);
  }
  flush();
  const stamp = chunk.started ? chunk.started.replace(/[^0-9]/g, '').slice(0, 12) : 'start';
  const claude = /claude/i.test(model ?? '');
  // An unrecorded model (the file's first, header-less chunk) is counted as Claude 3.5 Sonnet, aider's default then.
  const format = claude || !model ? 'anthropic' : 'openai';
  // Anthropic shape needs a user message first (aider's sessions start with one; anything before it was console).
  return {
    name: `aider-${stamp}-${String(index).padStart(4, '0')}`,
    source: 'aider-dev-history',
    agent: 'Aider',
    format,
    model: model ?? 'claude-3-5-sonnet-20240620',
    messages,
    // A user turn: one block of consecutive `####` lines (what the user typed at one prompt).
    userTurns: turns,
    droppedLeading: dropped,
  };
}

function aider(file, skipped, { min = MIN_AIDER_TURNS, limit = Infinity } = {}) {
  const chunks = aiderChunks(readFileSync(file, 'utf8'));
  const all = chunks.map((c, i) => aiderSession(c, i));
  const withTurns = all.filter((s) => s.userTurns > 0);
  let kept = withTurns.filter((s) => s.userTurns >= min);
  const qualifying = kept.length;
  if (kept.length === 0) kept = [...withTurns].sort((a, b) => b.userTurns - a.userTurns).slice(0, 5);
  if (kept.length > limit) {
    const byTurns = [...kept].sort((a, b) => b.userTurns - a.userTurns || a.name.localeCompare(b.name));
    const chosen = new Set(byTurns.slice(0, limit).map((s) => s.name));
    skipped.push({ what: `aider: ${kept.length - limit} session(s) with ≥ ${min} user turns`, why: `--aider ${limit}: only the ${limit} with the most user turns are run` });
    kept = kept.filter((s) => chosen.has(s.name));
  }
  skipped.push({ what: `aider: ${all.length - withTurns.length} of ${all.length} session header(s) with no user turn`, why: 'nothing was asked of the model' });
  skipped.push({ what: `aider: ${withTurns.length - qualifying} session(s) with 1–${min - 1} user turns`, why: `fewer than ${min} user turns (the rule for Aider sessions)` });
  const leading = kept.filter((s) => s.droppedLeading);
  if (leading.length) skipped.push({ what: `aider: assistant text before the first user turn in ${leading.map((s) => s.name).join(', ')}`, why: 'a session continued from before its header; a conversation starts with the user' });
  return kept;
}

// ------------------------------------------------------------------ SWE-agent

function sweAgent(dir, source) {
  return sorted(dir, '.traj').map((f) => {
    const history = JSON.parse(readFileSync(path.join(dir, f), 'utf8')).history;
    const textCommands = !history.some((m) => Array.isArray(m.tool_calls) && m.tool_calls.length);
    return { name: path.basename(f, '.traj'), source, agent: 'SWE-agent', format: 'openai', model: COUNT_MODEL.openai, messages: history, textCommands };
  });
}

// ------------------------------------------------------------------ all of them

/** A user or tool message appended: the unit of "compactions per 100 turns". */
export function turnsOf(session) {
  return session.messages.filter((m) => m.role === 'user' || m.role === 'tool').length;
}

/**
 * Every real trace of `testdata/` in the session-file format, with facts mined by rule.
 * `aiderLimit`: keep only that many Aider sessions (most user turns first). Returns
 * `{ sessions, skipped: [{ what, why }] }`.
 */
export function loadRealSessions(testdata, { aiderLimit = Infinity } = {}) {
  const skipped = [];
  const sessions = [
    ...sorted(path.join(testdata, 'claude-code-viewer-demo'), '.jsonl').map((f) => claudeCode(path.join(testdata, 'claude-code-viewer-demo', f), skipped)),
    ...openHands(path.join(testdata, 'openhands-examples'), skipped),
    ...(existsSync(path.join(testdata, 'aider-dev-history/chat-history.md')) ? aider(path.join(testdata, 'aider-dev-history/chat-history.md'), skipped, { limit: aiderLimit }) : []),
    ...sweAgent(path.join(testdata, 'swe-agent-trajectories'), 'swe-agent-trajectories'),
    ...sweAgent(path.join(testdata, 'swe-agent-extra'), 'swe-agent-extra'),
  ];
  const out = [];
  for (const s of sessions) {
    if (s.messages.length === 0) {
      skipped.push({ what: s.name, why: 'no messages' });
      continue;
    }
    const facts = mineSessionFacts(s, { textCommands: Boolean(s.textCommands) }).map((f) => ({ ...f, id: `${s.name}/${f.id}` }));
    const { textCommands: _t, userTurns: _u, droppedLeading: _d, ...rest } = s;
    out.push({ ...rest, facts, real: true, turns: turnsOf(s) });
  }
  return { sessions: out, skipped };
}
