/**
 * Generic, linguistically motivated signals the extractive summarizer scores text with:
 * constraint and decision language, errors, test outcomes, open tasks, file paths,
 * identifiers, numbers and key/value facts. Nothing here knows any agent's or benchmark's
 * phrasing; every pattern is a general property of English prose, shell output or code.
 */
import { assignments, changeStatements, copulaStatements, type FactMatch } from './fact-scan';
import { arrowParts, bareFiles, extensionSet, hasExtension, slashPaths, specialFiles } from './signal-scan';

export const FILE_EXT =
  'py|pyi|ipynb|js|mjs|cjs|jsx|ts|tsx|mts|cts|json|jsonl|ya?ml|toml|ini|cfg|conf|lock|md|mdx|rst|txt|csv|tsv|xml|html?|css|scss|sass|less|vue|svelte|go|rs|java|kt|kts|scala|groovy|gradle|c|h|cc|cpp|cxx|hpp|hh|cs|swift|rb|php|pl|pm|lua|jl|ex|exs|erl|hrl|hs|mli?|clj|dart|sh|bash|zsh|fish|ps1|bat|sql|prisma|graphql|gql|proto|tf|tfvars|hcl|nix|dockerfile|mk|cmake|patch|diff|pem|crt|pdf|png|jpe?g|gif|svg|webp|ico|zip|gz|tgz|tar|bz2|xz|whl|jar|wasm|so|dylib|dll|exe|db|sqlite|parquet|pkl|pt|onnx|npy|env|log|bin|key|mod|sum';
/** Extensions too ambiguous with `object.member` for a bare name (no slash) to count as a file. */
export const BARE_EXT = FILE_EXT.split('|')
  .filter((e) => !['log', 'bin', 'key', 'mod', 'sum', 'env', 'so', 'pt', 'db', 'pl', 'pm', 'hs', 'ex', 'go', 'rs', 'cs', 'ts', 'tf', 'mli?', 'h', 'c'].includes(e))
  .join('|');

const FILE_EXTENSIONS = extensionSet(FILE_EXT);
const BARE_EXTENSIONS = extensionSet(BARE_EXT);

const HAS_DOTTED_NAME = /\w\.[A-Za-z]/;
const MAY_BE_SPECIAL = /file|\.env|\.git|\.docker|CMakeLists/i;

/** File paths in a text, in order of appearance, deduplicated. */
export function findPaths(text: string): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const add = (p: string) => {
    if (p.length < 3 || p.length > 200 || seen.has(p)) return;
    seen.add(p);
    out.push(p);
  };
  // Cheap guards first: most units hold no slash and no "name.ext".
  // Slash paths (`src/a.ts`, `/usr/bin/python`, `./x`, `~/y`), never part of a URL.
  if (text.includes('/')) for (const p of slashPaths(text)) {
    const absolute = /^(?:\/|~\/|\.{1,2}\/)/.test(p);
    const segments = p.split('/').filter((s) => s.length > 0);
    // A path has an extension, or is explicitly rooted with at least two segments; "and/or", "1/2" and dates are not paths.
    if (hasExtension(p, FILE_EXTENSIONS) || (absolute && segments.length >= 2 && segments.some((s) => /[a-z]/i.test(s)))) add(p);
  }
  if (HAS_DOTTED_NAME.test(text)) for (const p of bareFiles(text, BARE_EXTENSIONS)) add(p);
  if (MAY_BE_SPECIAL.test(text)) for (const p of specialFiles(text)) add(p);
  return out;
}

/** The measured signals of one text unit. */
export interface Signals {
  constraint: number;
  decision: number;
  errorStrong: number;
  errorWeak: number;
  testSummary: number;
  success: number;
  done: number;
  task: number;
  paths: string[];
  identifiers: number;
  unitNumbers: number;
  numbers: number;
  chatter: boolean;
  narration: boolean;
}

