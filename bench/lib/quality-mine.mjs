// Facts mined from real agent sessions by generic rules, the same for every format (Claude
// Code, OpenHands, Aider, SWE-agent): nothing picked by hand, nothing tuned to any compaction.
// A session (session-file format, Anthropic or OpenAI shape) is first read as a neutral
// transcript of system / user / assistant / tool items; only what a model reads counts (message
// content and tool-call arguments, not provider extras such as SWE-agent's `thought`), and
// SWE-agent's embedded demonstration (`is_demo`) is not the session's own work.
//
// Rules (each fact carries its check, lib/quality-facts.mjs):
// - task: identifier-like tokens of the task statement (the last user message before the first
//   assistant message) that the agent reuses (its text or tool-call arguments), at most 6;
// - path: files the agent acts on: tool-call arguments naming a file, files in the commands it
//   runs (tool calls, or commands in its text for agents that write them there), SWE-agent's
//   `[File: …]` views, Aider's SEARCH/REPLACE targets; one fact per file (the shortest form
//   with a directory the agent used), with its last operation (created, edited, read, ran,
//   deleted, other); checked by the path;
// - url: every http(s) URL; checked by the URL;
// - error: in tool outputs and user messages: exception lines (`SomethingError: …`) checked by
//   the exception type and the message's most distinctive token (the candidate, quoted string
//   or identifier, that occurs least often in the session), compiler/linter lines
//   (`file:line:col: error: …`, `file:line:col: E402 …`) checked by the code (if any) and the
//   distinctive token;
// - ident: commit hashes (hex on a line that says "commit"), issue/ticket ids (`#123` in user or
//   assistant text on a line that says issue / pull / PR / ticket / bug / fixes / closes /
//   resolves, `ABC-123`), environment variable names (`$NAME`, `${NAME}`, `os.environ`,
//   `getenv`, `process.env.NAME`); checked by the identifier;
// - value: `NAME=value` settings (environment-style names), `--option=value` flags, and
//   `pkg@version` / `pkg==version` pins: checked by the name with its LATEST value within 80
//   characters; earlier values are `stale`;
// - test: test names with a result on the same line, in any message text (pytest `path::name PASSED/FAILED`,
//   googletest `[ OK ]/[ FAILED ]`, go `--- PASS/FAIL:`, unittest `name (module) ... ok`):
//   checked by the name with its LATEST result within 60 characters; earlier results are stale;
// - constraint: user instructions with must / never / always / don't / do not / only (not
//   questions): a clause (split at , : ;) starts with never / always / don't / do not / only /
//   must / you must / you can only, or has `you` (or a name with must / should / can) as its
//   subject and says must / never / always / only / don't / do not / should not; checked by
//   their three most distinctive key terms (words of 4+ letters or identifiers, least frequent
//   in the session first).
// A fact that the system prompt alone retains is dropped (the system prompt is always served),
// and so is one its own full history does not retain (the bench's sanity check, by design 0).
// Every scan is a plain string scan or a regex without nested quantifiers (linear time).
import { contextText, isRetained, normalize } from './quality-facts.mjs';

const FILE_EXTS = new Set(
  ('py pyi js mjs cjs ts tsx jsx go rs java kt rb php pl c h cc cpp hpp cs sh bash json yaml yml toml cfg ini txt md rst html css scss sql ' +
    'pony vue svelte lock xml gradle mk cmake proto graphql env dockerfile ipynb r scala swift m')
    .split(' '),
);
const PATH_KEYS = new Set(['path', 'file', 'file_path', 'filepath', 'filename', 'file_name', 'notebook_path', 'target_file', 'fname']);
const STOP = new Set(
  ('that this with from have will your what when where which there their them they then than into only must never always dont does should ' +
    'would could also just make sure each more most some such very about after before being other these those here were been like want need ' +
    'using used uses file files code please first next last same instead without within while every because through over under again still ' +
    'already ever until sure keep change changes update user users task tasks work working note always never only don\'t').split(' '),
);
/** A clause that starts with one of these is an instruction (`Never …`, `when X, don't …`). */
const MODAL_STARTS = ['never ', 'always ', "don't ", 'dont ', 'do not ', 'only ', 'must ', 'you must ', 'you can only ', 'you may only '];
/** …and so is a clause `you … | <name> must/should/can …` that says one of these. */
const MODAL_PHRASES = [' must ', ' never ', ' always ', ' only ', " don't ", ' do not ', ' should not '];

