// Linear-time scans for the local summarizer's key/value facts (signals.ts `extractFacts`). The
// three fact regexes were built at run time from shared pieces (so the linear-time checker could
// not see them), used lookaheads and bounded repetitions it cannot decide, and one of them was
// quadratic (`[\w./-]*\d[\w./-]*` before a lookahead). Each scan yields exactly the matches of the
// regex quoted in its comment, in order, with the same groups: at every start it tries what the
// regex tried, in the regex's order of tries, and each of its runs (names, whitespace, values)
// has one end the regex could use, so it is measured once. fact-scan.spec.ts checks each against
// its regex.

/** One match: where it starts and ends, its key group and its value group. */
export interface FactMatch {
  start: number;
  end: number;
  key: string;
  value: string;
}

const WS = /\s/;
/** `\s` (the common ASCII cases without the regex). */
const isWs = (ch: string | undefined) => {
  if (ch === undefined) return false;
  const c = ch.charCodeAt(0);
  if (c < 128) return c === 32 || (c >= 9 && c <= 13);
  return WS.test(ch);
};
const isDigit = (ch: string | undefined) => ch !== undefined && ch >= '0' && ch <= '9';
const isWord = (ch: string | undefined) => ch !== undefined && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || isDigit(ch) || ch === '_');
/** `[A-Za-z_]` (also under `i`: no other character folds to an ASCII letter). */
const isNameStart = (ch: string | undefined) => ch !== undefined && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch === '_');
/** `[\w.\-]` */
const isNameChar = (ch: string | undefined) => isWord(ch) || ch === '.' || ch === '-';
/** `[\w./-]` */
const isIdChar = (ch: string | undefined) => isWord(ch) || ch === '.' || ch === '/' || ch === '-';
/** `[A-Za-zµ/]` under `i` (µ also matches the Greek mu it folds with). */
const UNIT_CHAR = /[A-Za-zµ/]/i;
const isUnitChar = (ch: string | undefined) => ch !== undefined && UNIT_CHAR.test(ch);
/** `(?=[\s.,;:)!?]|$)`: what may follow a stated value. */
const VALUE_END = /[\s.,;:)!?]/;
/** `[^\s,;)]`: an unquoted value's characters. */
const VALUE_STOP = /[\s,;)]/;
const isBoundary = (s: string, at: number) => isWord(s[at - 1]) !== isWord(s[at]);

function wsEnd(s: string, at: number): number {
  while (at < s.length && isWs(s[at])) at += 1;
  return at;
}
function nameEnd(s: string, at: number): number {
  while (at < s.length && isNameChar(s[at])) at += 1;
  return at;
}
/** `word` (lower-case ASCII, maybe with a space) at `at`, in any ASCII case as under `i`. */
function wordAt(s: string, at: number, word: string, ignoreCase: boolean): boolean {
  if (at + word.length > s.length) return false;
  for (let k = 0; k < word.length; k++) {
    let c = s.charCodeAt(at + k);
    if (ignoreCase && c >= 65 && c <= 90) c += 32;
    if (c !== word.charCodeAt(k)) return false;
  }
  return true;
}
/** The first of `words` at `at` followed by whitespace: the index after that whitespace, or -1. */
function wordThenWs(s: string, at: number, words: string[], ignoreCase: boolean): number {
  for (const w of words) if (wordAt(s, at, w, ignoreCase) && isWs(s[at + w.length])) return wsEnd(s, at + w.length);
  return -1;
}

/** `"[^"\n]{1,60}"|'[^'\n]{1,60}'|`[^`\n]{1,60}``: the end of the quoted value at `at`, or -1. */
function quotedEnd(s: string, at: number): number {
  const q = s[at];
  if (q !== '"' && q !== "'" && q !== '`') return -1;
  for (let k = at + 1; k < s.length && k <= at + 61; k++) {
    if (s[k] === q) return k - at - 1 >= 1 ? k + 1 : -1;
    if (s[k] === '\n') return -1;
  }
  return -1;
}
/** The longest `[^\s,;)]{1,60}` at `at` (its length). */
function unquotedLength(s: string, at: number): number {
  let k = 0;
  while (k < 60 && at + k < s.length && !VALUE_STOP.test(s[at + k])) k += 1;
  return k;
}
/** `ANY_VALUE` (any short value, for explicit assignment: "=", "set to") at the end of a regex: its end, or -1. */
function anyValueEnd(s: string, at: number): number {
  const quoted = quotedEnd(s, at);
  if (quoted >= 0) return quoted;
  const k = unquotedLength(s, at);
  return k > 0 ? at + k : -1;
}
const valueEndsAt = (s: string, at: number) => at >= s.length || VALUE_END.test(s[at]);
/** `ANY_VALUE(?=[\s.,;:)!?]|$)`: its end, or -1 (the unquoted run gives characters back). */
function anyValueBeforeEnd(s: string, at: number): number {
  const quoted = quotedEnd(s, at);
  if (quoted >= 0 && valueEndsAt(s, quoted)) return quoted;
  for (let k = unquotedLength(s, at); k >= 1; k--) if (valueEndsAt(s, at + k)) return at + k;
  return -1;
}