const CONSTRAINT = 1;
const DECISION = 2;
const TASK = 4;
const ERROR_WEAK = 8;
const SUCCESS = 16;
const DONE = 32;
const NEGATED = 64;
const ERROR_STRONG = 128;

/**
 * Words and phrases (lower-case, up to three words) and what they signal. One scan of a
 * unit's words looks them up, longest phrase first: far cheaper than one regex per signal.
 */
const PHRASES = new Map<string, number>();
const PHRASE_STARTS = new Set<string>();
function define(bits: number, list: string): void {
  for (const raw of list.split('|')) {
    const key = raw.trim();
    PHRASES.set(key, (PHRASES.get(key) ?? 0) | bits);
    const space = key.indexOf(' ');
    if (space > 0) PHRASE_STARTS.add(key.slice(0, space));
  }
}
define(
  CONSTRAINT,
  "must|mustn't|must not|never|always|don't|do not|doesn't|does not|should|shouldn't|should not|only|require|required|requires|requirement|requirements|" +
    "make sure|ensure|avoid|cannot|can't|shall|forbidden|not allowed|no more than|at least|at most|mandatory|please|keep it|keep them|" +
    'without changing|without touching|without modifying|without breaking',
);
define(
  DECISION,
  "decided|decide|decision|we'll use|we will use|we'll go with|let's go with|let's switch|going with|go with|" +
    'instead of|rather than|switch to|switched to|switching to|switch from|switched from|switch over|chose|chosen|choose|opt for|opted for|opted to|' +
    'settled on|prefer|preferred|prefers|in favor of|in favour of|the fix is|the fix was|the solution is|the approach is|the plan is|the root cause|' +
    'the cause is|root cause|agreed|conclude|concluded|conclusion|better than|fits better|better fit|works better|simpler than|safer than|' +
    'switching|switch|migrate to|migrating to|moving to|move to|replace with|replacing|stick with|sticking with|keep using|go through|' +
    "will go through|picked|pick|going for|trade-off|tradeoff|over the other|we settled|not worth|let's use|let's drop|we'll drop|" +
    'ditch|ditching|replaced by|in place of|stay with|staying with',
);
define(
  TASK,
  'todo|fixme|next step|next steps|next up|do next|remaining|remains|pending|need to|needs to|still need|still have|still to|still fails|still failing|' +
    'still broken|not yet|left to|follow up|will need|will have|will add|will implement|will fix|will update|will run|will check|will write|' +
    'will create|will test|will try|will look|will verify|will modify|will change|plan to|planned to|plans to|going to|should also|should then|' +
    'should next|should now|outstanding|unresolved|open issue|open issues|open question|open questions|blocked|blocker|still open|' +
    "left open|yet to|followup|don't forget|do not forget|remember to",
);
define(
  ERROR_WEAK,
  "error|errors|exception|exceptions|fail|fails|failed|failing|failure|failures|crash|crashes|crashed|broken|bug|cannot|can't|couldn't|" +
    'unable to|not found|undefined|unexpected|invalid|refused|timed out|timeout|denied|abort|aborted|warning|deprecated|wrong|incorrect|' +
    'mismatch|missing|rejected',
);
define(
  SUCCESS,
  'passed|passes|passing|succeeded|succeeds|successful|successfully|success|works|working|complete|completed|done|fixed|resolved|green|' +
    'as expected|correct|correctly',
);
define(
  DONE,
  'done|complete|completed|finished|fixed|resolved|implemented|merged|submitted|removed|cleaned up|has been updated|has been created|' +
    'has been added|has been fixed|has been removed',
);
define(
  NEGATED,
  ['no', '0', 'zero', 'without', 'without any', 'no more']
    .flatMap((a) => ['error', 'errors', 'failure', 'failures', 'failed', 'exception', 'exceptions', 'problem', 'problems', 'issue', 'issues', 'warning', 'warnings'].map((b) => `${a} ${b}`))
    .concat(["did not fail", "didn't fail"])
    .join('|'),
);
define(
  ERROR_STRONG,
  'command not found|no such file|permission denied|segmentation fault|core dumped|non zero exit|nonzero exit|module not found|cannot find module|' +
    'traceback|stack trace|out of memory',
);

