// The retention checks of the quality benchmark, in one place. A fact carries its own check
// (written by the generator, by the miner of real sessions, or by whoever wrote a session file
// for `--sessions`); this module decides whether a context retains it. The checks look only at
// the text a model would read: every string of the context (system prompt, goal block,
// checkpoint summaries, message text, tool calls and their arguments, tool results, masked or
// offload placeholders), lowercased and with runs of whitespace collapsed to one space.
//
// A check is `{ all?: string[], near?: [a, b, maxChars] }`:
// - `all`: every term occurs somewhere in the context, each as a whole token (a constraint's
//   word `turn` is not in `return`, an identifier `subtree_only` not in `test_subtree_only`);
// - `near`: some occurrence of `a` has an occurrence of `b` at most `maxChars` characters
//   away, on either side (a setting's name next to its value), each as a whole token: a value
//   `on` inside `config` is not the value.
// Both parts must hold when both are given. A `changing value` fact checks its LATEST value
// next to the setting's name; its `stale` values are recorded so that a context that states
// only an outdated value can be counted apart ("stale only"): that is a wrong answer, not
// just a forgotten one.

/** Categories in report order; `task`, `url`, `ident` and `test` come from the real sessions only. */
export const CATEGORIES = [
  { id: 'error', label: 'error' },
  { id: 'path', label: 'path' },
  { id: 'decision', label: 'decision' },
  { id: 'locked', label: 'locked decision' },
  { id: 'constraint', label: 'constraint' },
  { id: 'pending', label: 'pending task' },
  { id: 'value', label: 'changing value' },
  { id: 'task', label: 'task identifier' },
  { id: 'url', label: 'url' },
  { id: 'ident', label: 'identifier' },
  { id: 'test', label: 'test result' },
];

/** How each category is checked, for the report. */
export const CHECK_RULES = {
  error: 'the error code or exception type and its distinctive identifier (constraint name, key, module, port, …) all occur (mined: the exception type or lint code and the least frequent quoted string or identifier of its message)',
  path: 'the exact file path occurs (mined: the shortest form with a directory that the agent used)',
  decision: 'the chosen option and the rejected one both occur',
  locked: 'the chosen option and its subject both occur (planted as `[DECISION] … - LOCKED` in assistant text)',
  constraint: 'the key terms of the instruction occur (generated: the command and environment, function, secret name, directory, feature flag or runtime version it is about; mined: the three least frequent words of 4+ letters or identifiers of the sentence)',
  pending: 'the key terms of the open task occur (what to do and what it is about)',
  value: "the setting's name with its latest value within 80 characters; an earlier value there without the latest is counted as stale",
  task: 'the identifier from the task statement occurs',
  url: 'the exact URL occurs',
  ident: 'the identifier (commit hash, issue or ticket id, environment variable name) occurs',
  test: "the test's name with its latest result within 60 characters; an earlier result there without the latest is counted as stale",
};

export const normalize = (text) => String(text).toLowerCase().replace(/\s+/g, ' ');

const SKIP_KEYS = new Set(['type', 'id', 'tool_use_id', 'toolUseId', 'tool_call_id', 'signature', 'origin', 'contentForm', 'role', 'cache_control', 'extras', 'isError', 'is_error']);

/** Every string of a value, but ids, types and provider bookkeeping (JSON-string arguments are read parsed too). */
function strings(value, out) {
  const walk = (v, key) => {
    if (typeof v === 'string') {
      out.push(v);
      if (key === 'arguments' && v.trimStart().startsWith('{')) {
        try {
          walk(JSON.parse(v));
        } catch {
          // not JSON: the raw string is already in
        }
      }
    } else if (Array.isArray(v)) v.forEach((x) => walk(x));
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) if (!SKIP_KEYS.has(k)) walk(x, k);
  };
  walk(value);
  return out;
}

/**
 * The text a model reads in a context: the system prompt and, per message, its content
 * (text, tool calls with their arguments, tool results, placeholders, checkpoint summaries).
 * Works on Anthropic, OpenAI and canonical messages alike. Provider fields that are not sent
 * as content (SWE-agent's `thought`/`action` extras, ids, cache markers) are not read.
 */
export function contextText({ system, messages }) {
  const out = [];
  if (system !== undefined && system !== null) strings(system, out);
  for (const m of messages ?? []) {
    if (m.content !== undefined && m.content !== null) strings(m.content, out);
    if (Array.isArray(m.blocks)) strings(m.blocks, out);
    if (Array.isArray(m.tool_calls)) for (const c of m.tool_calls) strings({ name: c.function?.name, arguments: c.function?.arguments }, out);
  }
  return normalize(out.join('\n'));
}

const WORD = /[A-Za-z0-9_]/;
/**
 * Where `term` occurs in `text` as a whole token: not inside a longer word (a value `on` is not in `config`, nor
 * `8` in `18`). A term that starts or ends with punctuation is bounded there by itself. At most `limit` of them.
 */
function positions(text, term, limit = Infinity) {
  const found = [];
  const open = WORD.test(term[0] ?? '');
  const close = WORD.test(term[term.length - 1] ?? '');
  for (let i = text.indexOf(term); i !== -1; i = text.indexOf(term, i + 1)) {
    if (open && i > 0 && WORD.test(text[i - 1])) continue;
    if (close && WORD.test(text[i + term.length] ?? '')) continue;
    found.push(i);
    if (found.length >= limit) break;
  }
  return found;
}

/** Whether `term` occurs in `text` as a whole token. */
const occurs = (text, term) => positions(text, term, 1).length > 0;

/** `a` and `b` both occur, each as a whole token, with at most `max` characters between them (either order). */
export function near(text, a, b, max) {
  const na = normalize(a);
  const nb = normalize(b);
  const bs = positions(text, nb);
  if (bs.length === 0) return false;
  return positions(text, na).some((i) => bs.some((j) => (j >= i ? j - (i + na.length) : i - (j + nb.length)) <= max));
}

/** Whether the normalized context text retains the fact. */
export function isRetained(fact, text) {
  const check = fact.check ?? {};
  if (Array.isArray(check.all) && !check.all.every((term) => occurs(text, normalize(term)))) return false;
  if (Array.isArray(check.near)) {
    const [a, b, max = 80] = check.near;
    if (!near(text, a, b, max)) return false;
  }
  return Boolean(check.all?.length || check.near);
}

/** A changing value whose latest value is gone but an earlier one is still stated next to the name. */
export function isStaleOnly(fact, text) {
  if (!Array.isArray(fact.stale) || !Array.isArray(fact.check?.near)) return false;
  if (isRetained(fact, text)) return false;
  const [a, , max = 80] = fact.check.near;
  return fact.stale.some((v) => near(text, a, v, max));
}

/** Validates a fact read from a session file; returns a problem or null. */
export function factProblem(fact) {
  if (!fact || typeof fact !== 'object') return 'not an object';
  if (!CATEGORIES.some((c) => c.id === fact.category)) return `unknown category ${JSON.stringify(fact.category)}`;
  const check = fact.check;
  if (!check || typeof check !== 'object') return 'no check';
  const allOk = check.all === undefined || (Array.isArray(check.all) && check.all.every((t) => typeof t === 'string' && t.trim()));
  const nearOk = check.near === undefined || (Array.isArray(check.near) && typeof check.near[0] === 'string' && typeof check.near[1] === 'string');
  if (!allOk || !nearOk || !(check.all?.length || check.near)) return 'check needs `all: [terms]` and/or `near: [a, b, maxChars]`';
  return null;
}
