/**
 * The facts ledger's recognizers: general properties of text, shell output and code (error
 * codes and exception names, paths, identifiers, numbers with units, commands, and how each
 * line of a message reads: said, error, code or output). Linear-time scans only: they see
 * every tool output, which is hostile input by nature. Pure and deterministic.
 */
import { ToolResultContent } from '../messages/canonical';
import { isListingLine, trimTrailing } from '../engine/text-scan';

/**
 * - `said`: the agent's or the user's own words, a tool call's path or command;
 * - `error`: an error line of a tool output (or of an observation sent as user text);
 * - `code`: code the agent or user wrote (fenced blocks, edit payloads) of at most 40 lines;
 * - `output`: anything else a tool printed (file dumps, listings, logs) and longer code.
 */
export type Source = 'said' | 'error' | 'code' | 'output';
/** Longer code blocks and tool-call payloads count as dumps (`output`). */
export const MAX_CODE_LINES = 40;
export const MAX_COMMAND_CHARS = 120;

export const collapse = (s: string) => s.replace(/\s+/g, ' ').trim();
export const keyOf = (s: string) => collapse(s).toLowerCase();

// ---------------------------------------------------------------------------------------------
// Rules: error codes

const EXCEPTION_NAME = /\b[A-Z][A-Za-z0-9]*(?:Error|Exception|Warning)\b/g;
const LINT_CODE = /\b(?:E\d{3,5}|TS\d{4,5})\b/g;
const ERRNO_NAME =
  /\bE(?:CONNREFUSED|CONNRESET|CONNABORTED|ADDRINUSE|ADDRNOTAVAIL|ACCES|NOENT|PERM|PIPE|TIMEDOUT|EXIST|NOTDIR|ISDIR|MFILE|NFILE|NOTFOUND|AI_AGAIN|HOSTUNREACH|NETUNREACH|NOSPC|BUSY|INVAL|NOTEMPTY|ROFS|NOMEM|XDEV|BADF|DQUOT|NOTSUP|NOTCONN|NAMETOOLONG|LOOP)\b/g;
const NODE_ERROR_CODE = /\bERR_[A-Z0-9_]{3,}\b/g;
/** Whether a line names an errno (ECONNREFUSED, ENOENT, …: the names ERRNO_NAME knows, so `EDITORS.md` is none). */
export const namesErrno = (line: string): boolean => {
  ERRNO_NAME.lastIndex = 0;
  return ERRNO_NAME.test(line);
};
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
/** A 4xx/5xx code and a space; its reason phrase is compared in code (`404 Not Found`, any case, a whole word). */
const HTTP_STATUS_PREFIX = /\b([45]\d\d) /g;
const HTTP_STATUS_CODE = /\b(?:HTTP(?:\/\d(?:\.\d)?)?|status(?: code)?)[ :=]{1,2}[45]\d\d\b/gi;

export function errorCodesIn(line: string): string[] {
  const out: string[] = [];
  for (const re of [EXCEPTION_NAME, LINT_CODE, ERRNO_NAME, NODE_ERROR_CODE, PY_ERRNO, EXIT_CODE, HTTP_STATUS_CODE]) {
    for (const m of line.matchAll(re)) out.push(m[0]);
  }
  for (const m of line.matchAll(HTTP_STATUS_PREFIX)) {
    const reason = HTTP_REASONS[m[1]];
    const at = m.index + m[0].length;
    const text = line.slice(at, at + (reason?.length ?? 0));
    if (reason && text.toLowerCase() === reason && !isWordChar(line[at + reason.length])) out.push(m[0] + text);
  }
  return out;
}

export const isErrorCodeName = (token: string) => /^(?:[A-Z][A-Za-z0-9]*(?:Error|Exception|Warning)|ERR_[A-Z0-9_]{3,}|E\d{3,5}|TS\d{4,5})$/.test(token);

// ---------------------------------------------------------------------------------------------
// Rules: paths

const isWordChar = (ch: string | undefined) => ch !== undefined && /\w/.test(ch);
const isSchemeChar = (ch: string | undefined) => ch !== undefined && /[a-z0-9+.-]/i.test(ch);
const isLetter = (ch: string | undefined) => ch !== undefined && /[a-z]/i.test(ch);

