// Linear-time scans for the few text operations whose natural regular expression backtracks
// super-linearly on adversarial input (an agent's tool output, an upstream answer). Each one
// does exactly what the regex it replaces did; the regex is named in its comment.

const WHITESPACE = /\s/;

/** True for the characters `\s` matches (the same set `String.prototype.trim` removes). */
export const isWhitespace = (ch: string | undefined): boolean => ch !== undefined && WHITESPACE.test(ch);

/** `s.replace(/[chars]+$/, '')`. */
export function trimTrailing(s: string, chars: string): string {
  let end = s.length;
  while (end > 0 && chars.includes(s[end - 1])) end -= 1;
  return s.slice(0, end);
}

const isDigit = (code: number) => code >= 48 && code <= 57;

/** `s.replace(/(:\d+)+:?$/, '')`: a trailing `:line:column` (and a colon after it) goes. */
export function trimLineColumn(s: string): string {
  let end = s.length;
  if (end > 0 && s.charCodeAt(end - 1) === 58) end -= 1;
  let start = -1;
  for (;;) {
    let i = end;
    while (i > 0 && isDigit(s.charCodeAt(i - 1))) i -= 1;
    if (i === end || i === 0 || s.charCodeAt(i - 1) !== 58) break;
    start = i - 1;
    end = start;
  }
  return start < 0 ? s : s.slice(0, start);
}

/** `s.replace(/^[lead]+|[trail]+$/g, '')`: the trailing run never reaches into the removed leading run. */
export function trimEnds(s: string, lead: string, trail: string): string {
  let start = 0;
  while (start < s.length && lead.includes(s[start])) start += 1;
  let end = s.length;
  while (end > start && trail.includes(s[end - 1])) end -= 1;
  return s.slice(start, end);
}

/** ASCII-only case folding, as a non-unicode `/i` regex compares letters. */
const fold = (code: number) => (code >= 65 && code <= 90 ? code + 32 : code);

/** Whether `word` (ASCII) occurs in `s` at `at`, ignoring ASCII case as `/i` does. */
export function startsWithAt(s: string, word: string, at: number): boolean {
  if (at < 0 || at + word.length > s.length) return false;
  for (let k = 0; k < word.length; k += 1) if (fold(s.charCodeAt(at + k)) !== fold(word.charCodeAt(k))) return false;
  return true;
}

/** The first index >= `from` where `word` occurs, ignoring ASCII case; -1 if none. Linear for a short `word`. */
export function indexOfIgnoringCase(s: string, word: string, from: number): number {
  for (let i = from; i + word.length <= s.length; i += 1) if (startsWithAt(s, word, i)) return i;
  return -1;
}

/** `s.replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')`: a space before the last capital of a run of capitals followed by a lowercase letter. */
export function splitCapitalRuns(s: string): string {
  const upper = (c: string | undefined) => c !== undefined && c >= 'A' && c <= 'Z';
  const lower = (c: string | undefined) => c !== undefined && c >= 'a' && c <= 'z';
  let out = '';
  let copied = 0;
  let i = 0;
  while (i < s.length) {
    if (!upper(s[i])) {
      i += 1;
      continue;
    }
    let end = i;
    while (upper(s[end])) end += 1;
    if (end - i >= 2 && lower(s[end])) {
      out += s.slice(copied, end - 1) + ' ';
      copied = end - 1;
      i = end + 1;
    } else i = end;
  }
  return out + s.slice(copied);
}

/** `s.replace(/<(script|style)[\s\S]*?<\/\1>/gi, with)`, ASCII case-insensitive as that regex is. */
export function replaceScriptAndStyle(s: string, replacement: string): string {
  let out = '';
  let copied = 0;
  // Once a closing tag is missing after some point, it is missing after every later point.
  const unclosed = new Set<string>();
  let i = s.indexOf('<');
  while (i >= 0) {
    const name = ['script', 'style'].find((n) => !unclosed.has(n) && startsWithAt(s, n, i + 1));
    if (name) {
      const close = indexOfIgnoringCase(s, `</${name}>`, i + 1 + name.length);
      if (close >= 0) {
        out += s.slice(copied, i) + replacement;
        copied = close + name.length + 3;
        i = s.indexOf('<', copied);
        continue;
      }
      unclosed.add(name);
    }
    i = s.indexOf('<', i + 1);
  }
  return out + s.slice(copied);
}

/** `s.replace(/<[^>]+>/g, with)`. */
export function replaceTags(s: string, replacement: string): string {
  let out = '';
  let copied = 0;
  let i = s.indexOf('<');
  while (i >= 0) {
    const close = s.indexOf('>', i + 1);
    if (close < 0) break;
    if (close === i + 1) {
      i = s.indexOf('<', i + 1);
      continue;
    }
    // A `<` between `i` and `close` starts no tag of its own: this one swallows it.
    out += s.slice(copied, i) + replacement;
    copied = close + 1;
    i = s.indexOf('<', copied);
  }
  return out + s.slice(copied);
}

/** `s.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')`: a Markdown link becomes its text. */
export function replaceMarkdownLinks(s: string): string {
  let out = '';
  let copied = 0;
  let i = s.indexOf('[');
  while (i >= 0) {
    const closeBracket = s.indexOf(']', i + 1);
    if (closeBracket < 0) break;
    if (s[closeBracket + 1] !== '(') {
      // Every `[` up to this `]` ends at the same `]`, so none of them starts a link.
      i = s.indexOf('[', closeBracket + 1);
      continue;
    }
    const closeParen = s.indexOf(')', closeBracket + 2);
    if (closeParen < 0) break;
    out += s.slice(copied, i) + s.slice(i + 1, closeBracket);
    copied = closeParen + 1;
    i = s.indexOf('[', copied);
  }
  return out + s.slice(copied);
}