/** An instruction: some clause (split at `,` `:` `;`) starts with a modal, or has `you` or a name as subject and says one. */
function isImperative(sentence) {
  for (const raw of sentence.toLowerCase().split(/[,:;]/)) {
    let clause = raw.trim();
    while (clause.startsWith('*') || clause.startsWith('_')) clause = clause.slice(1);
    clause = `${clause} `;
    if (MODAL_STARTS.some((m) => clause.startsWith(m))) return true;
    // `I think …`, `it's always appreciated`, `we never get that far`: statements, not instructions.
    if (MODAL_PHRASES.some((m) => ` ${clause}`.includes(m)) && (clause.startsWith('you ') || /^[a-z_.]+ (must|should|can) /.test(clause))) return true;
  }
  return false;
}
const NON_TICKET = new Set(['UTF', 'ISO', 'SHA', 'MD', 'X', 'HTTP', 'TLS', 'SSL', 'ECMA', 'CP', 'WINDOWS', 'LATIN']);

// ------------------------------------------------------------------ transcript

function textOf(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p) => {
        if (typeof p === 'string') return p;
        if (p?.type === 'text' || typeof p?.text === 'string') return p.text ?? '';
        return '';
      })
      .join('\n');
  }
  return '';
}

function parseArgs(raw) {
  if (raw && typeof raw === 'object') return raw;
  try {
    const v = JSON.parse(raw ?? '{}');
    return v && typeof v === 'object' ? v : {};
  } catch {
    return {};
  }
}

/**
 * Neutral items `{ role, text, calls: [{ id, name, args, raw }], call?, demo, index }` of a session.
 * `textCommands`: the agent runs commands in its text and gets the output as the next user
 * message (SWE-agent without function calling, OpenHands' resolver): those user messages after
 * the first assistant message are tool outputs.
 */
export function transcriptOf(session, { textCommands = false } = {}) {
  const items = [];
  const calls = new Map();
  if (session.system) items.push({ role: 'system', text: textOf(session.system), calls: [], index: -1 });
  let seenAssistant = false;
  let lastAssistant = null;
  session.messages.forEach((m, index) => {
    if (session.format === 'anthropic' && Array.isArray(m.content)) {
      const text = textOf(m.content.filter((b) => b.type === 'text'));
      if (m.role === 'assistant') {
        const cs = m.content.filter((b) => b.type === 'tool_use').map((b) => ({ id: b.id, name: b.name ?? '', args: b.input ?? {}, raw: JSON.stringify(b.input ?? {}) }));
        cs.forEach((c) => calls.set(c.id, c));
        items.push({ role: 'assistant', text, calls: cs, index });
        seenAssistant = true;
      } else {
        for (const b of m.content.filter((x) => x.type === 'tool_result')) items.push({ role: 'tool', text: textOf(b.content), calls: [], call: calls.get(b.tool_use_id), index });
        if (text.trim()) items.push({ role: 'user', text, calls: [], index });
      }
      return;
    }
    const text = textOf(m.content);
    if (m.role === 'system') items.push({ role: 'system', text, calls: [], index });
    else if (m.role === 'assistant') {
      const cs = (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function?.name ?? '', args: parseArgs(c.function?.arguments), raw: c.function?.arguments ?? '' }));
      cs.forEach((c) => calls.set(c.id, c));
      lastAssistant = { text, calls: cs };
      items.push({ role: 'assistant', text, calls: cs, index });
      seenAssistant = true;
    } else if (m.role === 'tool') {
      const id = m.tool_call_id ?? (Array.isArray(m.tool_call_ids) ? m.tool_call_ids[0] : undefined);
      items.push({ role: 'tool', text, calls: [], call: calls.get(id), index });
    } else if (m.role === 'user') {
      if (textCommands && seenAssistant && !m.is_demo) items.push({ role: 'tool', text, calls: [], call: lastAssistant ? { name: 'text-command', textCommand: commandsInText(lastAssistant.text) } : undefined, index });
      else items.push({ role: 'user', text, calls: [], demo: Boolean(m.is_demo), index });
    }
  });
  return items;
}

// ------------------------------------------------------------------ scanning helpers