/**
 * The URLs of a line, as `/\b[a-z][a-z0-9+.-]*:\/\/\S*\/gi` matched them: from the first letter of the
 * scheme at a word boundary through the last non-space character. A scan from each `://` (the
 * regex retried every letter of a long run without one: quadratic).
 */
export function urlSpans(line: string): { start: number; end: number }[] {
  const out: { start: number; end: number }[] = [];
  let from = 0;
  for (let sep = line.indexOf('://', from); sep >= 0; sep = line.indexOf('://', Math.max(from, sep + 1))) {
    let runStart = sep;
    while (runStart > from && isSchemeChar(line[runStart - 1])) runStart -= 1;
    let start = -1;
    for (let p = runStart; p < sep; p++) {
      if (isLetter(line[p]) && !isWordChar(line[p - 1])) {
        start = p;
        break;
      }
    }
    if (start < 0) continue;
    let end = sep + 3;
    while (end < line.length && !/\s/.test(line[end])) end += 1;
    out.push({ start, end });
    from = end;
  }
  return out;
}

/** The line with its URLs blanked (same length). */
export function blankUrls(line: string): string {
  let out = '';
  let at = 0;
  for (const { start, end } of urlSpans(line)) {
    out += line.slice(at, start) + ' '.repeat(end - start);
    at = end;
  }
  return out + line.slice(at);
}
/**
 * A path-like token, sticky: what `/(?<![\w.@+~/\\-])…/g` found. The lookbehind (not glued to a
 * name or path character), which the linear-time checker cannot decide, is checked in code by
 * `matchesNotAfter`.
 */
const PATH_TOKEN = /(?:[A-Za-z]:\\|~\/|\.{1,2}\/|\/)?[\w@+-][\w.@+-]*(?:[/\\][\w.@+-]+)*\/?/y;
const PATH_GLUE = /[\w.@+~/\\-]/;

/**
 * The matches of the sticky `token` regex (or matcher) in `s`, left to right and non-overlapping, that do not
 * follow a character `glued` accepts: `s.matchAll(/(?<![glued])token/g)` without the lookbehind.
 */
export function* matchesNotAfter(s: string, glued: RegExp, token: RegExp | ((s: string, at: number) => string | undefined)): Generator<{ index: number; text: string }> {
  let i = 0;
  while (i < s.length) {
    if (i === 0 || !glued.test(s[i - 1])) {
      let text: string | undefined;
      if (token instanceof RegExp) {
        token.lastIndex = i;
        text = token.exec(s)?.[0];
      } else text = token(s, i);
      if (text !== undefined && text.length > 0) {
        yield { index: i, text };
        i += text.length;
        continue;
      }
    }
    i += 1;
  }
}

/** File extensions that make a single name (`setup.py`) a path; with a directory, any short extension does. */
export const FILE_EXTENSIONS = new Set(
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
export function takePaths(line: string): { paths: string[]; rest: string } {
  const noUrls = blankUrls(line);
  const paths: string[] = [];
  let rest = '';
  let at = 0;
  for (const m of matchesNotAfter(noUrls, PATH_GLUE, PATH_TOKEN)) {
    const p = pathOf(m.text);
    if (!p) continue;
    paths.push(p);
    rest += noUrls.slice(at, m.index) + ' '.repeat(m.text.length);
    at = m.index + m.text.length;
  }
  return { paths, rest: rest + noUrls.slice(at) };
}

// ---------------------------------------------------------------------------------------------
// Rules: identifiers

/** A token glued to a hyphen or a slash is part of a name or path (`SWE-agent__test-repo`), not an identifier. */
const IDENT_RUN = /[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)*/y;
const IDENT_GLUE = /[\w$/\\-]/;

/**
 * The identifier tokens of a text, as `/(?<![\w$/\\-])[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)*(?![\w/]|-\w)/g`
 * found them, without the lookarounds the linear-time checker cannot decide: from the longest
 * dotted name down to each shorter one that ends in a word character (the regex's backtracking
 * order), the first not followed by a word character, a slash or a hyphen before a word character.
 */
export function identifierTokens(text: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    if (i === 0 || !IDENT_GLUE.test(text[i - 1])) {
      IDENT_RUN.lastIndex = i;
      const m = IDENT_RUN.exec(text);
      if (m) {
        let end = i + m[0].length;
        while (end > i && !(isWordChar(text[end - 1]) && !isWordChar(text[end]) && text[end] !== '/' && !(text[end] === '-' && isWordChar(text[end + 1])))) end -= 1;
        if (end > i) {
          out.push(text.slice(i, end));
          i = end;
          continue;
        }
      }
    }
    i += 1;
  }
  return out;
}
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