const LISTING_NAME = /[\w.~@+/-]/;

/**
 * `/^\s*[\w.~@+/-]+\/?(?:(?:\t+| {2,})[\w.~@+/-]+\/?)*\s*$/` (exponential on an `ls -F` line): names
 * separated by tabs or by two or more spaces, and nothing else on the line.
 */
export function isListingLine(line: string): boolean {
  let start = 0;
  while (start < line.length && isWhitespace(line[start])) start += 1;
  let end = line.length;
  while (end > start && isWhitespace(line[end - 1])) end -= 1;
  if (start === end) return false;
  let i = start;
  while (i < end) {
    if (LISTING_NAME.test(line[i])) {
      i += 1;
      continue;
    }
    const gapChar = line[i];
    if (gapChar !== '\t' && gapChar !== ' ') return false;
    const gapStart = i;
    while (line[i] === gapChar) i += 1;
    if (gapChar === ' ' && i - gapStart < 2) return false;
    // A gap of tabs and spaces mixed is not one separator; the next character must start a name.
    if (!LISTING_NAME.test(line[i])) return false;
  }
  return true;
}

const LINE_TERMINATORS = '\n\r\u2028\u2029';

/**
 * A trailing status word after a dash: what `/\s+[-–—]\s*(WORD|…)\s*$/i` found, scanned from the
 * end in linear time (that regex is quadratic on a long run of spaces). `index` is where the
 * match starts, `word` the word as written.
 */
export function trailingDashWord(body: string, words: readonly string[]): { index: number; word: string } | undefined {
  let end = body.length;
  while (end > 0 && isWhitespace(body[end - 1])) end -= 1;
  for (const word of words) {
    const wordStart = end - word.length;
    if (!startsWithAt(body, word, wordStart)) continue;
    let dash = wordStart;
    while (dash > 0 && isWhitespace(body[dash - 1])) dash -= 1;
    dash -= 1;
    if (dash < 1 || !'-–—'.includes(body[dash]) || !isWhitespace(body[dash - 1])) continue;
    let index = dash - 1;
    while (index > 0 && isWhitespace(body[index - 1])) index -= 1;
    return { index, word: body.slice(wordStart, end) };
  }
  return undefined;
}

/** `/^(word|…)\s+(.+)$/i` in linear time: the verb and the rest after its whitespace. */
export function leadingWordAndRest(body: string, words: readonly string[]): { word: string; rest: string } | undefined {
  const verb = words.find((v) => startsWithAt(body, v, 0));
  if (!verb) return undefined;
  let restStart = verb.length;
  while (restStart < body.length && isWhitespace(body[restStart])) restStart += 1;
  const spaces = restStart - verb.length;
  if (spaces === 0) return undefined;
  if (restStart === body.length) {
    // `\s+` gives its last character back to `(.+)` when nothing else is left.
    if (spaces < 2) return undefined;
    restStart -= 1;
  }
  const rest = body.slice(restStart);
  if (rest.length === 0 || [...LINE_TERMINATORS].some((t) => rest.includes(t))) return undefined;
  return { word: body.slice(0, verb.length), rest };
}


const isWordOrApostrophe = (ch: string | undefined) => ch !== undefined && (ch === "'" || /\w/.test(ch));

/**
 * Whether a text holds one of the phrases as whole words, in any case: what
 * `new RegExp(`(^|[^\\w'])(${phrases.map(escape).join('|')})(?![\\w'])`, 'i').test(text)` did,
 * without a regex built at run time from a session's overrides. Aho-Corasick over the lower-cased
 * text, so the time is linear in the text whatever the phrases (up to 100 of 200 characters, the
 * override's range), where the alternation could cost the text's length times the phrases'.
 * Case is folded with toLowerCase (the regex's `/i` differs only for a few non-ASCII letters); an
 * empty phrase matches nothing.
 */
export function wholePhraseTest(phrases: readonly string[]): (text: string) => boolean {
  const next: Map<string, number>[] = [new Map()];
  const lengths: number[][] = [[]];
  for (const phrase of phrases) {
    const p = phrase.toLowerCase();
    if (p.length === 0) continue;
    let v = 0;
    for (let k = 0; k < p.length; k++) {
      const ch = p[k];
      let to = next[v].get(ch);
      if (to === undefined) {
        to = next.length;
        next.push(new Map());
        lengths.push([]);
        next[v].set(ch, to);
      }
      v = to;
    }
    lengths[v].push(p.length);
  }
  // Failure links, and for each node the nearest failure ancestor that ends a phrase.
  const fail = new Array<number>(next.length).fill(0);
  const ends = new Array<number>(next.length).fill(-1);
  const queue: number[] = [...next[0].values()];
  for (let q = 0; q < queue.length; q++) {
    const v = queue[q];
    for (const [ch, to] of next[v]) {
      let f = fail[v];
      while (f !== 0 && !next[f].has(ch)) f = fail[f];
      const target = next[f].get(ch);
      fail[to] = target !== undefined && target !== to ? target : 0;
      ends[to] = lengths[fail[to]].length > 0 ? fail[to] : ends[fail[to]];
      queue.push(to);
    }
  }
  return (text: string) => {
    const lower = text.toLowerCase();
    let v = 0;
    for (let i = 0; i < lower.length; i++) {
      const ch = lower[i];
      while (v !== 0 && !next[v].has(ch)) v = fail[v];
      v = next[v].get(ch) ?? 0;
      if (isWordOrApostrophe(lower[i + 1])) continue;
      for (let u = lengths[v].length > 0 ? v : ends[v]; u > 0; u = ends[u]) {
        for (const n of lengths[u]) if (!isWordOrApostrophe(lower[i + 1 - n - 1])) return true;
      }
    }
    return false;
  };
}
