/**
 * The error signatures of a tool output (SPEC.md "Facts ledger"): the lines a masked output's
 * placeholder keeps and the ledger's error entries. General shapes of failure reports in shell
 * output, test runners and stack traces.
 */
import { namesErrno } from './rules';

/** Lines that report a failure: what an agent most needs to remember of an output it no longer sees. */
// Each signature is one regex recheck proves linear (lint: compactor/redos-safe); joined in one
// alternation the checker times out, so a line matches when any of them does.
const ERROR_LINE = [
  /\b(error|exception|traceback|failed|failure|fatal|panic|denied|not found|cannot|unable to|refused|timed out|timeout)\b/i,
  /\bE\s{2,}/i,
  /exit (code|status) [1-9]/i,
  /\bHTTP\/\d(\.\d)? [45]\d\d\b/i,
  /\b[45]\d\d (Bad|Unauthorized|Forbidden|Not Found|Conflict|Too Many|Internal|Service|Gateway)/i,
];
/** A named failure: an exception or error type, an error code, a panic, an HTTP error status. */
const NAMED_FAILURE = [/\b[A-Z]\w*(Error|Exception|Violation|Fault)\b/, /\b(TS|E|P|CS|ERR)\d{3,5}\b/, /^(panic|fatal error|error(\[\w+\])?):/, /\bHTTP\/\d(\.\d)? [45]\d\d\b/];
const matchesAny = (res: readonly RegExp[], line: string) => res.some((re) => re.test(line));
/** A named failure; errno names are the ledger's own list (rules.ts), so a file such as `EDITORS.md` in an `ls` (ponyc-4593) is none. */
const namesFailure = (line: string) => matchesAny(NAMED_FAILURE, line) || namesErrno(line);
/** A failure line that is only its label ("ERROR:", "Error:"): what failed is on the next line (OpenHands' editor, ponyc-4593). */
const BARE_LABEL = /^[A-Za-z][A-Za-z ]{0,19}:$/;
/** Run summaries name no failure themselves ("Tests: 1 failed, 228 passed"); the failure line does. */
const SUMMARY_LINE = /^(Test Suites|Tests|Ran \d|=+ .* =+$|FAILED \(|\d+ (failed|passed)|ok\s|--- (PASS|FAIL))/;
/** The frame that names where it failed: Go's first frame after `goroutine N [running]:`, Python's last `File "…", line N, in f`. */
const GO_GOROUTINE = /^goroutine \d+ \[running\]:$/;
const PY_FRAME = /^File "[^"]+", line \d+, in \S+/;

const cut200 = (line: string) => (line.length > 200 ? `${line.slice(0, 199)}…` : line);
/**
 * Source code, not a report: numbered listing lines, diff lines, declarations and statements
 * (`raise ValueError(…)` in a file read, `import { NotFoundException }` in a diff). A traceback's
 * code line is followed by the exception line, which is the one to keep.
 */
const CODE_LINE = [
  // `12: x`, `12 | x`, `12<tab>x`, and Claude Code's Read listing `    12→x` (claude-code fe5e1c67, 5c0375b4).
  /^(?:[+-]\s*)?(?:\d+\s*[:|]\s|\d+\t|\d+→)/,
  /^(?:[+-]\s*)?(?:import\s|from\s+\S+\s+import\s|export\s)/,
  /^(?:[+-]\s*)?(?:const|let|var|def|class|func|fn|package|return|raise|throw|elif|except|catch|public|private|protected|static)\b/,
  /^(?:[+-]\s*)?(?:#include\b|@\w)/,
  /[;{]\s*$/,
];
const indentOf = (line: string) => line.length - line.trimStart().length;

/**
 * Up to three distinct failure lines of an output, each cut to 200 characters, in their order
 * (deterministic): named failures first (exception types, error codes, panics, HTTP error
 * statuses), with the stack frame that says where, then other failure lines; run summaries last.
 */
export function errorLines(text: string): string[] {
  const raw = text.split('\n');
  const lines = raw.map((l) => l.trim());
  const scored: { i: number; score: number }[] = [];
  /** A named failure's indented continuation ("  In the call to 'f'.", a diagnostic's detail line) goes with it. */
  const continuation = new Map<number, string>();
  let lastPyFrame = -1;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.length === 0) continue;
    if (PY_FRAME.test(line)) lastPyFrame = i;
    if (matchesAny(CODE_LINE, line)) continue;
    if (!matchesAny(ERROR_LINE, line) && !namesFailure(line)) continue;
    const named = namesFailure(line);
    const next = lines[i + 1];
    if (BARE_LABEL.test(line)) {
      const said = lines.slice(i + 1, i + 4).find((l) => l.length > 0);
      if (!said) continue;
      continuation.set(i, said);
    }
    if (named && next && indentOf(raw[i + 1]) > indentOf(raw[i]) && !matchesAny(CODE_LINE, next) && !PY_FRAME.test(next) && !namesFailure(next)) continuation.set(i, next);
    scored.push({ i, score: named ? 3 : SUMMARY_LINE.test(line) ? 0 : 1 });
    // A named failure's location: the innermost Python frame before it, or the Go frame after the panic.
    if (named && lastPyFrame >= 0 && lastPyFrame > i - 4) scored.push({ i: lastPyFrame, score: 2.5 });
    if (/^(panic|fatal error):/.test(line)) {
      const g = lines.findIndex((l, k) => k > i && k < i + 6 && GO_GOROUTINE.test(l));
      if (g >= 0 && lines[g + 1]) scored.push({ i: g + 1, score: 2.5 });
    }
  }
  const chosen = new Set<number>();
  const seen = new Set<string>();
  for (const { i } of [...scored].sort((a, b) => b.score - a.score || a.i - b.i)) {
    const line = cut200(lines[i]);
    if (seen.has(line)) continue;
    seen.add(line);
    chosen.add(i);
    if (chosen.size === 3) break;
  }
  return [...chosen].sort((a, b) => a - b).map((i) => (continuation.has(i) ? `${cut200(lines[i])} ${cut200(continuation.get(i) ?? '')}` : cut200(lines[i])));
}

