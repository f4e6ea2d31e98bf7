import fc from 'fast-check';
import { toAnthropic } from './anthropic';
import { CanonicalMessage } from './canonical';
import { parseCanonicalMessages } from './canonical-parse';
import { toOpenAI } from './openai';
import { makeProviderValid } from './provider-valid';
import { groupResponsesItems, parseResponsesInput, toResponses } from './responses';
import { validateSequence } from './sequence';

/** What Codex CLI sends: developer and user messages with ids, reasoning with encrypted content, parallel calls, a custom tool call. */
const codexInput = [
  { type: 'message', id: 'msg_1', role: 'developer', content: [{ type: 'input_text', text: 'You are a coding agent.' }] },
  { type: 'message', role: 'user', content: [{ type: 'input_text', text: '<environment_context>cwd</environment_context>' }, { type: 'input_text', text: 'fix the bug' }] },
  { type: 'reasoning', id: 'rs_1', summary: [], content: null, encrypted_content: 'gAAAAB-opaque==' },
  { type: 'function_call', status: 'completed', id: 'fc_1', name: 'exec_command', arguments: '{"cmd":"ls"}', call_id: 'call_1' },
  { type: 'function_call', id: 'fc_2', name: 'exec_command', arguments: '{"cmd": "cat a.txt"}', call_id: 'call_2' },
  { type: 'function_call_output', id: 'fco_1', call_id: 'call_1', output: 'a.txt\nb.txt' },
  { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: 'hello' }] },
  { type: 'custom_tool_call', id: 'ctc_1', status: 'completed', call_id: 'call_3', name: 'apply_patch', input: '*** Begin Patch\n*** End Patch' },
  { type: 'custom_tool_call_output', call_id: 'call_3', output: 'Done!' },
  { type: 'compaction', id: 'cmp_1', encrypted_content: 'opaque-summary' },
  { type: 'message', id: 'msg_2', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Fixed.', annotations: [], logprobs: [] }] },
  { role: 'user', content: 'thanks' },
  { type: 'message', role: 'developer', content: 'mid-conversation note' },
];

function parsed(input: unknown): CanonicalMessage[] {
  const r = parseResponsesInput(input, 'input');
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.value;
}

describe('Responses input items ⇄ canonical', () => {
  it('gives the same items back, whatever they carry (ids, status, encrypted reasoning, compaction items, string content)', () => {
    const messages = parsed(codexInput);
    expect(toResponses(messages)).toEqual(codexInput);
    // Through the store (the canonical form's JSON): still the same items.
    const stored = parseCanonicalMessages(JSON.parse(JSON.stringify(messages)), 'messages');
    expect(stored.ok && toResponses(stored.value)).toEqual(codexInput);
    // Key order is kept too (a forwarded prefix stays byte-identical for the provider's prompt cache).
    expect(JSON.stringify(toResponses(messages))).toBe(JSON.stringify(codexInput));
  });

  it('groups consecutive items of one role, so calls and their outputs sit in adjacent messages like tool_use/tool_result', () => {
    const messages = parsed(codexInput);
    expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'tool', 'assistant', 'user', 'system']);
    expect(messages[2].blocks.map((b) => b.type)).toEqual(['opaque', 'tool_use', 'tool_use']);
    expect(messages[3].blocks.map((b) => (b.type === 'tool_result' ? b.toolUseId : b.type))).toEqual(['call_1', 'call_2']);
    expect(messages[8].inConversation).toBe(true);
    const checked = validateSequence({ lastRole: null, openToolUseIds: [], seenToolUseIds: new Set() }, messages, 'input');
    expect(checked.errors).toEqual([]);
    expect(checked.state.openToolUseIds).toEqual([]);
    expect(groupResponsesItems(codexInput)).toEqual([[0, 1], [1, 2], [2, 5], [5, 7], [7, 8], [8, 9], [9, 11], [11, 12], [12, 13]]);
  });

  it('crosses to Chat Completions and Messages without the Responses-only items', () => {
    const messages = makeProviderValid(parsed(codexInput)).messages;
    const chat = toOpenAI(messages) as Array<{ role: string; tool_calls?: Array<{ id: string }>; tool_call_id?: string }>;
    expect(chat.filter((m) => m.role === 'tool').map((m) => m.tool_call_id)).toEqual(['call_1', 'call_2', 'call_3']);
    expect(JSON.stringify(chat)).not.toContain('encrypted_content');
    const anthropic = toAnthropic(messages);
    expect(JSON.stringify(anthropic)).not.toContain('gAAAAB');
  });

  it('writes messages of other shapes as items: text, function_call, function_call_output', () => {
    const items = toResponses([
      { role: 'system', blocks: [{ type: 'text', text: 'checkpoint summary' }], tags: ['checkpoint'] },
      { role: 'user', blocks: [{ type: 'text', text: 'go' }] },
      { role: 'assistant', blocks: [{ type: 'thinking', thinking: 'x', signature: 's' }, { type: 'text', text: 'ok' }, { type: 'tool_use', id: 'toolu_1', name: 'bash', input: { cmd: 'ls' } }] },
      { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'toolu_1', content: [{ type: 'text', text: 'boom' }], isError: true }] },
    ]);
    expect(items).toEqual([
      { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'checkpoint summary' }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go' }] },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'ok' }] },
      { type: 'function_call', call_id: 'toolu_1', name: 'bash', arguments: '{"cmd":"ls"}' },
      { type: 'function_call_output', call_id: 'toolu_1', output: 'Error: boom' },
    ]);
  });

  it('names the bad field of a bad item', () => {
    const r = parseResponsesInput([{ type: 'message', role: 'user', content: 'hi' }, { type: 'function_call', call_id: 'c 1', name: 'x', arguments: 1 }, 7, { role: 'robot', content: 'x' }], 'input');
    expect(r.ok).toBe(false);
    const fields = r.ok ? [] : r.errors.map((e) => e.field);
    expect(fields).toEqual(expect.arrayContaining(['input[1].call_id', 'input[1].arguments', 'input[2]', 'input[3].role']));
    expect(parseResponsesInput({ nope: 1 }, 'input').ok).toBe(false);
    expect(parsed('just a string')).toEqual([expect.objectContaining({ role: 'user', blocks: [{ type: 'text', text: 'just a string' }] })]);
  });
});