const isAlnum = (ch) => (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch === '_';
const isUpper = (ch) => ch >= 'A' && ch <= 'Z';
const isLower = (ch) => ch >= 'a' && ch <= 'z';
const isDigit = (ch) => ch >= '0' && ch <= '9';
const isHex = (ch) => isDigit(ch) || (ch >= 'a' && ch <= 'f');
const TRIM = '"\'`()[]{}<>,;!?*|';

/** Whitespace-separated words with surrounding quotes and brackets (and a final . or :) taken off. */
function words(line) {
  const out = [];
  for (const raw of line.split(/\s+/)) {
    let a = 0;
    let b = raw.length;
    while (a < b && TRIM.includes(raw[a])) a += 1;
    while (b > a && (TRIM.includes(raw[b - 1]) || raw[b - 1] === '.' || raw[b - 1] === ':')) b -= 1;
    if (b > a) out.push(raw.slice(a, b));
  }
  return out;
}

/** `snake_case`, `dotted.name`, `path/like`, `kebab-case-name`, `camelCase`, `a::b` (letters and digits joined by separators). */
function isIdentLike(t) {
  if (t.length < 4 || !(isAlnum(t[0]) && !isDigit(t[0]))) return false;
  let sep = false;
  let camel = false;
  for (let i = 0; i < t.length; i += 1) {
    const ch = t[i];
    if (isAlnum(ch)) {
      if (ch === '_' && i > 0 && i < t.length - 1) sep = true;
      if (i > 0 && isUpper(ch) && isLower(t[i - 1])) camel = true;
      continue;
    }
    if ('./:-'.includes(ch) && i > 0 && i < t.length - 1 && isAlnum(t[i - 1]) && isAlnum(t[i + 1])) {
      sep = true;
      continue;
    }
    return false;
  }
  return sep || camel;
}

function isEnvName(t) {
  if (t.length < 3) return false;
  let letters = 0;
  for (const ch of t) {
    if (isUpper(ch)) letters += 1;
    else if (!(isDigit(ch) || ch === '_')) return false;
  }
  return letters >= 2 && isUpper(t[0]) && (t.includes('_') || t.length >= 4);
}

function extOf(p) {
  const base = p.slice(p.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  if (base.toLowerCase() === 'dockerfile' || base.toLowerCase() === 'makefile') return 'dockerfile';
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : '';
}

function cleanPath(raw) {
  let p = String(raw ?? '').trim();
  while (p && TRIM.includes(p[0])) p = p.slice(1);
  while (p && (TRIM.includes(p[p.length - 1]) || ',.:'.includes(p[p.length - 1]))) p = p.slice(0, -1);
  if (p.startsWith('./')) p = p.slice(2);
  if (p.length < 4 || p.startsWith('-') || p.includes('://')) return null;
  for (const ch of p) if (' *{}$<>|"\'`\\='.includes(ch) || ch.charCodeAt(0) < 32) return null;
  return FILE_EXTS.has(extOf(p)) ? p : null;
}

/** Commands an agent wrote in its text: fenced code blocks and CodeAct `<execute_…>` tags. */
function commandsInText(text) {
  const out = [];
  const lines = text.split('\n');
  let inFence = false;
  let inTag = false;
  for (const line of lines) {
    const t = line.trim();
    if (t.startsWith('```')) {
      inFence = !inFence;
      continue;
    }
    if (t.startsWith('<execute_')) {
      inTag = true;
      const rest = t.slice(t.indexOf('>') + 1);
      if (rest.trim() && !rest.includes('</execute_')) out.push(rest);
      continue;
    }
    if (t.startsWith('</execute_')) {
      inTag = false;
      continue;
    }
    if (inFence || inTag) out.push(line);
  }
  return out.join('\n');
}

const VERB_OPS = [
  [['cat', 'head', 'tail', 'less', 'more', 'nl', 'open', 'view', 'wc', 'grep', 'diff', 'search_file', 'goto', 'bat'], 'read'],
  [['touch', 'create', 'mkfile'], 'created'],
  [['vim', 'vi', 'nano', 'edit', 'patch', 'sed', 'perl', 'black', 'isort', 'prettier', 'ruff'], 'edited'],
  [['python', 'python3', 'node', 'pytest', 'bash', 'sh', 'ruby', 'go', 'cargo', 'npx', 'tsx', 'ts-node', 'deno', 'make', 'flake8', 'mypy', 'pylint', 'eslint'], 'ran'],
  [['rm', 'git rm'], 'deleted'],
];
const verbOp = (verb) => VERB_OPS.find(([vs]) => vs.includes(verb))?.[1];

/** File operations in shell commands (and SWE-agent's / OpenHands' command languages). `state.open`: the file SWE-agent has open. */
function opsInCommands(commands, state) {
  const out = [];
  // function-style helpers: open_file('x'), edit_file_by_replace(\n'x', …), create_file('x')
  for (let at = commands.indexOf('('); at > 0; at = commands.indexOf('(', at + 1)) {
    let s = at;
    while (s > 0 && isAlnum(commands[s - 1])) s -= 1;
    const fn = commands.slice(s, at).toLowerCase();
    if (!fn) continue;
    let a = at + 1;
    while (a < commands.length && a < at + 20 && ' \t\r\n'.includes(commands[a])) a += 1;
    const q = commands[a];
    if (q !== "'" && q !== '"') continue;
    const end = commands.indexOf(q, a + 1);
    const p = end > 0 && end - a < 300 ? cleanPath(commands.slice(a + 1, end)) : null;
    if (!p) continue;
    const op = fn.includes('create') ? 'created' : fn.includes('edit') || fn.includes('insert') || fn.includes('append') || fn.includes('replace') ? 'edited' : fn.includes('open') || fn.includes('read') || fn.includes('view') ? 'read' : null;
    if (op) out.push({ path: p, op });
  }
  for (const line of commands.split('\n')) {
    for (const seg of line.split(/&&|\|\||;|\|/)) {
      const ws = words(seg.trim());
      if (ws.length === 0) continue;
      let i = 0;
      while (i < ws.length && (ws[i] === 'sudo' || ws[i].includes('=') || ws[i] === 'time')) i += 1;
      const verb = ws[i];
      if (!verb) continue;
      if (verb === 'edit' && state.open) out.push({ path: state.open, op: 'edited' });
      let op = verbOp(verb);
      if (verb === 'sed' && !ws.includes('-i')) op = 'read';
      for (let j = i + 1; j < ws.length; j += 1) {
        if (ws[j] === '>' || ws[j] === '>>') {
          const p = cleanPath(ws[j + 1]);
          if (p) out.push({ path: p, op: ws[j] === '>' ? 'created' : 'edited' });
          j += 1;
          continue;
        }
        const p = cleanPath(ws[j]);
        if (p) out.push({ path: p, op: op ?? 'other' });
      }
      if ((verb === 'open' || verb === 'create') && ws[i + 1]) {
        const p = cleanPath(ws[i + 1]);
        if (p) state.open = p;
      }
    }
  }
  return out;
}

const CALL_OPS = [
  [['write', 'create', 'create_file', 'write_file'], 'created'],
  [['edit', 'multiedit', 'str_replace', 'insert', 'replace', 'notebookedit', 'edit_file', 'apply_patch'], 'edited'],
  [['read', 'open', 'view', 'open_file', 'read_file', 'cat', 'goto'], 'read'],
];
const EDITOR_OPS = { view: 'read', create: 'created', str_replace: 'edited', insert: 'edited', undo_edit: 'edited', append: 'edited' };

/** File operations of one tool call: path-like arguments, an editor `command`, shell commands. */
function opsOfCall(call, state) {
  const out = [];
  const name = String(call.name ?? '').toLowerCase();
  const args = call.args ?? {};
  const sub = typeof args.command === 'string' && EDITOR_OPS[args.command] ? EDITOR_OPS[args.command] : null;
  let byName = CALL_OPS.find(([ns]) => ns.includes(name))?.[1];
  for (const [k, v] of Object.entries(args)) {
    if (!PATH_KEYS.has(k.toLowerCase()) || typeof v !== 'string') continue;
    const p = cleanPath(v);
    if (!p) continue;
    out.push({ path: p, op: sub ?? byName ?? 'other' });
    if (name === 'open' || name === 'create' || sub) state.open = p;
    byName ??= 'other';
  }
  if (typeof args.command === 'string' && !sub) out.push(...opsInCommands(args.command, state));
  if (typeof args.code === 'string') out.push(...opsInCommands(args.code, state));
  if (name === 'edit' && state.open && !out.length) out.push({ path: state.open, op: 'edited' });
  return out;
}

/** Aider's SEARCH/REPLACE blocks: a file name line, a fence, `<<<<<<< SEARCH` (an empty search creates the file). */
function searchReplaceTargets(text) {
  const out = [];
  const lines = text.split('\n');
  for (let i = 0; i + 2 < lines.length; i += 1) {
    if (!lines[i + 1].trim().startsWith('```') || lines[i + 2].trim() !== '<<<<<<< SEARCH') continue;
    const p = cleanPath(lines[i].trim());
    if (p) out.push({ path: p, op: lines[i + 3]?.trim() === '=======' ? 'created' : 'edited' });
  }
  return out;
}

function countIn(text, term) {
  let n = 0;
  for (let i = text.indexOf(term); i !== -1; i = text.indexOf(term, i + 1)) n += 1;
  return n;
}

/** The candidate occurring least often in the session (ties: the longer). */
function mostDistinctive(candidates, fullText) {
  let best = null;
  for (const c of candidates) {
    const n = countIn(fullText, normalize(c));
    if (n === 0) continue;
    if (!best || n < best.n || (n === best.n && c.length > best.c.length)) best = { c, n };
  }
  return best?.c ?? null;
}

function quotedIn(text) {
  const out = [];
  for (const q of ["'", '"', '`']) {
    for (let a = text.indexOf(q); a !== -1; ) {
      const b = text.indexOf(q, a + 1);
      if (b === -1) break;
      const inner = text.slice(a + 1, b).trim();
      if (inner.length >= 4 && inner.length <= 80) out.push(inner);
      a = text.indexOf(q, b + 1);
    }
  }
  return out;
}

// ------------------------------------------------------------------ the rules

export function mineTranscript(items, fullText) {
  const facts = [];
  const n = Math.max(1, ...items.map((x) => x.index + 1));
  const at = (index) => Number(((index + 1) / n).toFixed(3));
  const live = items.filter((x) => x.role !== 'system' && !x.demo);
  const system = items.filter((x) => x.role === 'system').map((x) => x.text).join('\n');
  const firstAssistant = items.findIndex((x) => x.role === 'assistant');
  const taskItem = items.slice(0, firstAssistant < 0 ? items.length : firstAssistant).filter((x) => x.role === 'user' && !x.demo).pop();
  const agentText = live.filter((x) => x.role === 'assistant').map((x) => [x.text, ...x.calls.map((c) => `${c.name} ${c.raw}`)].join('\n')).join('\n');
  const toolNames = new Set(items.flatMap((x) => x.calls.map((c) => c.name)));

  // task identifiers
  if (taskItem) {
    const chosen = [];
    for (const w of words(taskItem.text)) {
      const lower = w.toLowerCase();
      if (!isIdentLike(w) || w.includes('://') || toolNames.has(w) || system.includes(w) || !agentText.includes(w)) continue;
      if (chosen.some((c) => c.includes(lower) || lower.includes(c))) continue;
      chosen.push(lower);
      facts.push({ category: 'task', check: { all: [w] }, text: w, at: at(taskItem.index) });
      if (chosen.length >= 6) break;
    }
  }

  // paths, with their last operation
  const state = { open: null };
  const ops = [];
  const cwds = new Set();
  for (const x of live) {
    if (x.role === 'assistant') {
      for (const c of x.calls) for (const o of opsOfCall(c, state)) ops.push({ ...o, index: x.index });
      for (const o of searchReplaceTargets(x.text)) ops.push({ ...o, index: x.index });
    }
    if (x.role === 'tool') {
      if (x.call?.textCommand) for (const o of opsInCommands(x.call.textCommand, state)) ops.push({ ...o, index: x.index });
      for (let a = x.text.indexOf('(Current directory: '); a !== -1; a = x.text.indexOf('(Current directory: ', a + 1)) {
        const end = x.text.indexOf(')', a);
        if (end > a) cwds.add(x.text.slice(a + 20, end).trim());
      }
      for (let a = x.text.indexOf('[File: '); a !== -1; a = x.text.indexOf('[File: ', a + 1)) {
        const p = cleanPath(x.text.slice(a + 7).split(' ')[0]);
        const cmd = `${x.call?.name ?? ''} ${x.call?.textCommand ?? ''}`.toLowerCase();
        if (p) ops.push({ path: p, op: cmd.includes('edit') || cmd.includes('str_replace') || cmd.includes('insert') ? 'edited' : cmd.includes('create') ? 'created' : 'read', index: x.index });
      }
    }
  }
  const relative = (p) => {
    for (const cwd of cwds) if (p.startsWith(`${cwd}/`)) return p.slice(cwd.length + 1);
    return p;
  };
  const forms = [...new Set(ops.map((o) => relative(o.path)))];
  // One fact per file: forms that end one another at a `/` are the same file; the check is the shortest form with a directory.
  const fileOf = new Map();
  for (const p of forms) {
    const family = forms.filter((q) => q === p || q.endsWith(`/${p}`) || p.endsWith(`/${q}`));
    const longest = family.sort((a, b) => b.length - a.length)[0];
    fileOf.set(p, longest);
  }
  const files = new Map();
  for (const o of ops) {
    const p = relative(o.path);
    const key = fileOf.get(p);
    const f = files.get(key) ?? { forms: new Set(), op: null, index: -1 };
    f.forms.add(p);
    f.op = o.op === 'other' && f.op ? f.op : o.op;
    f.index = o.index;
    files.set(key, f);
  }
  for (const f of files.values()) {
    const list = [...f.forms];
    const withDir = list.filter((p) => p.includes('/')).sort((a, b) => a.length - b.length);
    const p = withDir[0] ?? list.sort((a, b) => a.length - b.length)[0];
    facts.push({ category: 'path', check: { all: [p] }, op: f.op, text: `${p} (last: ${f.op})`, at: at(f.index) });
  }

  // URLs
  const urls = new Map();
  for (const x of live) {
    for (const text of [x.text, ...x.calls.map((c) => c.raw)]) {
      for (let a = text.indexOf('http'); a !== -1; a = text.indexOf('http', a + 4)) {
        if (!(text.startsWith('http://', a) || text.startsWith('https://', a))) continue;
        let b = a;
        while (b < text.length && !' \t\r\n"\'<>()[]{}`|\\'.includes(text[b])) b += 1;
        let u = text.slice(a, b);
        while (u && '.,;:!?*'.includes(u[u.length - 1])) u = u.slice(0, -1);
        if ((u.length >= 12 && u.indexOf('.', 8) > 0) || u.includes('localhost')) urls.set(u, x.index);
      }
    }
  }
  for (const [u, index] of urls) facts.push({ category: 'url', check: { all: [u] }, text: u, at: at(index) });

  // errors
  const errors = new Map();
  const addError = (check, text, index) => errors.set(JSON.stringify(check), { category: 'error', check, text: text.slice(0, 160), at: at(index) });
  for (const x of live.filter((y) => y.role === 'tool' || y.role === 'user')) {
    for (const raw of x.text.split('\n')) {
      const line = raw.trim().slice(0, 400);
      if (!line) continue;
      const ws = line.split(/\s+/);
      let done = false;
      for (let i = 0; i < ws.length && !done; i += 1) {
        const w = ws[i];
        if (!w.endsWith(':')) continue;
        const core = w.slice(0, -1);
        const type = core.slice(core.lastIndexOf('.') + 1);
        if (!(type.endsWith('Error') || type.endsWith('Exception')) || !isUpper(type[0]) || ![...type].every(isAlnum)) continue;
        const message = ws.slice(i + 1).join(' ');
        const key = mostDistinctive([...quotedIn(message), ...words(message).filter(isIdentLike)], fullText);
        addError(key ? { all: [type, key] } : { all: [`${type}: ${message.slice(0, 40).trim()}`.trim()] }, line, x.index);
        done = true;
      }
      if (done) continue;
      // file:line:col: error: message | file:line:col: CODE message
      const first = ws[0];
      const parts = first.split(':');
      if (parts.length >= 3 && cleanPath(parts[0]) && isDigit(parts[1][0] ?? '')) {
        const rest = ws.slice(1);
        const code = rest[0] && rest[0].length >= 4 && rest[0].length <= 6 && isUpper(rest[0][0]) && [...rest[0].slice(1)].every(isDigit) ? rest[0] : null;
        const isErr = rest[0] === 'error:' || rest[0] === 'fatal' || code;
        if (!isErr) continue;
        const message = rest.slice(rest[0] === 'error:' || code ? 1 : 0).join(' ');
        const key = mostDistinctive([...quotedIn(message), ...words(message).filter(isIdentLike)], fullText);
        const terms = [code, key].filter(Boolean);
        if (terms.length) addError({ all: terms }, line, x.index);
      }
    }
  }
  facts.push(...errors.values());

  // values (latest wins) and identifiers
  const values = new Map();
  const setValue = (name, value, index) => {
    if (!value || value.length > 60 || value.startsWith('$') || value.startsWith('{')) return;
    const v = values.get(name) ?? { seq: [], index };
    if (v.seq[v.seq.length - 1] !== value) v.seq.push(value);
    v.index = index;
    values.set(name, v);
  };
  const idents = new Map();
  for (const x of live) {
    const userOrAgent = x.role === 'user' || x.role === 'assistant';
    for (const text of [x.text, ...x.calls.map((c) => (typeof c.args === 'object' ? Object.values(c.args).filter((v) => typeof v === 'string').join('\n') : c.raw))]) {
      for (const line of text.split('\n')) {
        const lowerLine = line.toLowerCase();
        const hasCommit = lowerLine.includes('commit');
        const saysIssue = ['issue', 'pull', ' pr ', 'pr #', 'ticket', 'bug', 'fixes', 'closes', 'resolves'].some((k) => lowerLine.includes(k));
        for (const w of words(line)) {
          const eq = w.indexOf('=');
          if (eq > 0 && w[eq + 1] !== '=') {
            const name = w.slice(0, eq);
            const value = cleanValue(w.slice(eq + 1));
            if (isEnvName(name) || (name.startsWith('--') && name.length > 3 && [...name.slice(2)].every((ch) => isAlnum(ch) || ch === '-'))) setValue(name, value, x.index);
          }
          const pin = w.indexOf('==');
          if (pin > 0 && isPkgName(w.slice(0, pin)) && isDigit(w[pin + 2] ?? '')) setValue(w.slice(0, pin), cleanVersion(w.slice(pin + 2)), x.index);
          const atSign = w.lastIndexOf('@');
          if (atSign > 0 && isPkgName(w.slice(0, atSign)) && (isDigit(w[atSign + 1] ?? '') || w[atSign + 1] === '^' || w[atSign + 1] === '~')) setValue(w.slice(0, atSign), cleanVersion(w.slice(atSign + 1)), x.index);
          // identifiers
          if (hasCommit && w.length >= 7 && w.length <= 40 && [...w].every(isHex) && [...w].some(isDigit) && [...w].some((ch) => !isDigit(ch))) idents.set(w, x.index);
          if (userOrAgent && saysIssue && w.startsWith('#') && w.length >= 2 && w.length <= 7 && [...w.slice(1)].every(isDigit)) idents.set(w, x.index);
          const dash = w.indexOf('-');
          if (dash >= 2 && dash <= 10 && [...w.slice(0, dash)].every(isUpper) && w.length > dash + 1 && [...w.slice(dash + 1)].every(isDigit) && !NON_TICKET.has(w.slice(0, dash))) idents.set(w, x.index);
          for (const prefix of ['$', '${', 'process.env.']) {
            if (!w.startsWith(prefix)) continue;
            let e = prefix.length;
            while (e < w.length && (isUpper(w[e]) || isDigit(w[e]) || w[e] === '_')) e += 1;
            const name = w.slice(prefix.length, e);
            if (isEnvName(name)) idents.set(name, x.index);
          }
        }
        for (const fn of ['environ[', 'environ.get(', 'getenv(', 'Getenv(', 'env::var(']) {
          for (let a = line.indexOf(fn); a !== -1; a = line.indexOf(fn, a + 1)) {
            const q = line[a + fn.length];
            if (q !== '"' && q !== "'") continue;
            const end = line.indexOf(q, a + fn.length + 1);
            const name = end > 0 ? line.slice(a + fn.length + 1, end) : '';
            if (isEnvName(name)) idents.set(name, x.index);
          }
        }
      }
    }
  }
  for (const [name, v] of values) {
    const latest = v.seq[v.seq.length - 1];
    const stale = v.seq.slice(0, -1).filter((s) => s !== latest && !s.includes(latest) && !latest.includes(s));
    facts.push({ category: 'value', check: { near: [name, latest, 80] }, ...(stale.length ? { stale } : {}), text: `${name}: ${[...stale, latest].join(' → ')}`, at: at(v.index) });
  }
  for (const [id, index] of idents) if (!values.has(id)) facts.push({ category: 'ident', check: { all: [id] }, text: id, at: at(index) });

  // tests with their last result
  const tests = new Map();
  const result = (name, r, index) => {
    const t = tests.get(name) ?? { seq: [], index };
    if (t.seq[t.seq.length - 1] !== r) t.seq.push(r);
    t.index = index;
    tests.set(name, t);
  };
  // Test reports may be anywhere the model reads them (aider writes `/test` output as plain chat lines).
  for (const x of live) {
    for (const raw of x.text.split('\n')) {
      const line = raw.trim();
      const ws = words(line);
      if (line.startsWith('[       OK ]') || line.startsWith('[  FAILED  ]')) {
        const name = words(line.slice(12))[0];
        if (name && name.includes('.') && isIdentLike(name)) result(name, line.startsWith('[       OK ]') ? 'OK' : 'FAILED', x.index);
        continue;
      }
      if (line.startsWith('--- PASS: ') || line.startsWith('--- FAIL: ')) {
        const name = words(line.slice(10))[0];
        if (name) result(name, line.slice(4, 8), x.index);
        continue;
      }
      const verdict = ws.find((w) => w === 'PASSED' || w === 'FAILED' || w === 'ERROR' || w === 'SKIPPED' || w === 'XFAIL');
      const testName = ws.find((w) => w.includes('::') && w.length > 6);
      if (verdict && testName) {
        result(testName, verdict, x.index);
        continue;
      }
      const dots = line.indexOf(' ... ');
      if (dots > 0 && ws[0]?.startsWith('test') && ws[1]?.startsWith('(')) {
        const r = line.slice(dots + 5).trim().split(' ')[0];
        if (r === 'ok' || r === 'FAIL' || r === 'ERROR') result(ws[0], r, x.index);
      }
    }
  }
  for (const [name, t] of tests) {
    const latest = t.seq[t.seq.length - 1];
    const stale = t.seq.slice(0, -1).filter((s) => s !== latest);
    facts.push({ category: 'test', check: { near: [name, latest, 60] }, ...(stale.length ? { stale } : {}), text: `${name}: ${[...stale, latest].join(' → ')}`, at: at(t.index) });
  }

  // user constraints
  const constraints = new Map();
  for (const x of live.filter((y) => y.role === 'user')) {
    for (const sentence of sentences(x.text)) {
      if (sentence.endsWith('?') || sentence.length < 15 || sentence.length > 300 || !isImperative(sentence)) continue;
      const candidates = [...new Set(words(sentence).filter((w) => (isIdentLike(w) || (w.length >= 4 && [...w].every((ch) => isLower(ch) || isUpper(ch)))) && !STOP.has(w.toLowerCase())))];
      const ranked = candidates
        .map((c, i) => ({ c, i, n: countIn(fullText, normalize(c)) }))
        .filter((r) => r.n > 0)
        .sort((a, b) => a.n - b.n || b.c.length - a.c.length || a.i - b.i)
        .slice(0, 3)
        .sort((a, b) => a.i - b.i)
        .map((r) => r.c);
      if (ranked.length < 2) continue;
      const check = { all: ranked };
      constraints.set(JSON.stringify(check), { category: 'constraint', check, text: sentence.slice(0, 200), at: at(x.index) });
    }
  }
  facts.push(...constraints.values());
  return facts;
}

/** A version: its leading run of letters, digits, `.`, `+`, `~`, `^`, `*` (`0.910->x` is 0.910). */
function cleanVersion(v) {
  let e = 0;
  while (e < v.length && (isAlnum(v[e]) || '.+~^*'.includes(v[e]))) e += 1;
  return cleanValue(v.slice(0, e));
}

function cleanValue(v) {
  let s = v;
  while (s && TRIM.includes(s[0])) s = s.slice(1);
  while (s && (TRIM.includes(s[s.length - 1]) || '.,:'.includes(s[s.length - 1]))) s = s.slice(0, -1);
  return s;
}

function isPkgName(p) {
  if (p.length < 2 || p.length > 60) return false;
  const body = p.startsWith('@') ? p.slice(1) : p;
  return isLower(body[0] ?? '') && [...body].every((ch) => isLower(ch) || isDigit(ch) || '-_./'.includes(ch)) && !body.includes('//');
}

/** Sentences of a text: lines split after `. `, `! `, `? ` (no code-like lines: indented, fenced, quoted, or tables). */
function sentences(text) {
  const out = [];
  let fence = false;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('```')) {
      fence = !fence;
      continue;
    }
    if (fence || !line || raw.startsWith('    ') || raw.startsWith('\t') || line.startsWith('>') || line.startsWith('|')) continue;
    let start = 0;
    for (let i = 0; i < line.length; i += 1) {
      if ('.!?'.includes(line[i]) && (i === line.length - 1 || line[i + 1] === ' ')) {
        out.push(line.slice(start, i + 1).trim());
        start = i + 1;
      }
    }
    if (start < line.length) out.push(line.slice(start).trim());
  }
  return out.map((s) => (s.startsWith('- ') || s.startsWith('* ') ? s.slice(2) : s)).filter(Boolean);
}

/**
 * The facts of one session (session-file format). Drops facts the system prompt alone retains
 * (always served) and, as a guard, facts the full session does not retain (none by design).
 */
export function mineSessionFacts(session, options = {}) {
  const items = transcriptOf(session, options);
  const fullText = contextText({ system: session.system, messages: session.messages });
  const systemText = normalize(items.filter((x) => x.role === 'system').map((x) => x.text).join('\n'));
  const facts = mineTranscript(items, fullText).filter((f) => !isRetained(f, systemText) && isRetained(f, fullText));
  const seen = new Set();
  const out = [];
  for (const f of facts) {
    const k = `${f.category}${JSON.stringify(f.check)}`;
    if (seen.has(k)) continue;
    seen.add(k);
    out.push({ id: `${f.category}-${out.length + 1}`, where: 'mined', ...f });
  }
  return out;
}
