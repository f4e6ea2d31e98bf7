// Linear-time scans for the local summarizer's line shapes whose natural regular expressions
// backtrack super-linearly on adversarial text (or that the linear-time checker cannot decide:
// lookbehind, bounded lazy repetition). Each does exactly what the regex named in its comment did;
// line-scan.spec.ts checks them against those regexes.

const WS = /\s/;
const isWs = (ch: string | undefined): boolean => ch !== undefined && WS.test(ch);
const isDigit = (ch: string | undefined): boolean => ch !== undefined && ch >= '0' && ch <= '9';
const isUpper = (ch: string | undefined): boolean => ch !== undefined && ch >= 'A' && ch <= 'Z';
/** What `.` does not match. */
const isLineTerminator = (ch: string) => ch === '\n' || ch === '\r' || ch === '\u2028' || ch === '\u2029';

/** `s.split(/(?<=[.!?])\s+(?=[A-Z0-9"'`([*])/)`: splits after sentence punctuation before a sentence start. */
export function splitSentences(s: string): string[] {
  const out: string[] = [];
  let from = 0;
  let i = 1;
  while (i < s.length) {
    const prev = s[i - 1];
    if (isWs(s[i]) && (prev === '.' || prev === '!' || prev === '?')) {
      let end = i;
      while (end < s.length && isWs(s[end])) end += 1;
      if (end < s.length && (isUpper(s[end]) || isDigit(s[end]) || '"\'`([*'.includes(s[end]))) {
        out.push(s.slice(from, i));
        from = end;
      }
      i = end + 1;
      continue;
    }
    i += 1;
  }
  out.push(s.slice(from));
  return out;
}

/** `s.split(/(?<=[.;!?])\s+|,(?=\s*")/)`: splits a long line at whitespace after clause punctuation and at a comma before a quote. */
export function splitClauses(s: string): string[] {
  const out: string[] = [];
  let from = 0;
  let i = 0;
  while (i < s.length) {
    const prev = s[i - 1];
    if (i > 0 && isWs(s[i]) && (prev === '.' || prev === ';' || prev === '!' || prev === '?')) {
      let end = i;
      while (end < s.length && isWs(s[end])) end += 1;
      out.push(s.slice(from, i));
      from = end;
      i = end;
      continue;
    }
    if (s[i] === ',') {
      let j = i + 1;
      while (j < s.length && isWs(s[j])) j += 1;
      if (s[j] === '"') {
        out.push(s.slice(from, i));
        from = i + 1;
      }
    }
    i += 1;
  }
  out.push(s.slice(from));
  return out;
}

const isTagChar = (ch: string) => isUpper(ch) || isDigit(ch) || ch === ' ' || ch === '_' || ch === '-';
const isTagSeparator = (ch: string) => isWs(ch) || ch === ':' || ch === '#' || ch === '·';

/**
 * Where a bracket tag at the start of `s` ends (the index after its `]`), or -1: the
 * `^\[[A-Z][A-Z0-9 _-]*(?:[\s:#·][^\]\n]*)?\]` of `[SUMMARY]`, `[CHECKPOINT 2 · turns 1-9]`.
 * No character of the tag is `]`, so its end is the first `]`.
 */
export function bracketTagEnd(s: string): number {
  if (s[0] !== '[' || !isUpper(s[1])) return -1;
  const close = s.indexOf(']', 2);
  if (close < 0) return -1;
  // The rest inside the brackets: tag characters, then optionally a separator and anything but a newline.
  let i = 2;
  while (i < close && isTagChar(s[i])) i += 1;
  if (i === close) return close + 1;
  const newlineFrom = (k: number) => {
    const n = s.indexOf('\n', k);
    return n >= 0 && n < close;
  };
  // The separator right after the tag characters (a newline may be it), or an earlier space of them.
  if (isTagSeparator(s[i]) && !newlineFrom(i + 1)) return close + 1;
  if (!newlineFrom(i) && s.slice(2, i).includes(' ')) return close + 1;
  return -1;
}

/** `/^\[[A-Z][A-Z0-9 _-]*(?:[\s:#·][^\]\n]*)?\]:?$/.test(line)`: a line that is only a bracket tag. */
export function isBracketTagLine(line: string): boolean {
  const end = bracketTagEnd(line);
  if (end < 0) return false;
  return end === line.length || (end === line.length - 1 && line[end] === ':');
}

