// Hard checks on a context as the service serves it (SPEC.md Guarantees 2 and 4), in plain JS.
// Each returns a list of problems (empty when valid), naming the message index.

const blocksOf = (m) => (Array.isArray(m?.content) ? m.content : []);

/** Anthropic: user first, roles alternate, every tool_result answers a tool_use of the message right before, every tool_use is answered in the next one. */
export function anthropicProblems(messages) {
  const problems = [];
  if (!Array.isArray(messages) || messages.length === 0) return ['no messages'];
  if (messages[0].role !== 'user') problems.push(`message 0: starts with ${messages[0].role}, not user`);
  messages.forEach((m, i) => {
    if (m.role !== 'user' && m.role !== 'assistant') problems.push(`message ${i}: role ${m.role}`);
    if (i > 0 && m.role === messages[i - 1].role) problems.push(`message ${i}: two ${m.role} messages in a row`);
    const uses = blocksOf(m).filter((b) => b.type === 'tool_use').map((b) => b.id);
    const results = blocksOf(m).filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id);
    if (uses.length && m.role !== 'assistant') problems.push(`message ${i}: tool_use in a ${m.role} message`);
    if (results.length && m.role !== 'user') problems.push(`message ${i}: tool_result in a ${m.role} message`);
    if (new Set(results).size !== results.length) problems.push(`message ${i}: a tool_use answered twice`);
    if (results.length) {
      const before = new Set(blocksOf(messages[i - 1]).filter((b) => b.type === 'tool_use').map((b) => b.id));
      for (const id of results) if (!before.has(id)) problems.push(`message ${i}: tool_result ${id} has no tool_use in the message before`);
    }
    if (uses.length) {
      const after = new Set(blocksOf(messages[i + 1]).filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id));
      for (const id of uses) if (!after.has(id)) problems.push(`message ${i}: tool_use ${id} is not answered in the next message`);
    }
  });
  return problems;
}

/** OpenAI: tool messages follow the assistant message that called them (only tool messages in between); every call is answered. */
export function openaiProblems(messages) {
  const problems = [];
  if (!Array.isArray(messages) || messages.length === 0) return ['no messages'];
  let open = null;
  let opener = -1;
  messages.forEach((m, i) => {
    if (m.role === 'tool') {
      if (!open) problems.push(`message ${i}: tool message without an assistant tool call right before`);
      else if (!open.has(m.tool_call_id)) problems.push(`message ${i}: tool message answers ${m.tool_call_id ?? '(no tool_call_id)'}, not a call of message ${opener}`);
      else open.delete(m.tool_call_id);
      return;
    }
    if (open?.size) problems.push(`message ${opener}: tool call(s) ${[...open].join(', ')} not answered`);
    open = null;
    if (!['system', 'developer', 'user', 'assistant'].includes(m.role)) problems.push(`message ${i}: role ${m.role}`);
    if (m.role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length) {
      open = new Set(m.tool_calls.map((c) => c.id));
      opener = i;
    }
  });
  if (open?.size) problems.push(`message ${opener}: tool call(s) ${[...open].join(', ')} not answered`);
  return problems;
}

/** Guarantee 4: the context never has more tokens than the budget. */
export function budgetProblems(context) {
  const budget = context?.usage?.budget;
  if (typeof context?.tokens !== 'number' || typeof budget !== 'number') return ['no tokens/budget in the response'];
  return context.tokens > budget ? [`${context.tokens} tokens > budget ${budget}`] : [];
}