const STRONG_CAPS = new Set(['FAIL', 'FAILED', 'FAILURE', 'FAILS', 'ERROR', 'ERRORS', 'ERR', 'FATAL', 'PANIC', 'CRITICAL']);
const TEST_WORDS = new Set([
  'passed', 'failed', 'error', 'errors', 'skipped', 'xfailed', 'xpassed', 'warning', 'warnings', 'test', 'tests', 'spec', 'specs',
  'example', 'examples', 'failure', 'failures', 'passing', 'failing', 'pending', 'suite', 'suites',
]);
const TEST_OUTCOME_START = new Set(['OK', 'FAILED', 'PASSED', 'FAIL', 'PASS']);
const UNITS = new Set(
  ('% ms µs us ns s sec secs second seconds min mins minute minutes h hr hrs hour hours day days week weeks kb mb gb tb pb kib mib gib tib ' +
    'k m g bytes byte token tokens px em rem line lines row rows file files test tests request requests rps qps fps x times mhz ghz kg km ' +
    'usd eur point points retries attempts workers threads cores replicas items records entries chars characters').split(' '),
);
const CHATTER_START = new Set(['ok', 'okay', 'sure', 'great', 'thanks', 'perfect', 'alright', 'hmm', 'yes', 'yep', 'awesome', 'cool', 'nice', 'understood', 'certainly', 'absolutely', 'excellent', 'wonderful']);
const CHATTER_PAIRS = new Set(['thank you', 'got it', 'sounds good', 'i see', 'of course', 'no problem']);
const NARRATION_LEAD = new Set(['now', 'next', 'first', 'then', 'so', 'ok', 'okay', 'great', 'alright']);
const NARRATION_PAIRS = new Set(["let's", "i'll", "we'll"]);
const NARRATION_BIGRAMS = new Set(['let me', 'let us', 'i will', 'i need', 'i am', 'we will', 'we can', 'we should', 'we need']);

const WORD = /[A-Za-z_][A-Za-z0-9_'\u2019]*|[$€£]?\d[\d.,]*[A-Za-z%µ°]*/g;
const VERSION = /^\d+\.\d+\.\d+/;
const NUMBER_UNIT = /^[$€£]?\d[\d.,]*([A-Za-z%µ°]+)$/;

function isNonZeroNumber(w: string | undefined): boolean {
  return w !== undefined && /^\d+$/.test(w) && Number(w) !== 0;
}

/** Share of ASCII letters in a text (a loop: no match array to allocate). */
export function letterRatio(text: string): number {
  if (text.length === 0) return 0;
  let letters = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i) | 32;
    if (c >= 97 && c <= 122) letters++;
  }
  return letters / text.length;
}

const isDigit = (c: number) => c >= 48 && c <= 57;
const isUpper = (c: number) => c >= 65 && c <= 90;
const isLetter = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);

function startsNumeric(w: string): boolean {
  const c = w.charCodeAt(0);
  return isDigit(c) || ((c === 36 || c === 8364 || c === 163) && isDigit(w.charCodeAt(1)));
}

// Scratch arrays reused across calls (analyze is synchronous and not re-entrant): less garbage on large inputs.
const words: string[] = [];
const lower: string[] = [];
/** Index just past each word in `text`. */
const ends: number[] = [];