// ------------------------------------------------------------------------------------------
// Properties: Responses histories round-trip exactly, and any context makeProviderValid gives
// (whatever the stages removed) is a valid Responses `input`: every call answered by the items
// right after its turn, no output without its call.

const callId = fc.constantFrom('call_a', 'call_b', 'call_c', 'call_d');
const said = fc.string({ minLength: 1, maxLength: 6 });
/** One turn: a user message, then assistant turns with parallel calls answered by their outputs, then an answer. */
const turn = fc.record({
  user: said,
  steps: fc.array(fc.record({ reasoning: fc.boolean(), calls: fc.uniqueArray(callId, { minLength: 1, maxLength: 3 }), custom: fc.boolean(), outputsReversed: fc.boolean() }), { maxLength: 3 }),
  answer: fc.option(said),
});
const responsesHistory = fc.array(turn, { minLength: 1, maxLength: 4 }).map((turns) => {
  const items: Array<Record<string, unknown>> = [{ type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'system' }] }];
  let n = 0;
  for (const t of turns) {
    items.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text: t.user }] });
    for (const step of t.steps) {
      if (step.reasoning) items.push({ type: 'reasoning', id: `rs_${n}`, summary: [], encrypted_content: `enc${n}` });
      const ids = step.calls.map((c) => `${c}_${n++}`);
      for (const id of ids) items.push(step.custom ? { type: 'custom_tool_call', call_id: id, name: 'apply_patch', input: `patch ${id}` } : { type: 'function_call', id: `fc_${id}`, call_id: id, name: 'exec_command', arguments: JSON.stringify({ cmd: id }) });
      for (const id of step.outputsReversed ? [...ids].reverse() : ids) items.push({ type: step.custom ? 'custom_tool_call_output' : 'function_call_output', call_id: id, output: `out ${id}` });
    }
    if (t.answer !== null) items.push({ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: t.answer, annotations: [] }] });
  }
  return items;
});

/** Every call is answered before the next message item or call turn; every output names a call of the turn before it. */
function responsesProblems(items: unknown[]): string[] {
  const problems: string[] = [];
  let open = new Set<string>();
  let answering = false;
  items.forEach((raw, i) => {
    const item = raw as Record<string, unknown>;
    const type = item.type ?? 'message';
    if (type === 'function_call' || type === 'custom_tool_call') {
      if (answering && open.size > 0) problems.push(`[${i}] a call before the previous calls were answered`);
      if (answering) open = new Set();
      answering = false;
      open.add(item.call_id as string);
    } else if (type === 'function_call_output' || type === 'custom_tool_call_output') {
      answering = true;
      if (!open.delete(item.call_id as string)) problems.push(`[${i}] output for ${String(item.call_id)} without its call right before`);
    } else if (type === 'message') {
      if (open.size > 0) problems.push(`[${i}] calls ${[...open].join(',')} unanswered`);
      open = new Set();
      answering = false;
    }
  });
  if (open.size > 0 && answering) problems.push(`calls ${[...open].join(',')} unanswered at the end`);
  return problems;
}

describe('Responses items: properties', () => {
  const runs = { numRuns: 300, seed: 17 };

  it('round-trip exactly, through the stored canonical form too', () => {
    fc.assert(
      fc.property(responsesHistory, (items) => {
        const messages = parsed(items);
        expect(toResponses(messages)).toEqual(items);
        const stored = parseCanonicalMessages(JSON.parse(JSON.stringify(messages)), 'messages');
        expect(stored.ok && toResponses(stored.value)).toEqual(items);
        expect(validateSequence({ lastRole: null, openToolUseIds: [], seenToolUseIds: new Set() }, messages, 'input').errors).toEqual([]);
      }),
      runs,
    );
  });

  it('any suffix of a history (what a compaction keeps), made provider-valid, is a valid Responses input: pairs are never split', () => {
    fc.assert(
      fc.property(responsesHistory, fc.nat(), (items, cut) => {
        const messages = parsed(items);
        const kept = messages.slice(cut % messages.length);
        const valid = makeProviderValid(kept).messages;
        expect(responsesProblems(toResponses(valid))).toEqual([]);
      }),
      runs,
    );
  });
});
