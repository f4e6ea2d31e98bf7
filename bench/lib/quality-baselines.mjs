// The two baselines of the quality benchmark, computed locally from a session's full history
// (canonical messages with the per-message `tokens` the service counted), at the same budget:
// - truncation: the system prompt plus the newest messages that fit, never starting on a
//   tool result whose call was cut off;
// - observation masking: tool outputs replaced by a short placeholder, oldest first, until
//   the context fits; then truncation if it is still over.

export const MASK_PLACEHOLDER = '[tool output omitted to save context]';

const isToolResult = (m) => m.role === 'tool' || m.blocks.some((b) => b.type === 'tool_result');
const sum = (messages) => messages.reduce((n, m) => n + m.tokens, 0);

/** `messages`: [{ role, blocks, tokens }] in history order. */
export function truncation(messages, budget) {
  let head = 0;
  while (head < messages.length && messages[head].role === 'system') head += 1;
  const system = messages.slice(0, head);
  let used = sum(system);
  let start = messages.length;
  while (start > head && used + messages[start - 1].tokens <= budget) {
    start -= 1;
    used += messages[start].tokens;
  }
  while (start < messages.length && isToolResult(messages[start])) {
    used -= messages[start].tokens;
    start += 1;
  }
  return { messages: [...system, ...messages.slice(start)], tokens: used, dropped: start - head };
}

/** `recount(maskedMessage, original)` gives the masked message's tokens. */
export function observationMasking(messages, budget, recount) {
  const out = messages.map((m) => ({ ...m }));
  let total = sum(out);
  let masked = 0;
  for (let i = 0; i < out.length && total > budget; i += 1) {
    if (!out[i].blocks.some((b) => b.type === 'tool_result')) continue;
    const original = out[i];
    const blocks = original.blocks.map((b) => (b.type === 'tool_result' ? { ...b, content: MASK_PLACEHOLDER } : b));
    const tokens = recount({ ...original, blocks }, original);
    out[i] = { ...original, blocks, tokens };
    total += tokens - original.tokens;
    masked += 1;
  }
  if (total <= budget) return { messages: out, tokens: total, masked, dropped: 0 };
  const cut = truncation(out, budget);
  return { ...cut, masked };
}