// ---------------------------------------------------------------------------------------------
// `VALUE_LIKE(?=[\s.,;:)!?]|$)`, alternative by alternative, each in the regex's order of tries.

/** `\s?(?:%|[A-Za-zµ/]{1,8}\b)` after a number ending at v, then the end of the value; else the number alone. */
function unitOrNumberEnd(s: string, v: number): number {
  const w = isWs(s[v]) ? v + 1 : v;
  if (s[w] === '%') {
    if (valueEndsAt(s, w + 1)) return w + 1;
  } else {
    let run = 0;
    while (run < 8 && isUnitChar(s[w + run])) run += 1;
    for (let k = run; k >= 1; k--) if (isBoundary(s, w + k) && valueEndsAt(s, w + k)) return w + k;
  }
  return valueEndsAt(s, v) ? v : -1;
}

/** `[$€£]?-?\d[\d,]*(?:\.\d+)?(?:\s?(?:%|[A-Za-zµ/]{1,8}\b))?` */
function numberEnd(s: string, at: number): number {
  let p = at;
  if (s[p] === '$' || s[p] === '€' || s[p] === '£') p += 1;
  if (s[p] === '-') p += 1;
  if (!isDigit(s[p])) return -1;
  let q = p + 1;
  while (q < s.length && (isDigit(s[q]) || s[q] === ',')) q += 1;
  if (s[q] === '.' && isDigit(s[q + 1])) {
    let u = q + 2;
    while (isDigit(s[u])) u += 1;
    const end = unitOrNumberEnd(s, u);
    // Shorter decimals end before a digit; without them the number ends at its dot, which may end a value.
    return end >= 0 ? end : q;
  }
  const end = unitOrNumberEnd(s, q);
  if (end >= 0) return end;
  // Giving back digits and commas: the number may end before its last comma.
  for (let t = q - 1; t > p; t--) if (s[t] === ',') return t;
  return -1;
}

/** `v?\d+(?:\.\d+){1,3}\b` */
function versionEnd(s: string, at: number): number {
  let p = at;
  if (s[p] === 'v' || s[p] === 'V') p += 1;
  if (!isDigit(s[p])) return -1;
  while (isDigit(s[p])) p += 1;
  const ends: number[] = [];
  while (ends.length < 3 && s[p] === '.' && isDigit(s[p + 1])) {
    p += 2;
    while (isDigit(s[p])) p += 1;
    ends.push(p);
  }
  for (let k = ends.length - 1; k >= 0; k--) if (isBoundary(s, ends[k]) && valueEndsAt(s, ends[k])) return ends[k];
  return -1;
}

const BOOLEANS = 'true|false|on|off|enabled|disabled|null|none|nil'.split('|');
const CLAUSE_END = /[.,;:)!?]/;
/** `(?:true|false|on|off|enabled|disabled|null|none|nil)(?=\s*(?:[.,;:)!?]|$))` */
function booleanEnd(s: string, at: number): number {
  for (const w of BOOLEANS) {
    if (!wordAt(s, at, w, true)) continue;
    const after = wsEnd(s, at + w.length);
    return after >= s.length || CLAUSE_END.test(s[after]) ? at + w.length : -1;
  }
  return -1;
}

/**
 * `[A-Za-z_][\w./-]*\d[\w./-]*`: the name runs to the end of its `[\w./-]` run; where a value may
 * not end there, it backs off to its last dot after its first digit (every other end before the
 * run's end is a word character, a slash or a hyphen).
 */
