/**
 * The ledger's recognizers for values that change and outcomes: URLs, hashes, ticket ids,
 * `name=value` settings and `pkg@version` pins, test results, a command's exit status, what a
 * shell command does to a path, the user's constraints, todo lists. General properties of shell
 * output, code and language; linear-time scans (every tool output reaches them).
 */
import { isRecord, pathArg } from './rules';
import { trimEnds, trimTrailing } from '../engine/text-scan';

const URL_RE = /\bhttps?:\/\/[^\s<>"'`)\]}]+/g;

/** `http(s)://…` URLs, trailing punctuation trimmed. */
export function urlsIn(line: string): string[] {
  const out: string[] = [];
  for (const m of line.matchAll(URL_RE)) {
    const u = trimTrailing(m[0], '.,;:!?');
    if (u.length >= 12 && u.length <= 300) out.push(u);
  }
  return out;
}

const HEX_TOKEN = /(?<![\w./:-])[0-9a-f]{7,40}(?![\w/-])/g;
const UUID = /(?<![\w-])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![\w-])/gi;

/** Commit hashes and content ids (7–40 hex digits with letters and digits both), and UUIDs. */
export function hashesIn(line: string): string[] {
  const out: string[] = [];
  for (const m of line.matchAll(HEX_TOKEN)) {
    const t = m[0];
    if (/[a-f]/.test(t) && /\d/.test(t)) out.push(t);
  }
  for (const m of line.matchAll(UUID)) out.push(m[0].toLowerCase());
  return out;
}

