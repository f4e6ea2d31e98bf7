/**
 * The pinned-facts ledger (SPEC.md "Reliability score (seed 004)"): after a compaction, the
 * facts an agent cannot afford to lose are extracted from the compacted span by fixed rules,
 * and checked against the new context; the share that survived is the context confidence.
 *
 * The rules here share no code with any summarizer (the local extractive summarizer, the
 * checkpoint facts): a ledger built by the summarizer's own rules would always "survive" its
 * summary and measure nothing. Only the goal-marker grammar is shared, since it is the
 * session's protocol and not a summarizer. Everything is pure and deterministic.
 *
 * Every fact's value is a verbatim piece of the span (modulo case and whitespace), so the
 * context the span came from always holds every fact (share 1) and only a compaction that
 * dropped a fact can make it miss.
 */
import { extractGoalMarkers } from '../engine/goal-markers';
import { CanonicalMessage, ToolResultContent } from '../messages/canonical';
import { isListingLine, trimTrailing } from '../engine/text-scan';

export type PinnedFactKind = 'locked-decision' | 'error-code' | 'path' | 'command' | 'identifier' | 'number';

/**
 * The ledger's priority when it is over its cap, highest first: a locked decision is a promise
 * to the user; an error code names the problem being worked on; paths and commands are what an
 * agent needs to act again; identifiers and numbers are the most numerous and the cheapest to
 * rediscover.
 */
export const PINNED_FACT_PRIORITY: readonly PinnedFactKind[] = ['locked-decision', 'error-code', 'path', 'command', 'identifier', 'number'];

export interface PinnedFact {
  kind: PinnedFactKind;
  value: string;
  /** The seq of the latest message that mentioned the fact, when seqs are known. */
  seq?: number;
}

export interface PinnedFactsOptions {
  /** At most this many facts (default 300). */
  maxFacts?: number;
  /** At most this many facts of a kind (defaults: DEFAULT_MAX_PINNED_FACTS_PER_KIND). */
  maxPerKind?: Partial<Record<PinnedFactKind, number>>;
  /** The seq of `messages[0]`; message i then has seq `firstSeq + i`. A message's own numeric `seq` field wins. */
  firstSeq?: number;
}

export const DEFAULT_MAX_PINNED_FACTS = 300;

/** Per-kind caps, so that no kind (identifiers in a code-heavy span) crowds out the others. */
export const DEFAULT_MAX_PINNED_FACTS_PER_KIND: Readonly<Record<PinnedFactKind, number>> = Object.freeze({
  'locked-decision': 300,
  'error-code': 60,
  path: 100,
  command: 60,
  identifier: 120,
  number: 60,
});

// ---------------------------------------------------------------------------------------------
// Where a fact was seen, and what that is worth

/**
 * - `said`: the agent's or the user's own words, a tool call's path or command;
 * - `error`: an error line of a tool output (or of an observation sent as user text);
 * - `code`: code the agent or user wrote (fenced blocks, edit payloads) of at most 40 lines;
 * - `output`: anything else a tool printed (file dumps, listings, logs) and longer code.
 * A fact seen only in `output` does not enter the ledger, so a file listing or a code dump
 * cannot drown it; `output` occurrences still add (a little) weight to facts seen elsewhere.
 */
type Source = 'said' | 'error' | 'code' | 'output';
const WEIGHT: Record<Source, number> = { said: 3, error: 3, code: 1, output: 0.25 };
/** Longer code blocks and tool-call payloads count as dumps (`output`). */
const MAX_CODE_LINES = 40;
const MAX_COMMAND_CHARS = 120;

interface Entry {
  kind: PinnedFactKind;
  key: string;
  /** Spellings seen, with how often and when first: the most frequent spelling is the value. */
  spellings: Map<string, { count: number; first: number }>;
  weight: number;
  admitted: boolean;
  lastIndex: number;
  lastSeq?: number;
}

const collapse = (s: string) => s.replace(/\s+/g, ' ').trim();
const keyOf = (s: string) => collapse(s).toLowerCase();

class FactCollector {
  readonly entries = new Map<string, Entry>();
  private order = 0;
  index = 0;
  seq: number | undefined;