function idWithDigitEnd(s: string, at: number): number {
  if (!isNameStart(s[at])) return -1;
  let r = at + 1;
  let firstDigit = -1;
  while (r < s.length && isIdChar(s[r])) {
    if (firstDigit < 0 && isDigit(s[r])) firstDigit = r;
    r += 1;
  }
  if (firstDigit < 0) return -1;
  if (valueEndsAt(s, r)) return r;
  for (let e = r - 1; e > firstDigit; e--) if (s[e] === '.') return e;
  return -1;
}

/**
 * `VALUE_LIKE(?=[\s.,;:)!?]|$)`: its end, or -1. Values that read as values when stated with
 * "is/are": numbers (with units), versions, quoted text, ids with digits, and booleans when the
 * clause ends with them ("is on.", not "are on the table").
 */
function valueLikeEnd(s: string, at: number): number {
  const quoted = quotedEnd(s, at);
  if (quoted >= 0) return valueEndsAt(s, quoted) ? quoted : -1;
  for (const alternative of [numberEnd, versionEnd, booleanEnd, idWithDigitEnd]) {
    const end = alternative(s, at);
    if (end >= 0) return end;
  }
  return -1;
}

// ---------------------------------------------------------------------------------------------
// The three fact regexes.

const DECLARATIONS = ['export', 'set', 'let', 'const', 'var'];

/**
 * The matches of
 * `/(?:^|[\s(,;])(?:export\s+|set\s+|let\s+|const\s+|var\s+)?([A-Za-z_][\w.\-]*(?:\[[^\]\n]{1,30}\])?)\s*(?::=|=)(?![=>~])\s*(ANY_VALUE)/g`:
 * `name = value`, `export NAME=value`, `x[key] := value`.
 */
