// Linear-time scans for the local summarizer's file-path signals (signals.ts) whose regular
// expressions the linear-time checker could not decide (lookbehind, lookahead, patterns built at
// run time) or that backtrack super-linearly on adversarial text. Each returns exactly what the
// regex named in its comment found, in the same order; signal-scan.spec.ts checks them against
// those regexes.

const isWordCode = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
/** `[\w@+.-]`: a path segment's characters. */
const isSegmentCode = (c: number) => isWordCode(c) || c === 64 || c === 43 || c === 46 || c === 45;
/** `[\w:/.@%-]`: what a slash path must not follow. */
const isSlashPathGlue = (c: number) => isWordCode(c) || c === 58 || c === 47 || c === 46 || c === 64 || c === 37 || c === 45;
/** `[\w/.@:-]`: what a bare file name must not follow. */
const isBareFileGlue = (c: number) => isWordCode(c) || c === 47 || c === 46 || c === 64 || c === 58 || c === 45;
/** `[\w/.-]`: what a special file name must not follow. */
const isSpecialGlue = (c: number) => isWordCode(c) || c === 47 || c === 46 || c === 45;
/** `[\w/-]`: what a special file name must not precede. */
const isSpecialTail = (c: number) => isWordCode(c) || c === 47 || c === 45;
const SLASH = 47;
const DOT = 46;

/** The alternatives of an `a|b?c` extension list, each optional letter written out both ways. */
export function extensionSet(list: string): Set<string> {
  const out = new Set<string>();
  for (const alt of list.split('|')) {
    const q = alt.indexOf('?');
    if (q < 0) out.add(alt);
    else {
      out.add(alt.slice(0, q) + alt.slice(q + 1));
      out.add(alt.slice(0, q - 1) + alt.slice(q + 1));
    }
  }
  return out;
}

/**
 * `new RegExp(`\\.(?:${list})$`, 'i').test(p)`: the text after the last dot is one of the
 * extensions, in any ASCII case (a non-ASCII letter never folds to an ASCII one under `i`).
 */
export function hasExtension(p: string, extensions: Set<string>): boolean {
  const dot = p.lastIndexOf('.');
  if (dot < 0) return false;
  const ext = p.slice(dot + 1);
  for (let k = 0; k < ext.length; k++) if (ext.charCodeAt(k) > 127) return false;
  return extensions.has(ext.toLowerCase());
}

/**
 * The matches of `/(?<![\w:/.@%-])(?:~|\.{1,2})?\/?(?:[\w@+.-]+\/)+[\w@+.-]*[\w@+-]/g`: slash paths
 * (`src/a.ts`, `/usr/bin/python`, `./x`, `~/y`), never part of a URL.
 *
 * The regex, from where its segments start: runs of `[\w@+.-]` each followed by a slash (the
 * "chain"), at least one, then the last character other than a dot of the runs after the first
 * slash (the greedy tail backs off to it, giving up whole segments). One pass from the right
 * gives, for each position, where its run ends and the last such character of the chain from
 * there; every start is then O(1), where the regex rescanned the chain from each one.
 */
export function slashPaths(s: string): string[] {
  const n = s.length;
  const runEnd = new Int32Array(n + 1);
  /** The last `[\w@+-]` of the run from p (to runEnd[p]), or -1. */
  const runLast = new Int32Array(n + 1);
  /** The last `[\w@+-]` of the chain from p (its runs and slashes), or -1. */
  const chainLast = new Int32Array(n + 1);
  runEnd[n] = n;
  runLast[n] = -1;
  chainLast[n] = -1;
  for (let p = n - 1; p >= 0; p--) {
    const c = s.charCodeAt(p);
    if (isSegmentCode(c)) {
      runEnd[p] = runEnd[p + 1];
      runLast[p] = runLast[p + 1] >= 0 ? runLast[p + 1] : c !== DOT ? p : -1;
    } else {
      runEnd[p] = p;
      runLast[p] = -1;
    }
    const r = runEnd[p];
    chainLast[p] = r > p && s.charCodeAt(r) === SLASH && chainLast[r + 1] >= 0 ? chainLast[r + 1] : runLast[p];
  }
  /** Where `(?:[\w@+.-]+\/)+[\w@+.-]*[\w@+-]` starting at j ends, or -1. */
  const body = (j: number): number => {
    if (j >= n || !isSegmentCode(s.charCodeAt(j))) return -1;
    const r = runEnd[j];
    if (s.charCodeAt(r) !== SLASH || chainLast[r + 1] < 0) return -1;
    return chainLast[r + 1] + 1;
  };
  /** The prefix `(?:~|\.{1,2})?\/?` in the regex's order of tries: longest first. */
  const at = (i: number): number => {
    const c0 = s.charCodeAt(i);
    const c1 = s.charCodeAt(i + 1);
    const heads: number[] = [];
    if (c0 === 126) heads.push(i + 1);
    if (c0 === DOT && c1 === DOT) heads.push(i + 2);
    if (c0 === DOT) heads.push(i + 1);
    heads.push(i);
    for (const h of heads) {
      if (s.charCodeAt(h) === SLASH) {
        const end = body(h + 1);
        if (end >= 0) return end;
      }
      const end = body(h);
      if (end >= 0) return end;
    }
    return -1;
  };
  const out: string[] = [];
  let i = 0;
  while (i < n) {
    if (i === 0 || !isSlashPathGlue(s.charCodeAt(i - 1))) {
      const end = at(i);
      if (end > i) {
        out.push(s.slice(i, end));
        i = end;
        continue;
      }
    }
    i += 1;
  }
  return out;
}

