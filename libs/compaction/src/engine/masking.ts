import { Block, CanonicalMessage } from '../messages/canonical';
import { Protection } from './protection';
import { CountMessage, SessionMessage } from './types';
import { placeholderKeys } from '../ledger/placeholder';
import { errorLines } from '../ledger/errors';
import { toolResultText } from '../ledger/rules';
import { toolNameLookup } from './tool-pairs';
import { formMemo } from './form-memo';

export interface MaskingParams {
  /** Tool outputs of the latest K assistant turns stay visible (`balanced`: 10). */
  keepLatestTurns: number;
  /** Results at or below this many tokens are not worth masking. */
  minTokens: number;
  /**
   * Stop once the messages total at most this many tokens: outputs are masked oldest first, and
   * newer ones stay whole while the context is already down to it (the budget is used, issue #14).
   * Undefined: every output older than the latest turns is masked.
   */
  downToTokens?: number;
}

export interface MaskingResult {
  messages: SessionMessage[];
  /** Seqs whose tool outputs were masked. */
  masked: number[];
  tokensBefore: number;
  tokensAfter: number;
}

/** Masked forms, kept with their messages (formMemo): the read-time fallback masks the same stored messages on every read. */
const maskedForm = formMemo<SessionMessage>();

/**
 * Observation masking: the output of old tool calls is replaced by a one-line placeholder
 * that names the tool, its size and where the full output is (the history keeps it, Guarantee
 * 1). The tool_result block itself stays, with its id and error flag, so every tool pair is
 * intact (Guarantee 2). Protected messages and exempt tools are left alone (Guarantee 3), and
 * a message is only replaced when masking makes it smaller (Guarantee 5).
 */
export function maskObservations(messages: SessionMessage[], protection: Protection, params: MaskingParams, count: CountMessage): MaskingResult {
  const nameOf = toolNameLookup(messages);

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
  let total = params.downToTokens === undefined ? Infinity : messages.reduce((n, m) => n + m.tokens, 0);
  const out = messages.map((m, i) => {
    if (i >= boundary || protection.whole.has(m.seq)) return m;
    if (params.downToTokens !== undefined && total <= params.downToTokens) return m;
    if (!m.message.blocks.some((b) => b.type === 'tool_result')) return m;
    // Which blocks go, and under which tool name: the whole input of the masked form besides the message.
    const maskAs = m.message.blocks.map((b) => {
      if (b.type !== 'tool_result' || protection.exemptToolUseIds.has(b.toolUseId)) return '';
      const text = toolResultText(b.content);
      // Already short: a mask, or an artifact reference that names where the full output is.
      if (text.startsWith('[masked tool output') || text.startsWith('[offloaded tool output')) return '';
      if (Math.ceil(text.length / 4) <= params.minTokens) return '';
      return nameOf(i, b.toolUseId) ?? 'tool';
    });
    if (maskAs.every((name) => name === '')) return m;
    const result = maskedForm(m, maskAs, count, () => maskMessage(m, maskAs, count));
    if (result === m || result.tokens >= m.tokens) return m;
    masked.push(m.seq);
    total -= m.tokens - result.tokens;
    return result;
  });
  const sum = (xs: SessionMessage[]) => xs.reduce((n, m) => n + m.tokens, 0);
  return { messages: out, masked, tokensBefore: sum(messages), tokensAfter: sum(out) };
}

/** `m` with the tool outputs `maskAs` names (by tool name; '' = kept) replaced by their placeholder, counted again. */
function maskMessage(m: SessionMessage, maskAs: string[], count: CountMessage): SessionMessage {
  const blocks: Block[] = m.message.blocks.map((b, j) => {
    if (b.type !== 'tool_result' || maskAs[j] === '') return b;
    const text = toolResultText(b.content);
    const approxTokens = Math.ceil(text.length / 4);
    const lines = text.split('\n').length;
    const placeholder = `[masked tool output: ${maskAs[j]}, ${lines} lines, ~${approxTokens} tokens; the full output is in the session history at seq ${m.seq}]`;
    const errors = errorLines(text);
    // The ledger keys it held (SPEC.md "Facts ledger"): settings, versions, tests, URLs, ids, a few paths.
    const keys = placeholderKeys(text);
    const withKeys = keys ? `${placeholder}\nKeys in it: ${keys}` : placeholder;
    return { ...b, content: errors.length > 0 ? `${withKeys}\nErrors in it:\n${errors.join('\n')}` : withKeys };
  });
  const message: CanonicalMessage = { ...m.message, blocks };
  const tokens = count(message);
  return tokens >= m.tokens ? m : { seq: m.seq, message, tokens };
}