export function analyze(text: string): Signals {
  words.length = 0;
  lower.length = 0;
  ends.length = 0;
  WORD.lastIndex = 0;
  for (let m = WORD.exec(text); m !== null; m = WORD.exec(text)) {
    let w = m[0];
    const lastCode = w.charCodeAt(w.length - 1);
    if (lastCode === 39 || lastCode === 0x2019) {
      // Trailing apostrophes go (a scan: `/['\u2019]+$/` is quadratic on a long run of them not at the end).
      let end = w.length;
      while (end > 0 && (w.charCodeAt(end - 1) === 39 || w.charCodeAt(end - 1) === 0x2019)) end -= 1;
      w = w.slice(0, end);
    }
    words.push(w);
    const lw = w.toLowerCase();
    lower.push(lw.includes('\u2019') ? lw.replace(/\u2019/g, "'") : lw);
    ends.push(m.index + m[0].length);
  }
  WORD.lastIndex = 0;
  let constraint = 0;
  let decision = 0;
  let task = 0;
  let errorWeak = 0;
  let errorStrong = 0;
  let success = 0;
  let done = 0;
  let testSummary = 0;
  let identifiers = 0;
  let unitNumbers = 0;
  let numbers = 0;
  const n = words.length;
  for (let i = 0; i < n; i++) {
    const w = words[i];
    const lw = lower[i];
    const next = text.charCodeAt(ends[i]);
    if (startsNumeric(w)) {
      numbers++;
      const unit = isLetter(w.charCodeAt(w.length - 1)) || w.endsWith('%') ? NUMBER_UNIT.exec(w)?.[1]?.toLowerCase() : undefined;
      if ((unit && UNITS.has(unit)) || !isDigit(w.charCodeAt(0)) || (w.includes('.') && VERSION.test(w)) || (i + 1 < n && next === 32 && UNITS.has(lower[i + 1]))) unitNumbers++;
      if (i + 1 < n && next === 32 && TEST_WORDS.has(lower[i + 1])) testSummary++;
    } else {
      const first = w.charCodeAt(0);
      // Identifiers: snake_case, camelCase/PascalCase with two humps, dotted chains, calls.
      if (
        (w.length > 2 && w.includes('_') && /[A-Za-z]/.test(w)) ||
        /[a-z][A-Z]/.test(w) ||
        (next === 46 && isLetter(text.charCodeAt(ends[i] + 1))) ||
        (next === 40 && text.charCodeAt(ends[i] + 1) === 41)
      )
        identifiers++;
      if (isUpper(first)) {
        if ((w.endsWith('Error') && w.length > 5) || (w.endsWith('Exception') && w.length > 9) || (w.endsWith('Fault') && w.length > 5)) errorStrong++;
        else if (STRONG_CAPS.has(w) || w === 'Traceback') errorStrong++;
        else if (first === 69 && next === 58 && /^E\d{3,4}$/.test(w)) errorStrong++;
      } else if ((lw === 'error' || lw === 'fatal' || lw === 'panic') && (next === 58 || next === 91)) errorStrong++;
      else if (lw === 'error' && i + 1 < n && /^[A-Z]{2,}\d+$/.test(words[i + 1])) errorStrong++;
      if ((lw === 'exit' || lw === 'exited') && i + 2 < n) {
        const j = lower[i + 1] === 'with' ? i + 2 : i + 1;
        if ((lower[j] === 'code' || lower[j] === 'status') && isNonZeroNumber(words[j + 1])) errorStrong++;
      }
      if (lw === 'ran' && i + 2 < n && startsNumeric(words[i + 1]) && (lower[i + 2] === 'tests' || lower[i + 2] === 'test')) testSummary++;
      if ((lw === 'tests' || lw === 'test') && next === 58 && i + 1 < n && startsNumeric(words[i + 1])) testSummary++;
      if ((lw === 'all' || lw === 'the') && i + 2 < n && (lower[i + 1] === 'tests' || lower[i + 1] === 'test') && /^(?:pass|passed|fail|failed|succeed|succeeded)$/.test(lower[i + 2])) testSummary++;
    }

  // Phrases: longest first, consuming their words.
    let bits = 0;
    let span = 1;
    if (PHRASE_STARTS.has(lw) && i + 1 < n) {
      const bi = `${lw} ${lower[i + 1]}`;
      const tri = i + 2 < n ? `${bi} ${lower[i + 2]}` : '';
      if (tri && PHRASES.has(tri)) {
        bits = PHRASES.get(tri) ?? 0;
        span = 3;
      } else if (PHRASES.has(bi)) {
        bits = PHRASES.get(bi) ?? 0;
        span = 2;
      }
    }
    if (span === 1) bits = PHRASES.get(lw) ?? 0;
    if (bits) {
      if (bits & CONSTRAINT) constraint++;
      if (bits & DECISION) decision++;
      if (bits & TASK) task++;
      if (bits & ERROR_WEAK) errorWeak++;
      if (bits & SUCCESS) success++;
      if (bits & DONE) done++;
      if (bits & NEGATED) success++;
      if (bits & ERROR_STRONG) errorStrong++;
      // Numbers inside a phrase ("0 errors") still count as numbers above; the phrase's other words are consumed.
      for (let k = 1; k < span; k++) if (startsNumeric(words[i + k])) numbers++;
      i += span - 1;
    }
  }
  if (text.includes('[ ]')) task++;
  let backticks = 0;
  for (let at = text.indexOf('`'); at >= 0 && backticks < 12; at = text.indexOf('`', at + 1)) backticks++;
  identifiers += Math.floor(backticks / 2);
  if (n > 0 && TEST_OUTCOME_START.has(words[0]) && text.trimStart().startsWith(words[0])) testSummary++;

  let chatter = false;
  let narration = false;
  if (n > 0) {
    chatter = text.length < 120 && (CHATTER_START.has(lower[0]) || (n > 1 && CHATTER_PAIRS.has(`${lower[0]} ${lower[1]}`)));
    let k = 0;
    while (k < n - 1 && k < 2 && NARRATION_LEAD.has(lower[k])) k++;
    narration = NARRATION_PAIRS.has(lower[k]) || (k + 1 < n && NARRATION_BIGRAMS.has(`${lower[k]} ${lower[k + 1]}`));
  }
  return {
    constraint: Math.min(constraint, 4),
    decision: Math.min(decision, 4),
    errorStrong: Math.min(errorStrong, 4),
    errorWeak: Math.min(errorWeak, 6),
    testSummary: Math.min(testSummary, 3),
    success: Math.min(success, 3),
    done: Math.min(done, 3),
    task: Math.min(task, 4),
    paths: findPaths(text),
    identifiers: Math.min(identifiers, 6),
    unitNumbers: Math.min(unitNumbers, 4),
    numbers: Math.min(numbers, 6),
    chatter,
    narration,
  };
}

