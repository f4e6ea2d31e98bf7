import { Block, CanonicalMessage, ToolResultBlock } from '../messages/canonical';
import { Protection } from './protection';
import { CountMessage, SessionMessage } from './types';
import { placeholderKeys } from '../ledger/placeholder';

export interface MaskingParams {
  /** Tool outputs of the latest K assistant turns stay visible (`balanced`: 10). */
  keepLatestTurns: number;
  /** Results at or below this many tokens are not worth masking. */
  minTokens: number;
}

export interface MaskingResult {
  messages: SessionMessage[];
  /** Seqs whose tool outputs were masked. */
  masked: number[];
  tokensBefore: number;
  tokensAfter: number;
}

/** Lines that report a failure: what an agent most needs to remember of an output it no longer sees. */
const ERROR_LINE = /\b(error|exception|traceback|failed|failure|fatal|panic|denied|not found|cannot|unable to|refused|timed out|timeout)\b|\bE\s{2,}|exit (code|status) [1-9]|\bHTTP\/\d(\.\d)? [45]\d\d\b|\b[45]\d\d (Bad|Unauthorized|Forbidden|Not Found|Conflict|Too Many|Internal|Service|Gateway)/i;
/** A named failure: an exception or error type, an error code, a panic, an HTTP error status. */
const NAMED_FAILURE = /\b[A-Z]\w*(Error|Exception|Violation|Fault)\b|\bE[A-Z]{4,}\b|\b(TS|E|P|CS|ERR)\d{3,5}\b|^(panic|fatal error|error(\[\w+\])?):|\bHTTP\/\d(\.\d)? [45]\d\d\b/;
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
const CODE_LINE =
  /^(?:[+-]\s*)?(?:\d+\s*[:|]\s|\d+\t|import\s|from\s+\S+\s+import\s|export\s|(?:const|let|var|def|class|func|fn|package|return|raise|throw|elif|except|catch|public|private|protected|static)\b|#include\b|@\w)|[;{]\s*$/;
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
    if (CODE_LINE.test(line)) continue;
    if (!ERROR_LINE.test(line) && !NAMED_FAILURE.test(line)) continue;
    const named = NAMED_FAILURE.test(line);
    const next = lines[i + 1];
    if (named && next && indentOf(raw[i + 1]) > indentOf(raw[i]) && !CODE_LINE.test(next) && !PY_FRAME.test(next) && !NAMED_FAILURE.test(next)) continuation.set(i, next);
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

const resultText = (b: ToolResultBlock): string =>
  typeof b.content === 'string' ? b.content : b.content.map((p) => (p.type === 'text' ? p.text : '')).join('\n');

/**
 * Observation masking: the output of old tool calls is replaced by a one-line placeholder
 * that names the tool, its size and where the full output is (the history keeps it, Guarantee
 * 1). The tool_result block itself stays, with its id and error flag, so every tool pair is
 * intact (Guarantee 2). Protected messages and exempt tools are left alone (Guarantee 3), and
 * a message is only replaced when masking makes it smaller (Guarantee 5).
 */
export function maskObservations(messages: SessionMessage[], protection: Protection, params: MaskingParams, count: CountMessage): MaskingResult {
  const names = new Map<string, string>();
  for (const m of messages) for (const b of m.message.blocks) if (b.type === 'tool_use') names.set(b.id, b.name);

  // The boundary: the start of the K-th latest assistant turn.
  let turns = 0;
  let boundary = messages.length;
  for (let i = messages.length - 1; i >= 0 && turns < params.keepLatestTurns; i -= 1) {
    if (messages[i].message.role === 'assistant') {
      turns += 1;
      boundary = i;
    }
  }
  if (params.keepLatestTurns <= 0) boundary = messages.length;

  const masked: number[] = [];
  const out = messages.map((m, i) => {
    if (i >= boundary || protection.whole.has(m.seq)) return m;
    let changed = false;
    const blocks: Block[] = m.message.blocks.map((b) => {
      if (b.type !== 'tool_result' || protection.exemptToolUseIds.has(b.toolUseId)) return b;
      const text = resultText(b);
      // Already short: a mask, or an artifact reference that names where the full output is.
      if (text.startsWith('[masked tool output') || text.startsWith('[offloaded tool output')) return b;
      const approxTokens = Math.ceil(text.length / 4);
      if (approxTokens <= params.minTokens) return b;
      changed = true;
      const name = names.get(b.toolUseId) ?? 'tool';
      const lines = text.split('\n').length;
      const placeholder = `[masked tool output: ${name}, ${lines} lines, ~${approxTokens} tokens; the full output is in the session history at seq ${m.seq}]`;
      const errors = errorLines(text);
      // The ledger keys it held (SPEC.md "Facts ledger"): settings, versions, tests, URLs, ids, a few paths.
      const keys = placeholderKeys(text);
      const withKeys = keys ? `${placeholder}\nKeys in it: ${keys}` : placeholder;
      return { ...b, content: errors.length > 0 ? `${withKeys}\nErrors in it:\n${errors.join('\n')}` : withKeys };
    });
    if (!changed) return m;
    const message: CanonicalMessage = { ...m.message, blocks };
    const tokens = count(message);
    if (tokens >= m.tokens) return m;
    masked.push(m.seq);
    return { seq: m.seq, message, tokens };
  });
  const sum = (xs: SessionMessage[]) => xs.reduce((n, m) => n + m.tokens, 0);
  return { messages: out, masked, tokensBefore: sum(messages), tokensAfter: sum(out) };
}