export function isIdentifier(token: string): boolean {
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
  // A dunder name has a letter: a rule of underscores is a separator line (pytest's, in aider-202408140950-0647), not a name.
  if (/^__[A-Za-z]\w*__$/.test(token)) return true;
  if (/^_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*$/.test(token)) return true; // snake_case, SCREAMING_SNAKE
  if (!/[a-z]/.test(token) || !/[A-Z]/.test(token.slice(1))) return false;
  if (/^[A-Z][A-Z0-9]*s$/.test(token)) return false; // URLs, IDs, PRs
  return /^[A-Za-z][A-Za-z0-9]*$/.test(token); // camelCase, PascalCase with an inner capital
}

// ---------------------------------------------------------------------------------------------
// Rules: numbers

// The unit regexes are literals (one list, written out) so that the linear-time checker proves them;
// the lookarounds of the former `(?<![\w.:/-])NUMBER(?:UNIT)` and `(?<![\w.-])KEY=NUMBER…(?![\w.:/-])`
// are checked in code. Units: ms µs us ns s secs seconds mins minutes h hrs hours days kB KiB MB … bytes
// tokens req/s rps qps rpm px fps kHz MHz GHz, with an optional space; or %, x, k, K, M, B right after.
const NUMBER_SPACED_UNIT = /\d+(?:\.\d+)?\s?(?:ms|µs|us|ns|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?|[kKMGT]i?B|bytes?|tokens?|req\/s|rps|qps|rpm|px|fps|[kMG]Hz)\b/y;
const NUMBER_TIGHT_UNIT = /\d+(?:\.\d+)?[%xkKMB]/y;
const SPACED_UNIT = /\s?(?:ms|µs|us|ns|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?|[kKMGT]i?B|bytes?|tokens?|req\/s|rps|qps|rpm|px|fps|[kMG]Hz)\b/y;
const TIGHT_UNIT = /[%xkKMB]/y;
const KEY_NUMBER = /[A-Za-z_][\w.-]{1,40} ?[=:] ?-?\d+(?:\.\d+)?/y;
const NUMBER_GLUE = /[\w.:/-]/;
const KEY_GLUE = /[\w.-]/;
const UNIT_GLUE = /[\w%]/;

const stickyAt = (re: RegExp, s: string, at: number): string | undefined => {
  re.lastIndex = at;
  return re.exec(s)?.[0];
};
/** `(?![set])` at `at`. */
const notFollowedBy = (set: RegExp, s: string, at: number) => at >= s.length || !set.test(s[at]);

/** A number with its unit at `at`: `\d+(?:\.\d+)?(?:\s?(?:SPACED)\b|(?:TIGHT)(?![\w%]))`. */
function numberWithUnitAt(s: string, at: number): string | undefined {
  const spaced = stickyAt(NUMBER_SPACED_UNIT, s, at);
  if (spaced !== undefined) return spaced;
  const tight = stickyAt(NUMBER_TIGHT_UNIT, s, at);
  return tight !== undefined && notFollowedBy(UNIT_GLUE, s, at + tight.length) ? tight : undefined;
}

/** A `name=number[unit]` setting at `at`, not followed by a word, dot, colon, slash or hyphen (the regex's order of tries). */
function settingAt(s: string, at: number): string | undefined {
  const head = stickyAt(KEY_NUMBER, s, at);
  if (head === undefined) return undefined;
  const end = at + head.length;
  const spaced = stickyAt(SPACED_UNIT, s, end);
  if (spaced !== undefined && notFollowedBy(NUMBER_GLUE, s, end + spaced.length)) return head + spaced;
  const tight = stickyAt(TIGHT_UNIT, s, end);
  if (tight !== undefined && notFollowedBy(UNIT_GLUE, s, end + 1) && notFollowedBy(NUMBER_GLUE, s, end + 1)) return head + tight;
  return notFollowedBy(NUMBER_GLUE, s, end) ? head : undefined;
}

