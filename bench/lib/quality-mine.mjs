// Facts mined from real agent sessions (testdata/swe-agent-trajectories/*.traj, OpenAI shape)
// by generic rules, nothing picked by hand. Only what a model reads is mined: message content
// and tool-call arguments (not SWE-agent's `thought`/`action` extras).
// - task: identifier-like tokens of the task statement (the user message the agent answers
//   first) that the agent itself reuses later (in its text or tool calls) and that the system
//   prompt does not contain: the names the task is about;
// - path: file paths the agent acts on (tool-call arguments, commands in its text) or that a
//   tool output opens (`[File: …]`), made relative to the working directory the session
//   reports ("(Current directory: …)"), and absent from the system prompt;
// - error: exception lines of tool outputs (`SomethingError: …`, `…Exception: …`, the last line
//   of a Traceback) and `FAILED <test>` lines; checked by the exception type plus the longest
//   quoted or identifier-like token of its message.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const IDENT = /[A-Za-z_][A-Za-z0-9_]*(?:[./:-][A-Za-z0-9_]+)+|[A-Za-z_]*[a-z][A-Z][A-Za-z0-9_]*|[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+/g;
const FILE_EXT = /\.(py|pyi|js|mjs|cjs|ts|tsx|jsx|go|rs|java|kt|rb|php|pl|c|h|cc|cpp|hpp|cs|sh|json|ya?ml|toml|cfg|ini|txt|md|rst|html|css|sql)$/;

function textOf(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === 'string' ? p : p?.text ?? '')).join('\n');
  return '';
}

function argsOf(call) {
  try {
    return JSON.parse(call.function?.arguments ?? '{}');
  } catch {
    return {};
  }
}

/** Observations: tool messages, and user messages after the task (agents that run commands in text get their output as user turns). */
function observations(history, taskIndex) {
  return history.filter((m, i) => m.role === 'tool' || (m.role === 'user' && i > taskIndex)).map((m) => textOf(m.content));
}

function agentTexts(history) {
  const out = [];
  for (const m of history) {
    if (m.role !== 'assistant') continue;
    out.push(textOf(m.content));
    for (const c of m.tool_calls ?? []) out.push(`${c.function?.name ?? ''} ${c.function?.arguments ?? ''}`);
  }
  return out.join('\n');
}

export function mineFacts(history) {
  const system = history.filter((m) => m.role === 'system').map((m) => textOf(m.content)).join('\n');
  const firstAssistant = history.findIndex((m) => m.role === 'assistant');
  const taskIndex = history.slice(0, firstAssistant).map((m) => m.role).lastIndexOf('user');
  const task = taskIndex >= 0 ? textOf(history[taskIndex].content) : '';
  const agent = agentTexts(history);
  const obs = observations(history, taskIndex);
  const facts = [];

  // task identifiers (not the names of the agent's own tools, and none nested in another one)
  const tools = new Set(history.flatMap((m) => (m.tool_calls ?? []).map((c) => c.function?.name)));
  const chosen = [];
  for (const token of task.match(IDENT) ?? []) {
    const t = token.replace(/[.:-]+$/, '');
    const lower = t.toLowerCase();
    if (t.length < 4 || /^https?:/.test(t) || tools.has(t) || system.includes(t) || !agent.includes(t)) continue;
    if (chosen.some((c) => c.includes(lower) || lower.includes(c))) continue;
    chosen.push(lower);
    facts.push({ category: 'task', check: { all: [t] }, text: t });
    if (chosen.length >= 6) break;
  }

  // paths
  const cwds = new Set([...obs.join('\n').matchAll(/\(Current directory: ([^)\s]+)\)/g)].map((m) => m[1]));
  const relative = (p) => {
    let q = p.replace(/^\.\//, '');
    for (const cwd of cwds) if (q.startsWith(`${cwd}/`)) q = q.slice(cwd.length + 1);
    return q;
  };
  const candidates = [];
  for (const m of history) {
    if (m.role !== 'assistant') continue;
    for (const c of m.tool_calls ?? []) {
      for (const [k, v] of Object.entries(argsOf(c))) if (/path|file/i.test(k) && typeof v === 'string') candidates.push(v);
    }
    for (const [, cmd, arg] of textOf(m.content).matchAll(/^\s*(open|create|edit_file|cat|vim|nano|python3?|rm)\s+"?([^\s"]+)"?/gm)) if (cmd) candidates.push(arg);
  }
  for (const o of obs) for (const [, p] of o.matchAll(/\[File: ([^\s\]]+) \(\d+ lines total\)\]/g)) candidates.push(p);
  // One fact per file: a bare name that another candidate extends (`fields.py`, `src/marshmallow/fields.py`) is the same file.
  const paths = [...new Set(candidates.map((c) => relative(c.trim())))].filter((p) => FILE_EXT.test(p) && p.length >= 5 && !system.includes(p));
  for (const p of paths) {
    if (paths.some((q) => q !== p && q.endsWith(`/${p}`))) continue;
    facts.push({ category: 'path', check: { all: [p] }, text: p });
  }

  // errors
  const errors = new Map();
  for (const o of obs) {
    for (const raw of o.split(/\r?\n/)) {
      const line = raw.trim();
      const exc = line.match(/\b([A-Z][A-Za-z0-9_]*(?:Error|Exception))\b:\s*(.+)$/);
      const failed = line.match(/^FAILED\s+(\S+)/);
      if (exc) {
        const [, type, message] = exc;
        const quoted = [...message.matchAll(/['"`]([^'"`]{4,})['"`]/g)].map((m) => m[1]);
        const idents = message.match(IDENT) ?? [];
        const key = [...quoted, ...idents].sort((a, b) => b.length - a.length)[0];
        const check = key ? { all: [type, key] } : { all: [`${type}: ${message.slice(0, 40).trim()}`] };
        errors.set(JSON.stringify(check), { category: 'error', check, text: line.slice(0, 160) });
      } else if (failed) {
        const check = { all: [failed[1]] };
        errors.set(JSON.stringify(check), { category: 'error', check, text: line.slice(0, 160) });
      }
    }
  }
  facts.push(...errors.values());
  return facts.map((f, i) => ({ id: `${f.category}-${i + 1}`, where: 'mined', ...f }));
}

/** The real SWE-agent sessions of testdata/, with mined facts, in the session-file format. */
export function realQualitySessions(testdata) {
  const dir = path.join(testdata, 'swe-agent-trajectories');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.traj'))
    .sort()
    .map((f) => {
      const history = JSON.parse(readFileSync(path.join(dir, f), 'utf8')).history;
      const name = f.replace(/\.traj$/, '');
      return { name, format: 'openai', model: 'gpt-4o', messages: history, facts: mineFacts(history).map((x) => ({ ...x, id: `${name}/${x.id}` })), real: true };
    });
}