  add(kind: PinnedFactKind, raw: string, source: Source): void {
    const value = collapse(raw);
    if (!value) return;
    const key = keyOf(value);
    const id = `${kind}\u0000${key}`;
    let entry = this.entries.get(id);
    if (!entry) {
      entry = { kind, key, spellings: new Map(), weight: 0, admitted: false, lastIndex: -1 };
      this.entries.set(id, entry);
    }
    const spelling = entry.spellings.get(value);
    if (spelling) spelling.count += 1;
    else entry.spellings.set(value, { count: 1, first: this.order++ });
    entry.weight += WEIGHT[source];
    if (source !== 'output') entry.admitted = true;
    if (this.index >= entry.lastIndex) {
      entry.lastIndex = this.index;
      entry.lastSeq = this.seq;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Rules: error codes

const EXCEPTION_NAME = /\b[A-Z][A-Za-z0-9]*(?:Error|Exception|Warning)\b/g;
const LINT_CODE = /\b(?:E\d{3,5}|TS\d{4,5})\b/g;
const ERRNO_NAME =
  /\bE(?:CONNREFUSED|CONNRESET|CONNABORTED|ADDRINUSE|ADDRNOTAVAIL|ACCES|NOENT|PERM|PIPE|TIMEDOUT|EXIST|NOTDIR|ISDIR|MFILE|NFILE|NOTFOUND|AI_AGAIN|HOSTUNREACH|NETUNREACH|NOSPC|BUSY|INVAL|NOTEMPTY|ROFS|NOMEM|XDEV|BADF|DQUOT|NOTSUP|NOTCONN|NAMETOOLONG|LOOP)\b/g;
const NODE_ERROR_CODE = /\bERR_[A-Z0-9_]{3,}\b/g;
const PY_ERRNO = /\bErrno \d{1,4}\b/g;
const EXIT_CODE = /\b(?:exit(?:ed)? with (?:code|status)|exit (?:code|status)|non-zero exit status|return code|exit_code|exitcode)\s?[:=]?\s?-?\d{1,3}\b/gi;
const HTTP_REASONS: Record<string, string> = {
  '400': 'bad request',
  '401': 'unauthorized',
  '402': 'payment required',
  '403': 'forbidden',
  '404': 'not found',
  '405': 'method not allowed',
  '406': 'not acceptable',
  '408': 'request timeout',
  '409': 'conflict',
  '410': 'gone',
  '413': 'payload too large',
  '415': 'unsupported media type',
  '422': 'unprocessable entity',
  '429': 'too many requests',
  '500': 'internal server error',
  '501': 'not implemented',
  '502': 'bad gateway',
  '503': 'service unavailable',
  '504': 'gateway timeout',
};
const HTTP_STATUS_TEXT = new RegExp(`\\b([45]\\d\\d) (${Object.values(HTTP_REASONS).join('|')})\\b`, 'gi');
const HTTP_STATUS_CODE = /\b(?:HTTP(?:\/\d(?:\.\d)?)?|status(?: code)?)[ :=]{1,2}[45]\d\d\b/gi;

function errorCodesIn(line: string): string[] {
  const out: string[] = [];
  for (const re of [EXCEPTION_NAME, LINT_CODE, ERRNO_NAME, NODE_ERROR_CODE, PY_ERRNO, EXIT_CODE, HTTP_STATUS_CODE]) {
    for (const m of line.matchAll(re)) out.push(m[0]);
  }
  for (const m of line.matchAll(HTTP_STATUS_TEXT)) {
    if (HTTP_REASONS[m[1]] === m[2].toLowerCase()) out.push(m[0]);
  }
  return out;
}

const isErrorCodeName = (token: string) => /^(?:[A-Z][A-Za-z0-9]*(?:Error|Exception|Warning)|ERR_[A-Z0-9_]{3,}|E\d{3,5}|TS\d{4,5})$/.test(token);

// ---------------------------------------------------------------------------------------------
// Rules: paths

const URL = /\b[a-z][a-z0-9+.-]*:\/\/\S*/gi;
const PATH_TOKEN = /(?<![\w.@+~/\\-])(?:[A-Za-z]:\\|~\/|\.{1,2}\/|\/)?[\w@+-][\w.@+-]*(?:[/\\][\w.@+-]+)*\/?/g;

/** File extensions that make a single name (`setup.py`) a path; with a directory, any short extension does. */
const FILE_EXTENSIONS = new Set(
  (
    'py pyi pyx ipynb ts tsx mts cts js jsx mjs cjs json jsonl ndjson yaml yml toml ini cfg conf env lock md mdx rst txt ' +
    'html htm css scss sass less vue svelte astro sh bash zsh fish ps1 bat cmd go mod sum rs java kt kts scala groovy gradle ' +
    'c h cc cpp cxx hpp hh cs fs vb rb erb php swift m mm dart lua pl pm r jl ex exs erl hrl hs ml mli clj zig nim ' +
    'sql prisma proto graphql gql xml xsd csv tsv parquet db sqlite sqlite3 log out err diff patch traj ' +
    'dockerfile tf tfvars hcl nix mk cmake make png jpg jpeg gif svg webp ico pdf zip tar gz tgz bz2 xz whl jar war so dll dylib exe wasm ' +
    'pem crt key pub service socket plist dcm npy npz pkl pt onnx safetensors'
  ).split(' '),
);
const FRAMEWORK_NAMES = /^(?:node|next|vue|nuxt|three|d3|chart|express|react|angular|ember|backbone|alpine|solid)\.js$/i;

/** The path a token names, or undefined: a name with a file extension, or a rooted path of at least two segments; never a URL. */
function pathOf(token: string): string | undefined {
  let p = trimTrailing(token, '.,;:');
  if (p.length < 3 || p.length > 240 || p.includes('@')) return undefined;
  if (!/[A-Za-z]/.test(p)) return undefined;
  const drive = /^[A-Za-z]:\\/.test(p);
  if (p.includes('\\') && !drive) return undefined;
  if (p.startsWith('./')) p = p.slice(2);
  const rooted = drive || p.startsWith('/') || p.startsWith('~/') || p.startsWith('../');
  const segments = p.split(/[/\\]/).filter((s) => s.length > 0 && s !== '~' && s !== '..' && s !== '.' && !/^[A-Za-z]:$/.test(s));
  if (segments.length === 0) return undefined;
  const last = segments[segments.length - 1];
  const ext = /^[^.]+(?:\.[^.]+)*\.([A-Za-z][A-Za-z0-9]{0,9})$/.exec(last)?.[1];
  const known = ext !== undefined && FILE_EXTENSIONS.has(ext.toLowerCase());
  const hasExtension = known || (ext !== undefined && segments.length >= 2);
  if (hasExtension) return segments.length === 1 && FRAMEWORK_NAMES.test(p) ? undefined : p;
  if (rooted && segments.length >= 2) return p.replace(/\/$/, '');
  return undefined;
}

/** Paths of a line, and the line with them (and URLs) blanked for the other rules. */
function takePaths(line: string): { paths: string[]; rest: string } {
  const noUrls = line.replace(URL, (m) => ' '.repeat(m.length));
  const paths: string[] = [];
  const rest = noUrls.replace(PATH_TOKEN, (m) => {
    const p = pathOf(m);
    if (!p) return m;
    paths.push(p);
    return ' '.repeat(m.length);
  });
  return { paths, rest };
}

// ---------------------------------------------------------------------------------------------
// Rules: identifiers

/** A token glued to a hyphen or a slash is part of a name or path (`SWE-agent__test-repo`), not an identifier. */
const IDENT_TOKEN = /(?<![\w$/\\-])[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)*(?![\w/]|-\w)/g;
/** `file.Then` is a sentence with its space missing, not a dotted name. */
const SENTENCE_STARTERS = new Set(
  (
    'A An The This That These Those Then Now Next First Second Third Finally Let Lets We I It Its If In On At To So But And Or ' +
    'However Also After Before Upon Once One Another Here There When While Since As For With Without Because Although Otherwise ' +
    'Please Note Thus Therefore Instead Looks Seems Great Good Okay OK Yes No Done Perhaps Maybe What Why How Where Which Our My You'
  ).split(' '),
);
const TOP_LEVEL_DOMAINS = new Set('com org net io dev ai co edu gov app cloud info biz me uk de fr eu ch nl'.split(' '));
/** Product and unit names that look like identifiers but are ordinary words of the trade. */
const NOT_IDENTIFIERS = new Set(
  (
    'javascript typescript github gitlab bitbucket postgresql mysql mongodb openai chatgpt powershell youtube linkedin ' +
    'iphone ipad macos ios numpy scipy pypi pytorch tensorflow devops graphql nodejs webassembly vscode ' +
    'ghz mhz khz kib mib gib tib kb mb gb mbps gbps'
  ).split(' '),
);

function isIdentifier(token: string): boolean {
  if (token.length < 4 || token.length > 100 || NOT_IDENTIFIERS.has(token.toLowerCase())) return false;
  if ((token.match(/\d/g) ?? []).length >= 5) return false; // hashes, ids, generated names
  if (token.includes('::')) return token.split('::').every((s) => s.length > 0);
  if (token.includes('.')) {
    const segments = token.split('.');
    const last = segments[segments.length - 1];
    if (FILE_EXTENSIONS.has(last.toLowerCase()) && segments.length === 2) return false;
    if (TOP_LEVEL_DOMAINS.has(last) && token === token.toLowerCase()) return false;
    if (segments.filter((s) => s.length === 1).length * 2 > segments.length) return false;
    if (segments.slice(1).some((s) => SENTENCE_STARTERS.has(s))) return false;
    return true;
  }
  if (/^__\w+__$/.test(token)) return true;
  if (/^_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*$/.test(token)) return true; // snake_case, SCREAMING_SNAKE
  if (!/[a-z]/.test(token) || !/[A-Z]/.test(token.slice(1))) return false;
  if (/^[A-Z][A-Z0-9]*s$/.test(token)) return false; // URLs, IDs, PRs
  return /^[A-Za-z][A-Za-z0-9]*$/.test(token); // camelCase, PascalCase with an inner capital
}

// ---------------------------------------------------------------------------------------------
// Rules: numbers

const UNIT_SPACED = 'ms|µs|us|ns|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?|[kKMGT]i?B|bytes?|tokens?|req/s|rps|qps|rpm|px|fps|[kMG]Hz';
const UNIT_TIGHT = '%|x|k|K|M|B';
const NUMBER_WITH_UNIT = new RegExp(`(?<![\\w.:/-])\\d+(?:\\.\\d+)?(?:\\s?(?:${UNIT_SPACED})\\b|(?:${UNIT_TIGHT})(?![\\w%]))`, 'g');
const SETTING = new RegExp(
  `(?<![\\w.-])[A-Za-z_][\\w.-]{1,40} ?[=:] ?-?\\d+(?:\\.\\d+)?(?:\\s?(?:${UNIT_SPACED})\\b|(?:${UNIT_TIGHT})(?![\\w%]))?(?![\\w.:/-])`,
  'g',
);

function numbersIn(line: string): string[] {
  const out: string[] = [];
  const settings = line.replace(SETTING, (m) => {
    out.push(m);
    return ' '.repeat(m.length);
  });
  for (const m of settings.matchAll(NUMBER_WITH_UNIT)) out.push(m[0]);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Rules: commands

const SHELL_LANGUAGES = new Set(['bash', 'sh', 'shell', 'zsh', 'fish', 'console', 'terminal', 'shell-session', 'shellsession', 'powershell', 'ps1', 'pwsh', 'cmd', 'bat']);
/** First words that make an untagged code line a command (the agent typed it, SWE-agent style). */
const COMMAND_WORDS = new Set(
  (
    'ls cd cat grep rg find sed awk head tail wc sort uniq xargs mkdir rm rmdir cp mv touch chmod chown ln echo printf export env which ' +
    'diff patch tar unzip curl wget ssh scp rsync kill ps top df du git gh make cmake python python3 pip pip3 pipx uv poetry pytest tox ' +
    'flake8 mypy black ruff node npm npx yarn pnpm bun deno tsc jest vitest nx eslint prettier cargo rustc go java javac mvn gradle ' +
    'gcc clang dotnet ruby bundle rake php composer docker kubectl helm terraform psql mysql redis-cli sqlite3 sudo apt apt-get brew ' +
    'systemctl journalctl open goto edit create submit find_file search_file search_dir scroll_down scroll_up str_replace_editor'
  ).split(' '),
);
const SHELL_TOOL = /bash|shell|terminal|exec|run|cmd|command|powershell|^sh$|zsh|console/i;
const PATH_ARG = /path|file|dir|folder|cwd|target|source|dest/i;
const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)/;

const stripPrompt = (line: string) => line.replace(/^\s*(?:\$|>|PS>|PS [^>]*>)\s+/, '');

function commandOfLine(line: string, anyFirstWord: boolean): string | undefined {
  const text = collapse(stripPrompt(line));
  if (!text || text.startsWith('#')) return undefined;
  const first = /^(?:sudo\s+)?(\.{0,2}\/[\w./-]+|[A-Za-z][\w.-]*)(?=\s|$)/.exec(text);
  if (!first) return undefined;
  if (!anyFirstWord && !COMMAND_WORDS.has(first[1]) && !first[1].includes('/')) return undefined;
  // `x = 5`, `print(x)`, `def f():` are code, not commands.
  if (/^[\w.]+\s*(?:[=(:{[]|\+=)/.test(text)) return undefined;
  return text.slice(0, MAX_COMMAND_CHARS).trim();
}

/** The first line of a shell command of a tool call (`command`/`cmd`, a string or Codex's argv array). */
function commandOfInput(value: unknown): string | undefined {
  let text: string | undefined;
  if (typeof value === 'string') text = value;
  else if (Array.isArray(value) && value.every((v) => typeof v === 'string')) {
    const argv = value as string[];
    // ["bash", "-lc", "npm test"] runs its last argument.
    text = argv.length >= 3 && /^(?:ba|z)?sh$/.test(argv[0]) && /^-\w*c$/.test(argv[1]) ? argv[argv.length - 1] : argv.join(' ');
  }
  if (text === undefined) return undefined;
  const line = text.split(/\r?\n/).find((l) => l.trim().length > 0);
  return line === undefined ? undefined : collapse(line).slice(0, MAX_COMMAND_CHARS).trim() || undefined;
}

// ---------------------------------------------------------------------------------------------
// Line classification

const ERROR_WORDS =
  /\b(?:errors?|exceptions?|traceback|failed|failures?|fatal|panic(?:ked)?|denied|refused|segmentation fault|no such file|not found|cannot|can't|could not|couldn't|unable to|errno|exit (?:code|status)|non-zero|timed out|aborted)\b/i;
const PYTEST_ERROR = /^(?:E\s{2,}\S|FAILED\b|ERROR\b)/;
const FRAME_LINE = /^\s*(?:File ".*", line \d+|at\s+\S.*(?::\d+|\))\s*$)/;
const NUMBERED_LINE = /^\s*\d+:/;
const INDENTED = /^(?: {4}|\t)/;
const DIFF_HEADER = /^(?:diff --git |index [0-9a-f]+\.\.|(?:\+\+\+|---) (?:[ab]\/|\/dev\/null)|@@ )/;

/** Lines of code in an output (a numbered listing, a diff, `raise`/`except`/`throw` statements) name errors without reporting one. */
const CODE_STATEMENT = /^\s*(?:raise|throw|except|catch|class|def|function|import|from|return|assert|if|elif|else|new|const|let|var|export|public|private|protected|static|interface|@\w+|\}\s*catch)\b/;
const isCodeLine = (line: string, inDiff: boolean) => NUMBERED_LINE.test(line) || (inDiff && /^[+\- ]/.test(line)) || CODE_STATEMENT.test(line);
const isErrorLine = (line: string) => ERROR_WORDS.test(line) || PYTEST_ERROR.test(line) || errorCodesIn(line).length > 0;

interface Line {
  text: string;
  source: Source;
}

/**
 * Lines of a tool output or of user text. Error lines count as `error`, and so does the stack
 * frame that raised (the last `File "…", line N` before the exception line). In a tool output
 * every other line is `output`. User text is the user's own words (`said`), except what is
 * plainly pasted output: numbered file listings, indented blocks, stack frames, diffs and
 * directory listings (SWE-agent sends its observations as user messages).
 */
function classifyNonAssistant(text: string, role: 'user' | 'tool'): Line[] {
  const raw = text.split(/\r?\n/);
  const out: Line[] = raw.map((t) => ({ text: t, source: 'output' as Source }));
  const inDiff = raw.some((l) => l.startsWith('diff --git '));
  let fence: { start: number; marker: string } | undefined;
  const closeFence = (end: number) => {
    if (!fence) return;
    const lines = end - fence.start - 1;
    for (let j = fence.start + 1; j < end; j++) if (out[j].source !== 'error') out[j].source = lines <= MAX_CODE_LINES ? 'code' : 'output';
    fence = undefined;
  };
  for (let i = 0; i < raw.length; i++) {
    const line = raw[i];
    const open = FENCE.exec(line);
    if (role === 'user' && open) {
      if (fence && line.trim().startsWith(fence.marker)) closeFence(i);
      else if (!fence) fence = { start: i, marker: open[1] };
      continue;
    }
    if (!isCodeLine(line, inDiff) && isErrorLine(line)) {
      out[i].source = 'error';
      if (/^\s*[\w.]*(?:Error|Exception)\b/.test(line)) {
        for (let j = i - 1; j >= Math.max(0, i - 3); j--) {
          if (/^\s*File ".*", line \d+/.test(raw[j])) {
            out[j].source = 'error';
            break;
          }
        }
      }
      continue;
    }
    if (role === 'tool' || fence) continue;
    const pasted =
      NUMBERED_LINE.test(line) ||
      INDENTED.test(line) ||
      FRAME_LINE.test(line) ||
      DIFF_HEADER.test(line) ||
      (inDiff && /^[+-]/.test(line)) ||
      isListingLine(line);
    if (!pasted) out[i].source = 'said';
  }
  if (fence) closeFence(raw.length);
  return out.filter((l) => l.text.trim().length > 0);
}

/**
 * Lines of assistant text: prose is `said`; fenced blocks are `code` (or `output` when long).
 * Commands come from shell blocks (`fenced`) and from inline code in prose (`inline`).
 */
function classifyAssistant(text: string, commands: { fenced: string[]; inline: string[] }): Line[] {
  const raw = text.split(/\r?\n/);
  const out: Line[] = [];
  let i = 0;
  while (i < raw.length) {
    const open = FENCE.exec(raw[i]);
    if (!open) {
      out.push({ text: raw[i], source: 'said' });
      i++;
      continue;
    }
    let end = i + 1;
    while (end < raw.length && !raw[end].trim().startsWith(open[1])) end++;
    const body = raw.slice(i + 1, end);
    const language = open[2].toLowerCase();
    if (language === '' || SHELL_LANGUAGES.has(language)) {
      const first = body.find((l) => l.trim().length > 0 && !l.trim().startsWith('#'));
      const command = first === undefined ? undefined : commandOfLine(first, language !== '');
      if (command) commands.fenced.push(command);
    }
    const source: Source = body.length <= MAX_CODE_LINES ? 'code' : 'output';
    for (const l of body) out.push({ text: l, source });
    i = end + 1;
  }
  // Commands quoted inline in prose: "run `npm test`".
  for (const m of text.matchAll(/`([^`\n]{3,200})`/g)) {
    if (!/\s/.test(m[1].trim())) continue;
    const command = commandOfLine(m[1], false);
    if (command) commands.inline.push(command);
  }
  return out.filter((l) => l.text.trim().length > 0);
}

// ---------------------------------------------------------------------------------------------
// Extraction

function scanLine(c: FactCollector, line: string, source: Source): void {
  const errors = errorCodesIn(line);
  for (const e of errors) c.add('error-code', e, source);
  const { paths, rest } = takePaths(line);
  for (const p of paths) c.add('path', p, source);
  for (const n of numbersIn(rest)) c.add('number', n, source);
  for (const m of rest.matchAll(IDENT_TOKEN)) {
    const token = m[0];
    if (isErrorCodeName(token) || !isIdentifier(token)) continue;
    c.add('identifier', token, source);
  }
}

function scanLines(c: FactCollector, lines: Line[]): void {
  for (const l of lines) scanLine(c, l.text, l.source);
}

function toolResultText(content: ToolResultContent): string {
  if (typeof content === 'string') return content;
  return content.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A path argument's value: a name with an extension or with a directory; not a URL, not text. */
function pathArg(value: string): string | undefined {
  const v = value.trim();
  if (!v || /\s/.test(v) || v.length > 240 || /^[a-z][a-z0-9+.-]*:\/\//i.test(v)) return undefined;
  const p = v.startsWith('./') ? v.slice(2) : v;
  return /[/\\]/.test(p.replace(/\/$/, '')) || /\.[A-Za-z][A-Za-z0-9]{0,9}$/.test(p) ? p : undefined;
}

function scanToolInput(c: FactCollector, name: string, input: unknown): void {
  const shell = SHELL_TOOL.test(name);
  const visit = (value: unknown, key: string, depth: number) => {
    if (depth > 6) return;
    if (typeof value === 'string') {
      if (PATH_ARG.test(key)) {
        const p = pathArg(value);
        if (p) {
          c.add('path', p, 'said');
          return;
        }
      }
      const lines = value.split(/\r?\n/);
      const isCommand = shell && (key === 'command' || key === 'cmd');
      const source: Source = isCommand || lines.length === 1 ? 'said' : lines.length <= MAX_CODE_LINES ? 'code' : 'output';
      lines.forEach((l, i) => scanLine(c, l, isCommand && i === 0 ? 'said' : source));
    } else if (Array.isArray(value)) value.forEach((v) => visit(v, key, depth + 1));
    else if (isRecord(value)) for (const k of Object.keys(value).sort()) visit(value[k], k, depth + 1);
  };
  if (isRecord(input)) {
    if (shell) {
      const command = commandOfInput(input.command ?? input.cmd);
      if (command) c.add('command', command, 'said');
    }
    for (const k of Object.keys(input).sort()) visit(input[k], k, 0);
  } else visit(input, '', 0);
}

/**
 * A rooted path that ends with a relative path the span also names (`/testbed/src/a.py` and
 * `src/a.py`) is the same file: it is counted under the relative spelling, the one the agent
 * uses, which the rooted one contains (so survival of the rooted one implies the relative one's).
 */
function mergeRootedPaths(entries: Entry[]): Entry[] {
  const relative = entries.filter((e) => !/^(?:\/|~\/|\.\.\/|[a-z]:\\)/i.test(e.key));
  const byKey = new Map(relative.map((e) => [e.key, e]));
  const kept: Entry[] = [];
  for (const e of entries) {
    if (byKey.has(e.key)) {
      kept.push(e);
      continue;
    }
    const segments = e.key.split('/');
    let target: Entry | undefined;
    for (let i = 1; i < segments.length && !target; i++) target = byKey.get(segments.slice(i).join('/'));
    if (!target) {
      kept.push(e);
      continue;
    }
    target.weight += e.weight;
    target.admitted ||= e.admitted;
    if (e.lastIndex > target.lastIndex) {
      target.lastIndex = e.lastIndex;
      target.lastSeq = e.lastSeq;
    }
  }
  return kept;
}

function valueOf(e: Entry): string {
  let best = '';
  let bestCount = -1;
  let bestFirst = Infinity;
  for (const [spelling, { count, first }] of e.spellings) {
    if (count > bestCount || (count === bestCount && first < bestFirst)) {
      best = spelling;
      bestCount = count;
      bestFirst = first;
    }
  }
  return best;
}

/** Most weight first (how often, and how directly, the span mentioned it), then the latest, then by value. */
function compareEntries(a: Entry, b: Entry): number {
  return b.weight - a.weight || b.lastIndex - a.lastIndex || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
}

/**
 * The pinned-facts ledger of a compacted span: file paths, identifiers, error codes, commands,
 * numbers with units or in settings, and `[DECISION] … - LOCKED` markers. Deterministic,
 * deduplicated (case- and whitespace-insensitively, per kind) and capped: at most `maxFacts`
 * (300), chosen by kind in PINNED_FACT_PRIORITY order, each kind capped as in
 * DEFAULT_MAX_PINNED_FACTS_PER_KIND, and within a kind by weight (mentions, the agent's and the
 * user's own words and error lines weighing most), then the latest. Facts seen only in the
 * bulk of tool outputs are left out. System messages (protected, never compacted) and
 * thinking (the model's scratchpad, which providers drop) are not read.
 */
export function extractPinnedFacts(messages: CanonicalMessage[], options: PinnedFactsOptions = {}): PinnedFact[] {
  const c = new FactCollector();
  // Agents that act through text (SWE-agent, ReAct) write a command in a code block and get its
  // output back as the next user message: that message is read as a tool output.
  let awaitingOutput = false;
  messages.forEach((m, i) => {
    c.index = i;
    const own = (m as { seq?: unknown }).seq;
    c.seq = typeof own === 'number' && Number.isFinite(own) ? own : options.firstSeq !== undefined ? options.firstSeq + i : undefined;
    if (m.role === 'system') return;
    const observation = m.role === 'user' && awaitingOutput;
    awaitingOutput = false;
    let ranTextCommand = false;
    for (const b of m.blocks) {
      if (b.type === 'text') {
        if (m.role === 'assistant') {
          for (const marker of extractGoalMarkers(b.text)) {
            if (marker.kind === 'decision' && marker.locked) c.add('locked-decision', marker.text, 'said');
          }
          const commands = { fenced: [] as string[], inline: [] as string[] };
          scanLines(c, classifyAssistant(b.text, commands));
          for (const command of [...commands.fenced, ...commands.inline]) c.add('command', command, 'said');
          ranTextCommand ||= commands.fenced.length > 0;
        } else scanLines(c, classifyNonAssistant(b.text, m.role === 'tool' || observation ? 'tool' : 'user'));
      } else if (b.type === 'tool_use') {
        scanToolInput(c, b.name, b.input);
      } else if (b.type === 'tool_result') {
        scanLines(c, classifyNonAssistant(toolResultText(b.content), 'tool'));
      }
    }
    awaitingOutput = m.role === 'assistant' && ranTextCommand && !m.blocks.some((b) => b.type === 'tool_use');
  });

  const byKind = new Map<PinnedFactKind, Entry[]>(PINNED_FACT_PRIORITY.map((k) => [k, []]));
  for (const e of c.entries.values()) byKind.get(e.kind)?.push(e);
  byKind.set('path', mergeRootedPaths(byKind.get('path') ?? []));

  const maxFacts = Math.max(0, Math.floor(options.maxFacts ?? DEFAULT_MAX_PINNED_FACTS));
  const out: PinnedFact[] = [];
  for (const kind of PINNED_FACT_PRIORITY) {
    const cap = Math.max(0, Math.floor(options.maxPerKind?.[kind] ?? DEFAULT_MAX_PINNED_FACTS_PER_KIND[kind]));
    const chosen = (byKind.get(kind) ?? []).filter((e) => e.admitted).sort(compareEntries).slice(0, Math.min(cap, maxFacts - out.length));
    for (const e of chosen) {
      const fact: PinnedFact = { kind, value: valueOf(e) };
      if (e.lastSeq !== undefined) fact.seq = e.lastSeq;
      out.push(fact);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Survival

/** Characters of a command that must survive: its start, where a summary quoting it would differ least. */
export const COMMAND_SURVIVAL_CHARS = 60;

export interface FactsSurvival {
  total: number;
  survived: number;
  /** survived / total; 1 for an empty ledger. */
  share: number;
  missing: PinnedFact[];
}

function stringLeaves(value: unknown, out: string[], depth = 0): void {
  if (depth > 8) return;
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) value.forEach((v) => stringLeaves(v, out, depth + 1));
  else if (isRecord(value)) for (const k of Object.keys(value)) stringLeaves(value[k], out, depth + 1);
}

function jsonOf(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return '';
  }
}

/**
 * Every text of a context as sent, one piece a line: text blocks, a tool call's name and JSON
 * input (and the input's strings unescaped, so a command with quotes still reads as typed), tool
 * results, thinking, opaque blocks as JSON. Checkpoint and goal messages are ordinary messages.
 */
export function contextTextOf(messages: CanonicalMessage[]): string {
  const parts: string[] = [];
  for (const m of messages) {
    for (const b of m.blocks) {
      switch (b.type) {
        case 'text':
          parts.push(b.text);
          break;
        case 'tool_use':
          parts.push(`${b.name} ${jsonOf(b.input)}`);
          stringLeaves(b.input, parts);
          break;
        case 'tool_result':
          if (typeof b.content === 'string') parts.push(b.content);
          else for (const p of b.content) parts.push(p.type === 'text' ? p.text : p.type === 'opaque' ? jsonOf(p.raw) : '');
          break;
        case 'thinking':
          parts.push(b.thinking);
          break;
        case 'opaque':
          parts.push(jsonOf(b.raw));
          break;
        default:
          break;
      }
    }
  }
  return parts.join('\n');
}

function needleOf(fact: PinnedFact): string {
  const value = keyOf(fact.value);
  return fact.kind === 'command' ? value.slice(0, COMMAND_SURVIVAL_CHARS).trim() : value;
}

/**
 * Which facts of a ledger the new context still holds: a fact survives when its value occurs in
 * the context's text, case-insensitively and with whitespace collapsed (a command when its first
 * 60 characters do, a locked decision when its text does).
 */
export function checkFactsSurvival(ledger: PinnedFact[], context: { texts: string[] } | string): FactsSurvival {
  const haystack = keyOf(typeof context === 'string' ? context : context.texts.join('\n'));
  const missing = ledger.filter((fact) => !haystack.includes(needleOf(fact)));
  const total = ledger.length;
  const survived = total - missing.length;
  return { total, survived, share: total === 0 ? 1 : survived / total, missing };
}