export function* assignments(s: string): Generator<FactMatch> {
  const afterName = (start: number, end: number): { end: number; key: string; value: string } | undefined => {
    const w = wsEnd(s, end);
    const op = s[w] === ':' && s[w + 1] === '=' ? w + 2 : s[w] === '=' ? w + 1 : -1;
    if (op < 0 || s[op] === '=' || s[op] === '>' || s[op] === '~') return undefined;
    const x = wsEnd(s, op);
    const v = anyValueEnd(s, x);
    return v < 0 ? undefined : { end: v, key: s.slice(start, end), value: s.slice(x, v) };
  };
  const named = (at: number) => {
    if (!isNameStart(s[at])) return undefined;
    const end = nameEnd(s, at + 1);
    if (s[end] === '[') {
      for (let k = end + 1; k < s.length && k <= end + 31; k++) {
        if (s[k] === ']') {
          const m = k - end - 1 >= 1 ? afterName(at, k + 1) : undefined;
          if (m) return m;
          break;
        }
        if (s[k] === '\n') break;
      }
    }
    return afterName(at, end);
  };
  const from = (at: number) => {
    const declared = wordThenWs(s, at, DECLARATIONS, false);
    return (declared >= 0 ? named(declared) : undefined) ?? named(at);
  };
  const STARTS = /[\s(,;]/;
  let i = 0;
  while (i < s.length) {
    const m = (i === 0 ? from(0) : undefined) ?? (STARTS.test(s[i]) ? from(i + 1) : undefined);
    if (m) {
      yield { start: i, end: m.end, key: m.key, value: m.value };
      i = m.end;
    } else i += 1;
  }
}

const COPULAS = 'is|are|was|were|has been|have been|remains|stays'.split('|');
const ADVERBS = 'now|currently|still|already'.split('|');
const CHANGE_VERBS = 'set|changed|updated|increased|decreased|reduced|raised|lowered|bumped|configured|moved|pinned'.split('|');

/** The ends of up to three names from `at` (`[A-Za-z_][\w.\-]*`), each after whitespace from the one before. */
function keyWordEnds(s: string, at: number): number[] {
  const ends: number[] = [];
  if (!isNameStart(s[at])) return ends;
  ends.push(nameEnd(s, at + 1));
  while (ends.length < 3) {
    const next = wsEnd(s, ends[ends.length - 1]);
    if (next === ends[ends.length - 1] || !isNameStart(s[next])) break;
    ends.push(nameEnd(s, next + 1));
  }
  return ends;
}

/**
 * The matches of `/(?:^|[\s(])(KEY_WORDS)\s+(?:is|are|…|stays)\s+(?:now\s+|…)?(?:(?:CHANGE_VERBS)\s+to\s+(ANY_VALUE)|(VALUE_LIKE))(?=[\s.,;:)!?]|$)/gi`:
 * "the timeout is now 30s", "retries were set to 5". The value is the second group or the third.
 */
export function* copulaStatements(s: string): Generator<FactMatch> {
  const tail = (at: number): { end: number; value: string } | undefined => {
    const verb = wordThenWs(s, at, CHANGE_VERBS, true);
    if (verb >= 0) {
      const to = wordThenWs(s, verb, ['to'], true);
      const end = to >= 0 ? anyValueBeforeEnd(s, to) : -1;
      if (end >= 0) return { end, value: s.slice(to, end) };
    }
    const end = valueLikeEnd(s, at);
    return end >= 0 ? { end, value: s.slice(at, end) } : undefined;
  };
  const from = (at: number): { end: number; key: string; value: string } | undefined => {
    const ends = keyWordEnds(s, at);
    for (let k = ends.length - 1; k >= 0; k--) {
      const gap = wsEnd(s, ends[k]);
      const copula = gap > ends[k] ? wordThenWs(s, gap, COPULAS, true) : -1;
      if (copula < 0) continue;
      const adverb = wordThenWs(s, copula, ADVERBS, true);
      const t = (adverb >= 0 ? tail(adverb) : undefined) ?? tail(copula);
      if (t) return { end: t.end, key: s.slice(at, ends[k]), value: t.value };
    }
    return undefined;
  };
  let i = 0;
  while (i < s.length) {
    const m = (i === 0 ? from(0) : undefined) ?? (isWs(s[i]) || s[i] === '(' ? from(i + 1) : undefined);
    if (m) {
      yield { start: i, end: m.end, key: m.key, value: m.value };
      i = m.end;
    } else i += 1;
  }
}

const CHANGE_WORDS = new Set(
  'set|sets|setting|change|changes|changed|changing|update|updates|updated|bump|bumped|increase|increased|decrease|decreased|raise|raised|lower|lowered|reduce|reduced|configure|configured|pin|pinned'.split('|'),
);
const LONGEST_CHANGE_WORD = Math.max(...[...CHANGE_WORDS].map((w) => w.length));

/**
 * The matches of `/\b(?:set|sets|…|pinned)\s+(?:the\s+)?(KEY_WORDS?)\s+(?:from\s+\S+\s+)?to\s+(ANY_VALUE)/gi`
 * (the key's extra words lazy: fewest first): "set the timeout to 30s", "bumped node from 18 to 20".
 */
export function* changeStatements(s: string): Generator<FactMatch> {
  const toValue = (at: number): { end: number; value: string } | undefined => {
    const to = wordThenWs(s, at, ['to'], true);
    const end = to >= 0 ? anyValueEnd(s, to) : -1;
    return end >= 0 ? { end, value: s.slice(to, end) } : undefined;
  };
  const fromTo = (at: number) => {
    const from = wordThenWs(s, at, ['from'], true);
    if (from >= 0 && from < s.length) {
      let u = from;
      while (u < s.length && !isWs(s[u])) u += 1;
      const t = wsEnd(s, u);
      const m = t > u ? toValue(t) : undefined;
      if (m) return m;
    }
    return toValue(at);
  };
  const keyFrom = (at: number): { end: number; key: string; value: string } | undefined => {
    if (!isNameStart(s[at])) return undefined;
    let end = nameEnd(s, at + 1);
    for (let words = 1; words <= 3; words++) {
      const next = wsEnd(s, end);
      if (next === end) return undefined;
      const m = fromTo(next);
      if (m) return { end: m.end, key: s.slice(at, end), value: m.value };
      if (words === 3 || !isNameStart(s[next])) return undefined;
      end = nameEnd(s, next + 1);
    }
    return undefined;
  };
  const at = (i: number) => {
    if (isWord(s[i - 1])) return undefined;
    let j = i;
    while (j < s.length && j - i <= LONGEST_CHANGE_WORD && ((s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z'))) j += 1;
    if (!isWs(s[j]) || !CHANGE_WORDS.has(s.slice(i, j).toLowerCase())) return undefined;
    const w = wsEnd(s, j);
    const the = wordThenWs(s, w, ['the'], true);
    return (the >= 0 ? keyFrom(the) : undefined) ?? keyFrom(w);
  };
  let i = 0;
  while (i < s.length) {
    const m = at(i);
    if (m) {
      yield { start: i, end: m.end, key: m.key, value: m.value };
      i = m.end;
    } else i += 1;
  }
}