/**
 * The matches of `new RegExp(`(?<![\\w/.@:-])[A-Za-z0-9_@+-][\\w@+.-]*\\.(?:${list})\\b(?![\\w/(-])`, 'g')`:
 * bare file names (`setup.py`). The greedy name backs off to the last dot in its run of
 * `[\w@+.-]` whose following word is exactly an extension (the `\b`) and is not followed by a
 * slash, `(` or `-`. That dot is the same for every start in the run: it is found once per run.
 */
export function bareFiles(s: string, extensions: Set<string>): string[] {
  const n = s.length;
  const wordEnd = (p: number) => {
    while (p < n && isWordCode(s.charCodeAt(p))) p++;
    return p;
  };
  /** The end of the file name whose extension starts after the dot at d, or -1. */
  const nameEnd = (d: number): number => {
    const w = wordEnd(d + 1);
    if (!extensions.has(s.slice(d + 1, w))) return -1;
    const c = s.charCodeAt(w);
    return c === SLASH || c === 40 || c === 45 ? -1 : w;
  };
  const out: string[] = [];
  // The run of `[\w@+.-]` last looked at: its end and the last good dot in it (with the name's end).
  let runTo = -1;
  let bestDot = -1;
  let bestEnd = -1;
  let i = 0;
  while (i < n) {
    const c = s.charCodeAt(i);
    if ((i === 0 || !isBareFileGlue(s.charCodeAt(i - 1))) && isSegmentCode(c) && c !== DOT) {
      if (i >= runTo) {
        runTo = i;
        bestDot = -1;
        while (runTo < n && isSegmentCode(s.charCodeAt(runTo))) {
          if (s.charCodeAt(runTo) === DOT) {
            const end = nameEnd(runTo);
            if (end >= 0) {
              bestDot = runTo;
              bestEnd = end;
            }
          }
          runTo++;
        }
      }
      if (bestDot > i) {
        out.push(s.slice(i, bestEnd));
        i = bestEnd;
        continue;
      }
    }
    i += 1;
  }
  return out;
}

/** The special names, sticky; `.env` may carry a suffix (`.env.local`). */
const SPECIAL_NAME = /Dockerfile|Makefile|Procfile|Gemfile|Rakefile|Jenkinsfile|Vagrantfile|CMakeLists\.txt|\.env(?:\.\w+)?|\.gitignore|\.dockerignore/y;

/**
 * The matches of `/(?<![\w/.-])(?:Dockerfile|…|\.env(?:\.\w+)?|\.gitignore|\.dockerignore)(?![\w/-])/g`.
 * The lookarounds are checked in code; when `.env.x` is followed by a slash or hyphen, the
 * regex gave the suffix back and matched `.env` (a dot follows it).
 */
export function specialFiles(s: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < s.length) {
    if (i === 0 || !isSpecialGlue(s.charCodeAt(i - 1))) {
      SPECIAL_NAME.lastIndex = i;
      const m = SPECIAL_NAME.exec(s);
      if (m) {
        let end = i + m[0].length;
        if (end < s.length && isSpecialTail(s.charCodeAt(end))) end = m[0].startsWith('.env.') ? i + 4 : -1;
        if (end > i) {
          out.push(s.slice(i, end));
          i = end;
          continue;
        }
      }
    }
    i += 1;
  }
  return out;
}

const WS = /\s/;
const isWs = (ch: string | undefined): boolean => ch !== undefined && WS.test(ch);
/** What `.` does not match. */
const isLineTerminator = (ch: string) => ch === '\n' || ch === '\r' || ch === '\u2028' || ch === '\u2029';

/**
 * `/^(.{3,160}?)\s+(?:→|->|=>)\s+(.+)$/.exec(s)`'s two groups: "command → outcome". The
 * shortest head of 3 to 160 characters on the first line followed by whitespace and an arrow
 * (the greedy whitespace puts the arrow right after the whole run), then whitespace and the rest
 * (when nothing follows the whitespace, its last character, unless a line terminator). The same
 * whitespace run gives the same answer: each is examined once.
 */
export function arrowParts(s: string): { head: string; tail: string } | undefined {
  const n = s.length;
  let firstTerminator = n;
  let lastTerminator = -1;
  for (let k = 0; k < n; k++) {
    if (isLineTerminator(s[k])) {
      if (firstTerminator === n) firstTerminator = k;
      lastTerminator = k;
    }
  }
  let runEnd = -1;
  for (let a = 3; a <= 160 && a <= firstTerminator && a < n; a++) {
    if (!isWs(s[a])) continue;
    if (a < runEnd) continue; // the same whitespace run as the head before: the same failure
    runEnd = a;
    while (runEnd < n && isWs(s[runEnd])) runEnd += 1;
    const arrow = s[runEnd] === '→' ? 1 : (s[runEnd] === '-' || s[runEnd] === '=') && s[runEnd + 1] === '>' ? 2 : 0;
    if (arrow === 0) continue;
    const c = runEnd + arrow;
    if (!isWs(s[c])) continue;
    let x = c;
    while (x < n && isWs(s[x])) x += 1;
    if (x < n) {
      if (lastTerminator < x) return { head: s.slice(0, a), tail: s.slice(x) };
    } else if (n - 1 >= c + 1 && !isLineTerminator(s[n - 1])) return { head: s.slice(0, a), tail: s[n - 1] };
  }
  return undefined;
}