const TICKET = /(?<![\w-])[A-Z][A-Z0-9]{1,9}-\d{1,6}(?![\w-])/g;
const ISSUE_REF = /(?<![\w&#])#\d{2,6}\b/g;

/** Ticket ids (`PROJ-123`) and issue references (`#1234`). Words that only look like one (`UTF-8`, `SHA-256`, `ISO-8601`) are not. */
export function ticketIdsIn(line: string): string[] {
  const out: string[] = [];
  for (const m of line.matchAll(TICKET)) {
    const [prefix, number] = m[0].split('-');
    if (/^(?:UTF|SHA|MD|ISO|RFC|CVE|X|TLS|SSL|HTTP|IPV|AES|RSA|ES|EC|P|H|GPT|V|R|U|W|T|PEP)$/.test(prefix) && !(prefix === 'CVE' && number.length >= 4)) continue;
    out.push(m[0]);
  }
  for (const m of line.matchAll(ISSUE_REF)) out.push(m[0]);
  return out;
}

export interface SettingMention {
  name: string;
  separator: string;
  value: string;
  /** A package pin (`pkg@1.2.3`, `pkg==1.2.3`, `"pkg": "^1.2.3"`). */
  version: boolean;
}

const VERSION_VALUE = /^[~^=<>v]*\d+(?:\.\d+){1,3}(?:[-+.][\w.]+)?$/;
// Each starts with the character before the match (or the line start) instead of a look-behind, so the linter can prove it linear.
const AT_VERSION = /(^|[^\w/.@-])(@?[a-z0-9][\w.-]*(?:\/[\w.-]+)?)@([~^]?\d[\w.-]*)/gi;
const PIP_PIN = /(^|[^\w.-])([A-Za-z][\w.-]*)(==|>=|~=)(\d[\w.]*)/g;
const ASSIGN = /(^|[^\w.$/:-])(--?[a-z][\w-]*|[A-Za-z_@][\w./-]*)["']?\s?(=|:)\s?("[^"\n]*"|'[^'\n]*'|[^\s,;'"`()[\]{}<>]+)/g;

const isScreaming = (name: string) => /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/.test(name);
const isConfigKey = (name: string) => isScreaming(name) || name.startsWith('-') || /^[a-z][a-z0-9]*(?:[.-][a-z0-9]+)+$/.test(name);
/** A value that reads as configuration, not code: a number, a quoted string, a boolean, a version. */
const isConfigValue = (raw: string) => /^["']/.test(raw) || /^-?\d/.test(raw) || /^(?:true|false|on|off|yes|no)$/i.test(raw) || /^v?\d+\.\d+/.test(raw);
const isLiteral = (value: string) =>
  /^["']/.test(value) || /^-?\d/.test(value) || /^(?:true|false|on|off|yes|no|null|none)$/i.test(value) || /^[\w.:/@-]+$/.test(value);

/**
 * Settings and pins of a line: `NAME=value` (env files, exports, flags), `--flag=value`,
 * `key: value` and `key = value` in config syntax, `pkg@1.2.3`, `pkg==1.2.3`, `"pkg": "^1.2.3"`.
 * Outside the user's and the agent's own words (`loose` false) only names that look like
 * configuration count (SCREAMING_SNAKE, dotted or dashed keys, flags) and values that are literals.
 */
export function settingsIn(line: string, loose: boolean): SettingMention[] {
  const out: SettingMention[] = [];
  if (line.length > 400) return out;
  for (const m of line.matchAll(AT_VERSION)) {
    const [, , name, raw] = m;
    const value = trimTrailing(raw, '.-');
    if (/^[~^]?\d+(?:\.\d+){0,3}(?:-[\w.]+)?$/.test(value) && (!name.includes('/') || name.startsWith('@'))) out.push({ name, separator: '@', value, version: true });
  }
  for (const m of line.matchAll(PIP_PIN)) out.push({ name: m[2], separator: m[3], value: trimTrailing(m[4], '.'), version: true });
  for (const m of line.matchAll(ASSIGN)) {
    const [, lead, name, sep, raw] = m;
    const start = (m.index ?? 0) + lead.length;
    if (name.includes('/') && !name.startsWith('@')) continue; // a path, not a key
    const after = line[(m.index ?? 0) + m[0].length];
    if (sep === ':' && (raw.startsWith('//') || (!/^\d+$/.test(raw) && raw.includes(':')))) continue; // URLs, times, `a:b:c`
    if (sep === '=' && (after === '=' || line[start + name.length + 1] === '=' || line[start + name.length] === '=' && line[start + name.length + 1] === '=')) continue;
    const value = raw.startsWith('"') || raw.startsWith("'") ? raw.slice(1, -1) : trimTrailing(raw, '.');
    if (!value || value.length > 80) continue;
    const versionPin = /^["']/.test(raw) && VERSION_VALUE.test(value) && /^@?[a-z0-9][\w./-]*$/i.test(name) && !isScreaming(name);
    if (versionPin) {
      out.push({ name, separator: sep === ':' ? ': ' : '=', value, version: true });
      continue;
    }
    if (!isLiteral(raw)) continue;
    // `word: value` is prose or a log field, and `name = call` is code, unless the key and the value look like configuration.
    if ((!loose || sep === ':') && !isConfigKey(name)) continue;
    if (!loose && !isScreaming(name) && !isConfigValue(raw)) continue;
    if (name.length < 3 || /^(?:https?|file|ftp|self|this|true|false)$/i.test(name) || /^(?:self|this|cls)\./.test(name)) continue;
    out.push({ name, separator: sep === ':' ? ': ' : '=', value, version: false });
  }
  return out;
}

/**
 * A package manager's line about a dependency of a dependency: pip prints the chain that pulled a
 * requirement in as `(from parent==1.0->project==2.0)`. The range on such a line is the parent's
 * requirement, not a pin of the project (the project's own pins are on the lines whose `(from …)`
 * names the project alone). Real trace: swe-agent marshmallow-1867__function_calling_replace_from_source,
 * where `pip install -e .[dev]` printed 20 such ranges that outranked setup.py's own pins.
 */
export function isTransitiveRequirement(line: string): boolean {
  const from = line.indexOf('(from ');
  if (from < 0) return false;
  const close = line.indexOf(')', from);
  const arrow = line.indexOf('->', from);
  return arrow > from && (close < 0 || arrow < close);
}

export interface TestResult {
  name: string;
  result: 'passed' | 'failed' | 'error' | 'skipped';
}

const PYTEST_PREFIX = /^(PASSED|FAILED|ERROR|SKIPPED)\s+([\w./-]+\.py::[\w:[\]./-]+)/;
const GO_TEST = /^\s*--- (PASS|FAIL|SKIP): (\S+)/;
const JEST_FILE = /^(PASS|FAIL)\s+(\S+\.(?:spec|test)\.[cm]?[jt]sx?)\b/;
const UNITTEST = /^(test\w*) \(([\w.]+)\)(?:\s+\.\.\.)?\s+(ok|FAIL|ERROR|skipped)\b/;
const RUST_TEST = /^test (\S+) \.\.\. (ok|FAILED|ignored)\b/;

const RESULT: Record<string, TestResult['result']> = {
  PASSED: 'passed', PASS: 'passed', ok: 'passed', XPASS: 'passed',
  FAILED: 'failed', FAIL: 'failed',
  ERROR: 'error',
  SKIPPED: 'skipped', SKIP: 'skipped', skipped: 'skipped', ignored: 'skipped', XFAIL: 'skipped',
};

/** Test ids with their result, as pytest, Go, Jest/Vitest, unittest and cargo print them. */
export function testResultsIn(line: string): TestResult[] {
  const out: TestResult[] = [];
  const t = line.trim();
  let m = PYTEST_PREFIX.exec(t);
  if (m) return [{ name: m[2], result: RESULT[m[1]] }];
  if ((m = GO_TEST.exec(line))) return [{ name: m[2], result: RESULT[m[1]] }];
  if ((m = JEST_FILE.exec(t))) return [{ name: m[2], result: RESULT[m[1]] }];
  if ((m = UNITTEST.exec(t))) return [{ name: `${m[2]}.${m[1]}`, result: RESULT[m[3]] }];
  if ((m = RUST_TEST.exec(t))) return [{ name: m[1], result: RESULT[m[2]] }];
  // pytest -v: `tests/test_a.py::test_b PASSED` (a scan over the words: the node id holds `.py::`).
  if (!t.includes('.py::')) return out;
  const words = t.split(/\s+/);
  for (let i = 0; i + 1 < words.length; i++) {
    const result = RESULT[words[i + 1]];
    if (words[i].includes('.py::') && result && /^(?:PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)$/.test(words[i + 1])) out.push({ name: words[i], result });
  }
  return out;
}

const EXIT_LINE = /\b(?:exit(?:ed)? with (?:code|status)|exit (?:code|status)|exit_code|exitcode|returncode|return code)\s?[:=]?\s?(-?\d{1,3})\b/i;

/** A command's exit status from its output: the exit code it reports, or `failed` for an error result. */
export function exitStatusOf(text: string, isError: boolean): string | undefined {
  const tail = text.length > 2_000 ? text.slice(-2_000) : text;
  const m = EXIT_LINE.exec(tail);
  if (m) return m[1] === '0' ? 'exit 0' : `exit ${m[1]}`;
  return isError ? 'failed' : undefined;
}

export type ShellPathOperation = { path: string; op: 'read' | 'created' | 'edited' | 'deleted' };

/**
 * What a shell command does to files, segment by segment (`&&`, `||`, `;`, `|`): `>`/`>>`
 * redirections, `touch`, `tee`, `rm`, `mv`/`cp` (the destination), `sed -i`, and reads (`cat`,
 * `head`, `tail`, `less`, `open`). `/dev/…` and `$VARIABLES` are not files.
 */
export function pathOperationsOf(command: string): ShellPathOperation[] {
  const out: ShellPathOperation[] = [];
  const push = (raw: string | undefined, op: ShellPathOperation['op']) => {
    if (!raw) return;
    const p = pathArg(trimEnds(raw, '\'"`', '\'"`'));
    if (p && !p.startsWith('/dev/') && !p.startsWith('$')) out.push({ path: p, op });
  };
  for (const segment of command.split(/&&|\|\||;|\||\n/)) {
    const words = segment.trim().split(/\s+/).filter((w) => w.length > 0);
    if (words[0] === 'sudo') words.shift();
    const args: string[] = [];
    for (let i = 1; i < words.length; i++) {
      const w = words[i];
      // `> file`, `>> file`, `>file`, `2>/dev/null`
      const at = w.indexOf('>');
      if (at >= 0 && /^\d?$/.test(w.slice(0, at).replace('&', ''))) {
        const append = w[at + 1] === '>';
        const target = w.slice(at + (append ? 2 : 1)) || words[++i];
        if (!w.startsWith('2')) push(target, append ? 'edited' : 'created');
        continue;
      }
      if (w === '<') {
        i++;
        continue;
      }
      args.push(w);
    }
    const [cmd] = words;
    const plain = args.filter((a) => !a.startsWith('-'));
    switch (cmd) {
      case 'rm':
        plain.forEach((a) => push(a, 'deleted'));
        break;
      case 'touch':
      case 'tee':
      case 'create':
        plain.forEach((a) => push(a, 'created'));
        break;
      case 'mv':
      case 'cp':
        if (plain.length >= 2) push(plain[plain.length - 1], 'created');
        break;
      case 'sed':
        if (args.some((a) => a.startsWith('-i')) && plain.length >= 2) push(plain[plain.length - 1], 'edited');
        break;
      case 'cat':
      case 'head':
      case 'tail':
      case 'less':
      case 'open':
        plain.forEach((a) => push(a, 'read'));
        break;
      case 'edit':
        push(plain[0], 'edited');
        break;
      default:
        break;
    }
  }
  return out;
}

const DECISION_VERB = /\b(?:decided|decision|chose|chosen|opted|agreed|settled on|going with|will use|we use)\b/i;
const NEXT_LINE = /^(?:next steps?|todo|remaining)\s*:\s*(\S.*)$/i;
const NEXT_HEADING = /^#*\s?\**(?:next steps?|pending tasks|remaining work|todo)\**:?$/i;
const BULLET = /^(?:[-*+•]|\d{1,3}[.)])\s+/;

/**
 * What an agent's prose (or a summary) says was chosen and what is left: sentences with a verb of
 * choosing (decided, chose, opted, settled on, going with, will use), `Next steps:` lines and the
 * items of a `Next steps` list. General English and Markdown structure, not phrasings.
 */
export function choicesAndNextSteps(text: string): { decisions: string[]; next: string[] } {
  const decisions: string[] = [];
  const next: string[] = [];
  let underNext = false;
  let inFence = false;
  for (const raw of text.split(/\r?\n/)) {
    const trimmed = raw.trim();
    if (trimmed.startsWith('```') || trimmed.startsWith('~~~')) {
      inFence = !inFence;
      continue;
    }
    if (inFence) continue;
    const line = trimmed.replace(BULLET, '').trim();
    if (!line) {
      underNext = false;
      continue;
    }
    if (line.startsWith('[GOAL]') || line.startsWith('[CHECKPOINT]') || line.startsWith('[DECISION]') || line.startsWith('[ARTIFACT]') || line.startsWith('[NEXT]')) continue;
    if (NEXT_HEADING.test(line)) {
      underNext = true;
      continue;
    }
    const m = NEXT_LINE.exec(line);
    if (m) next.push(m[1]);
    else if (underNext && BULLET.test(trimmed)) next.push(line);
    else {
      underNext = false;
      for (const sentence of splitSentences(line)) if (DECISION_VERB.test(sentence) && sentence.trim().length <= 300) decisions.push(sentence.trim());
    }
  }
  return { decisions, next };
}

/** Words that make a sentence binding (must, never, only, …) and words that make it a request or a preference (should, please, keep, …). */
const STRONG_MODAL = new Set("must mustn't never always don't dont cannot can't shouldn't only avoid required forbidden".split(' '));
const STRONG_PAIRS = new Set(['do not', 'must not', 'should not', 'no longer', 'at most', 'at least']);
const SOFT_MODAL = new Set('should please keep stay ensure need needs require requires prefer without instead exactly'.split(' '));
const SOFT_PAIRS = new Set(['make sure']);

/**
 * Sentences of the user's own words that constrain the work: those with a deontic or negating
 * word (must, never, always, don't, only, should, avoid, keep, without, please, …). Verbatim, at
 * most 300 characters each. The English modal system is a general property of the language, not
 * a list of phrasings.
 */
export function constraintSentences(text: string): { text: string; strong: boolean }[] {
  const out: { text: string; strong: boolean }[] = [];
  for (const raw of splitSentences(text)) {
    const s = raw.trim();
    if (s.length < 8 || s.length > 300) continue;
    const words = s.toLowerCase().replace(/\u2019/g, "'").replace(/[^a-z' ]+/g, ' ').split(' ').filter(Boolean);
    let strong = false;
    let soft = false;
    for (let i = 0; i < words.length && !strong; i++) {
      const pair = i + 1 < words.length ? `${words[i]} ${words[i + 1]}` : '';
      if (describesNotBinds(words, i)) continue;
      strong = STRONG_MODAL.has(words[i]) || STRONG_PAIRS.has(pair);
      soft ||= SOFT_MODAL.has(words[i]) || SOFT_PAIRS.has(pair);
    }
    if (strong || soft) out.push({ text: s, strong });
  }
  return out;
}

const COPULA = new Set("is are was were be been being isn't aren't wasn't weren't".split(' '));

const IRREGULAR_PARTICIPLES = new Set('been done gone had made got run seen set put read left built sent kept lost found meant held brought caught taught thought bought'.split(' '));

/** Regular participles (-ed) and the -en/-wn ones (broken, shown), plus the common irregular ones. */
function isPastParticiple(word: string | undefined): boolean {
  if (!word || word.length < 3) return false;
  return word.endsWith('ed') || word.endsWith('en') || word.endsWith('wn') || IRREGULAR_PARTICIPLES.has(word);
}

/**
 * English uses two of the binding words to describe rather than to bind: "must have" with a past
 * participle infers ("so that must have worked"), and "no longer" after a form of "be" states a
 * condition ("since it is no longer needed"). Neither asks anything of the agent (both seen in the
 * demonstration SWE-agent sends in its first user message, pydicom-1458__gpt4.traj).
 */
function describesNotBinds(words: string[], i: number): boolean {
  // "must have" + a noun still binds ("you must have a test for it"): only a past participle makes it an inference.
  if (words[i] === 'must' && words[i + 1] === 'have' && isPastParticiple(words[i + 2])) return true;
  if (words[i] === "must've" && isPastParticiple(words[i + 1])) return true;
  if (words[i] === 'no' && words[i + 1] === 'longer' && i > 0 && COPULA.has(words[i - 1])) return true;
  return false;
}

/** Sentences and list items: split at line ends and after `.`, `!` or `?` followed by a space. */
function splitSentences(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    let start = 0;
    for (let i = 0; i < line.length; i++) {
      const c = line[i];
      if ((c === '.' || c === '!' || c === '?') && (i + 1 === line.length || line[i + 1] === ' ')) {
        out.push(line.slice(start, i + 1));
        start = i + 1;
      }
    }
    if (start < line.length) out.push(line.slice(start));
  }
  return out;
}

/** A todo list (Claude Code's `TodoWrite`, and any tool input with `todos: [{ content, status }]`). */
export function todosOf(todos: unknown[]): { text: string; state: string }[] {
  const out: { text: string; state: string }[] = [];
  for (const t of todos.slice(0, 100)) {
    if (!isRecord(t)) continue;
    const text = typeof t.content === 'string' ? t.content : typeof t.text === 'string' ? t.text : typeof t.title === 'string' ? t.title : undefined;
    if (!text) continue;
    const status = typeof t.status === 'string' ? t.status.toLowerCase() : 'pending';
    out.push({ text, state: status === 'completed' || status === 'done' ? 'done' : status === 'in_progress' ? 'in progress' : 'open' });
  }
  return out;
}