/** `text.replace(/^\[[A-Z][A-Z0-9 _-]*(?:[\s:#·][^\]\n]*)?\]:?[ \t]*\n?/, '')`: a leading bracket header goes. */
export function withoutBracketHeader(text: string): string {
  let end = bracketTagEnd(text);
  if (end < 0) return text;
  if (text[end] === ':') end += 1;
  while (text[end] === ' ' || text[end] === '\t') end += 1;
  if (text[end] === '\n') end += 1;
  return text.slice(end);
}

/** `/^(#{1,6})\s+(.+?)\s*#*$/.exec(line)`: a Markdown heading's level (the hashes) and title. */
export function markdownHeading(line: string): { hashes: string; title: string } | undefined {
  let level = 0;
  while (line[level] === '#') level += 1;
  if (level < 1 || level > 6 || !isWs(line[level])) return undefined;
  let p = level;
  while (p < line.length && isWs(line[p])) p += 1;
  // The title starts after the whitespace; when nothing follows it, the whitespace gives its last
  // character that is not a line terminator back (one at least must stay).
  let start = p;
  if (p === line.length) {
    start = p - 1;
    while (start > level && isLineTerminator(line[start])) start -= 1;
  }
  if (start < level + 1) return undefined;
  // The shortest title after which only whitespace and then hashes remain.
  let hashesFrom = line.length;
  while (hashesFrom > 0 && line[hashesFrom - 1] === '#') hashesFrom -= 1;
  let tailFrom = hashesFrom;
  while (tailFrom > 0 && isWs(line[tailFrom - 1])) tailFrom -= 1;
  const end = Math.max(tailFrom, start + 1);
  const title = line.slice(start, end);
  for (const ch of title) if (isLineTerminator(ch)) return undefined;
  return { hashes: line.slice(0, level), title };
}

/** The length of a list marker at `s`'s start (`1.`, `12)`, `-`, `*`, `•`): `\d{1,2}[.)]|[-*•]`; 0 when none. */
function markerLength(s: string): number {
  if (isDigit(s[0])) {
    if (isDigit(s[1]) && (s[2] === '.' || s[2] === ')')) return 3;
    if (s[1] === '.' || s[1] === ')') return 2;
    return 0;
  }
  return s[0] === '-' || s[0] === '*' || s[0] === '•' ? 1 : 0;
}

/** After a marker, the whitespace it needs (`\s+`): where the text starts, or -1. */
function afterMarkerSpace(s: string, marker: number): number {
  if (marker === 0 || !isWs(s[marker])) return -1;
  let i = marker;
  while (i < s.length && isWs(s[i])) i += 1;
  return i;
}

/** `**label**` at `at`, 2-60 characters without `*`, followed by `\s*` and `:`, a dash or the end. */
function boldAt(s: string, at: number): string | undefined {
  if (s[at] !== '*' || s[at + 1] !== '*') return undefined;
  const close = s.indexOf('*', at + 2);
  if (close < 0 || s[close + 1] !== '*') return undefined;
  const label = s.slice(at + 2, close);
  if (label.length < 2 || label.length > 60) return undefined;
  let i = close + 2;
  while (i < s.length && isWs(s[i])) i += 1;
  return i === s.length || ':—–-'.includes(s[i]) ? label : undefined;
}

/** `/^(?:(?:\d{1,2}[.)]|[-*•])\s+)?\*\*([^*]{2,60}?)\*\*\s*(?::|—|–|-|$)/.exec(s)?.[1]`: a bold label, optionally listed. */
export function boldLabel(s: string): string | undefined {
  const text = afterMarkerSpace(s, markerLength(s));
  return (text >= 0 ? boldAt(s, text) : undefined) ?? boldAt(s, 0);
}

/**
 * `/^(\d{1,2}[.)]|[-*•])\s+([A-Z][^:—–\n]{1,60}?)\s*(?::|—|–|\s-\s|$)/.exec(s)`: a listed
 * label starting with a capital, alone or before `:`, a dash or ` - `: its marker and label.
 */
export function listedLabel(s: string): { marker: string; label: string } | undefined {
  const marker = markerLength(s);
  const start = afterMarkerSpace(s, marker);
  if (start < 0 || !isUpper(s[start])) return undefined;
  for (let end = start + 2; end <= start + 61 && end <= s.length; end++) {
    const last = s[end - 1];
    if (last === ':' || last === '—' || last === '–' || last === '\n') return undefined;
    let i = end;
    while (i < s.length && isWs(s[i])) i += 1;
    const ends = i === s.length || s[i] === ':' || s[i] === '—' || s[i] === '–' || (s[i] === '-' && i > end && isWs(s[i + 1]));
    if (ends) return { marker: s.slice(0, marker), label: s.slice(start, end) };
  }
  return undefined;
}