export function numbersIn(line: string): string[] {
  const out: string[] = [];
  let settings = '';
  let at = 0;
  for (const m of matchesNotAfter(line, KEY_GLUE, settingAt)) {
    out.push(m.text);
    settings += line.slice(at, m.index) + ' '.repeat(m.text.length);
    at = m.index + m.text.length;
  }
  settings += line.slice(at);
  for (const m of matchesNotAfter(settings, NUMBER_GLUE, numberWithUnitAt)) out.push(m.text);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Rules: commands

export const SHELL_LANGUAGES = new Set(['bash', 'sh', 'shell', 'zsh', 'fish', 'console', 'terminal', 'shell-session', 'shellsession', 'powershell', 'ps1', 'pwsh', 'cmd', 'bat']);
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
export const SHELL_TOOL = /bash|shell|terminal|exec|run|cmd|command|powershell|^sh$|zsh|console/i;
export const PATH_ARG = /path|file|dir|folder|cwd|target|source|dest/i;
export const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)/;

const stripPrompt = (line: string) => line.replace(/^\s*(?:\$|>|PS>|PS [^>]*>)\s+/, '');

export function commandOfLine(line: string, anyFirstWord: boolean): string | undefined {
  const text = collapse(stripPrompt(line));
  if (!text || text.startsWith('#')) return undefined;
  const first = /^(?:sudo\s+)?(\.{0,2}\/[\w./-]+|[A-Za-z][\w.-]*)(?:\s|$)/.exec(text);
  if (!first) return undefined;
  if (!anyFirstWord && !COMMAND_WORDS.has(first[1]) && !first[1].includes('/')) return undefined;
  // `x = 5`, `print(x)`, `def f():` are code, not commands.
  if (/^[\w.]+\s*(?:[=(:{[]|\+=)/.test(text)) return undefined;
  return text.slice(0, MAX_COMMAND_CHARS).trim();
}

/** The first line of a shell command of a tool call (`command`/`cmd`, a string or Codex's argv array). */
export function commandOfInput(value: unknown): string | undefined {
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
/** A numbered file listing's line: `12:` (SWE-agent's editor), `    12→` (Claude Code's Read tool: claude-code fe5e1c67). */
const NUMBERED_LINE = /^\s*\d+(?::|→)/;
const INDENTED = /^(?: {4}|\t)/;
const DIFF_HEADER = /^(?:diff --git |index [0-9a-f]+\.\.|(?:\+\+\+|---) (?:[ab]\/|\/dev\/null)|@@ )/;

/** Lines of code in an output (a numbered listing, a diff, `raise`/`except`/`throw` statements) name errors without reporting one. */
const CODE_STATEMENT = /^\s*(?:raise|throw|except|catch|class|def|function|import|from|return|assert|if|elif|else|new|const|let|var|export|public|private|protected|static|interface|@\w+|\}\s*catch)\b/;
const isCodeLine = (line: string, inDiff: boolean) => NUMBERED_LINE.test(line) || (inDiff && /^[+\- ]/.test(line)) || CODE_STATEMENT.test(line);
export const isErrorLine = (line: string) => ERROR_WORDS.test(line) || PYTEST_ERROR.test(line) || errorCodesIn(line).length > 0;

/** A line that starts like a tool's report: `fatal:`, `ValueError:`, `npm ERR!`-style labels. */
const REPORT_LABEL = /^\s*[\w.[\]-]+:/;
/** What may stand before a report's first word: list and quote markers, pytest's `E` column. */
const REPORT_OPENING = /^[\s>*+|-]*(?:E\s+)?/;

/**
 * Whether a line of the user's own text reports a failure rather than mentions one. An exception name in running prose
 * is the user's words ("no, in cmd_diff catch `ValueError` when you set `current_head`", "again, catch ValueError on
 * .head": aider 0343); one that opens the line or labels what follows (`ValueError: Reference at …`, `E   AttributeError:
 * …`) is a pasted report. The other named failures (lint and errno codes, exit codes, HTTP statuses) report wherever
 * they stand.
 */
export function reportsFailure(line: string): boolean {
  if (errorCodesIn(line.replace(EXCEPTION_NAME, ' ')).length > 0) return true;
  const opens = REPORT_OPENING.exec(line)?.[0].length ?? 0;
  for (const m of line.matchAll(EXCEPTION_NAME)) {
    if (m.index === opens || line[m.index + m[0].length] === ':') return true;
  }
  return false;
}

export interface Line {
  text: string;
  source: Source;
  /** A user's line that names a failure in the user's own words ("never let X end up in exceptions"): an `error` line, and said. */
  own?: boolean;
}

/**
 * Lines of a tool output or of user text. Error lines count as `error`, and so does the stack
 * frame that raised (the last `File "…", line N` before the exception line). In a tool output
 * every other line is `output`. User text is the user's own words (`said`), except what is
 * plainly pasted output: numbered file listings, indented blocks, stack frames, diffs and
 * directory listings (SWE-agent sends its observations as user messages).
 */
export function classifyNonAssistant(text: string, role: 'user' | 'tool'): Line[] {
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
  const pastedLine = (line: string) =>
    NUMBERED_LINE.test(line) || INDENTED.test(line) || FRAME_LINE.test(line) || DIFF_HEADER.test(line) || (inDiff && /^[+-]/.test(line)) || isListingLine(line);
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
      // The user's own sentence about errors is still what the user said (a constraint may name them); a pasted report
      // (a `fatal:` or `ValueError:` label, an exception name that opens the line, an error code: reportsFailure) is not.
      if (role === 'user' && !fence && !pastedLine(line) && !REPORT_LABEL.test(line) && !reportsFailure(line)) out[i].own = true;
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
    if (!pastedLine(line)) out[i].source = 'said';
  }
  if (fence) closeFence(raw.length);
  return out.filter((l) => l.text.trim().length > 0);
}

/**
 * Lines of assistant text: prose is `said`; fenced blocks are `code` (or `output` when long).
 * Commands come from shell blocks (`fenced`) and from inline code in prose (`inline`). `endsWithCommand`:
 * the text ends with a shell block that holds a command, as the messages of an agent that acts through text do
 * (SWE-agent's discussion, then the one command to run); a command shown in the middle, prose after it, is advice to
 * the user (Aider's "you can run it like this: … This will …", aider 0117 and 1128 in testdata/).
 */
export function classifyAssistant(text: string, commands: { fenced: string[]; inline: string[]; endsWithCommand?: boolean }): Line[] {
  const raw = text.split(/\r?\n/);
  let lastLine = raw.length - 1;
  while (lastLine >= 0 && raw[lastLine].trim().length === 0) lastLine--;
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
      if (command && end >= lastLine) commands.endsWithCommand = true;
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


/**
 * The ledger reads at most this many characters of one tool output: its first and last half. A 30 MB log took
 * the worker ~4 s of ledger scanning (issue #15: a huge result is bounded in time); what stands only in the middle
 * of an output that long is still in the history and in the artifact it is offloaded to.
 */
export const LEDGER_SCAN_CHARS = 1 << 20;

/** `text`, or its first and last `chars / 2` characters joined by a line feed when it is longer. */
export function scanWindow(text: string, chars: number = LEDGER_SCAN_CHARS): string {
  return text.length <= chars ? text : `${text.slice(0, chars / 2)}\n${text.slice(-chars / 2)}`;
}

export function toolResultText(content: ToolResultContent): string {
  if (typeof content === 'string') return content;
  return content.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
}

export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A path argument's value: a name with an extension or with a directory; not a URL, not text. */
export function pathArg(value: string): string | undefined {
  const v = value.trim();
  if (!v || /\s/.test(v) || v.length > 240 || /^[a-z][a-z0-9+.-]*:\/\//i.test(v)) return undefined;
  const p = v.startsWith('./') ? v.slice(2) : v;
  return /[/\\]/.test(p.replace(/\/$/, '')) || /\.[A-Za-z][A-Za-z0-9]{0,9}$/.test(p) ? p : undefined;
}