const STOPWORDS = new Set(
  (
    'a an the and or but of to in on at by for with from as is are was were be been being it its this that these those there here ' +
    'we you they he she i me my our your their them his her which who whom what when where why how not no yes do does did done ' +
    'have has had will would can could should shall may might must so if then than also just very too into onto over under about ' +
    'after before again all any each few more most other some such only own same now up down out off once let lets use using used'
  ).split(' '),
);

/**
 * Everyday words of agent sessions (actions on files, code and commands): frequent in any
 * session, so their recurrence says nothing about what this one is about.
 */
export const GENERIC_TERMS = new Set(
  (
    'make sure file files open opened run running ran use need want like look looks see seems seem try trying work works working change ' +
    'changes changed check current directory command commands line lines code script scripts edit edits edited editing find found issue ' +
    'issues bug bugs fix fixed test tests testing output input error errors think first then next just also new way time sure set get ' +
    'got able well still already going help start started following follow below above right left back thing things good correct ' +
    'correctly wrong yes okay done add added remove removed update updated create created write read print call function value values ' +
    'result results return name type data text message number true false none null empty start end please note section repository'
  ).split(' '),
);

/** Content words (≥ 3 letters, no stopwords), lower-cased: for goal overlap. */
export function contentTerms(text: string): string[] {
  const out: string[] = [];
  // Identifiers count by their parts too: "PixelRepresentation" and "pixel representation" share terms.
  for (const word of text.match(/[A-Za-z][A-Za-z0-9_]{2,}/g) ?? []) {
    const w = word.toLowerCase();
    if (!STOPWORDS.has(w)) out.push(w);
    if (/[a-z][A-Z]|_/.test(word))
      for (const part of word.split(/_|(?<=[a-z0-9])(?=[A-Z])/)) {
        const p = part.toLowerCase();
        if (p.length >= 3 && p !== w && !STOPWORDS.has(p)) out.push(p);
      }
  }
  return out;
}

/** One fact a unit states: a key and its value. A later different value for the same key supersedes it. */
export interface Fact {
  key: string;
  value: string;
}

/** Each fact scan (fact-scan.ts) with a cheap guard that must match first. */
const FACT_PATTERNS: [(text: string) => Iterable<FactMatch>, RegExp][] = [
  [assignments, /=/],
  [copulaStatements, /\b(?:is|are|was|were|been|remains|stays)\b/i],
  [changeStatements, /\bto\b/i],
];
/** "Status: passing", "Max retries: 5": a label of at most three words and a short value. */
const FACT_LABEL = /^([A-Za-z][\w.\-/]*(?: [\w.\-/]+){0,2})\s*:\s+(\S+(?: \S+){0,3})$/;

/** Label words that introduce rather than name a value ("Note: …", "Error: …"). */
const LABEL_STOP = new Set([
  'note', 'notes', 'error', 'errors', 'warning', 'warnings', 'info', 'debug', 'tip', 'hint', 'example', 'examples', 'todo', 'step',
  'question', 'answer', 'summary', 'reason', 'because', 'output', 'input', 'http', 'https', 'file', 'files', 'path', 'see', 'usage',
  'traceback', 'exception', 'fix', 'issue', 'problem', 'cause', 'solution', 'description', 'title', 'details', 'message', 'hello',
]);
const KEY_STOP = new Set([...STOPWORDS, 'issue', 'problem', 'reason', 'idea', 'thing', 'way', 'point', 'goal', 'step', 'plan', 'fix', 'change', 'error']);

function normalizeKey(raw: string): string | null {
  const words = raw.toLowerCase().replace(/[`'"]/g, '').split(/\s+/).filter(Boolean);
  // The key is what follows the last function word: "config the timeout" → "timeout".
  let start = 0;
  for (let i = 0; i < words.length; i++) if (STOPWORDS.has(words[i])) start = i + 1;
  const key = words.slice(start).join(' ');
  if (!key || key.length < 2 || KEY_STOP.has(key) || /^\d/.test(key)) return null;
  return key;
}

function normalizeValue(raw: string): string {
  return raw.trim().replace(/^[`'"]|[`'".,;:]$/g, '').toLowerCase();
}

/** The key/value facts a prose or command unit states (not code listings). */
export function extractFacts(text: string): Fact[] {
  const facts: Fact[] = [];
  const seen = new Set<string>();
  const add = (k: string | undefined, v: string | undefined) => {
    if (!k || !v) return;
    const key = normalizeKey(k);
    if (!key || seen.has(key)) return;
    const value = normalizeValue(v);
    if (!value) return;
    seen.add(key);
    facts.push({ key, value });
  };
  for (const [scan, guard] of FACT_PATTERNS) {
    if (!guard.test(text)) continue;
    for (const m of scan(text)) {
      if (facts.length >= 4) break;
      add(m.key, m.value);
    }
  }
  // "command → outcome": the outcome is the value of the command.
  const arrow = text.includes('→') || text.includes('->') ? arrowParts(text) : undefined;
  if (arrow && facts.length === 0) {
    const key = arrow.head.toLowerCase().replace(/\s+/g, ' ').trim();
    facts.push({ key: `→${key}`, value: normalizeValue(arrow.tail) });
    seen.add(key);
  }
  if (text.length <= 90 && text.includes(':')) {
    const m = FACT_LABEL.exec(text.trim());
    if (m && !LABEL_STOP.has(m[1].trim().toLowerCase()) && !/^\w+:\/\//.test(m[2])) add(m[1], m[2]);
  }
  return facts;
}
