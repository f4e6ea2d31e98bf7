import { parseAnthropicMessages } from './anthropic';
import { CanonicalMessage } from './canonical';
import { parseCanonicalMessages } from './canonical-parse';
import { parseOpenAIMessages } from './openai';
import { referencedForeignToolUseIds, validateSequence } from './sequence';

const fresh = () => ({ lastRole: null, openToolUseIds: [] as string[], seenToolUseIds: new Set<string>() });

function anthropic(messages: unknown[]): CanonicalMessage[] {
  const r = parseAnthropicMessages(messages, 'messages');
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.value;
}
function openai(messages: unknown[]): CanonicalMessage[] {
  const r = parseOpenAIMessages(messages, 'messages');
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.value;
}
function canonical(messages: unknown[]): CanonicalMessage[] {
  const r = parseCanonicalMessages(messages, 'messages');
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.value;
}

describe('validateSequence', () => {
  it('accepts what real agents do and returns the open calls', () => {
    const batch = anthropic([
      { role: 'user', content: 'a' },
      { role: 'user', content: 'b' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'x', input: {} }, { type: 'tool_use', id: 'toolu_2', name: 'y', input: {} }] },
      { role: 'user', content: 'while the tools run' },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'ok' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_3', name: 'z', input: {} }] },
    ]);
    const r = validateSequence(fresh(), batch, 'messages');
    expect(r.errors).toEqual([]);
    expect(r.state).toEqual({ lastRole: 'assistant', openToolUseIds: ['toolu_2', 'toolu_3'] });

    // The next append answers them; the stored history is represented by the state.
    const next = validateSequence(
      { ...r.state, seenToolUseIds: new Set() },
      anthropic([
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_3', content: 'ok' },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: 'ok' },
          ],
        },
      ]),
      'messages',
    );
    expect(next).toEqual({ errors: [], state: { lastRole: 'user', openToolUseIds: [] } });
  });

  it('accepts a result for a call found in the stored history, and a reused id after its first call was answered', () => {
    const seen = { lastRole: 'assistant' as const, openToolUseIds: [], seenToolUseIds: new Set(['call_old']) };
    const batch = openai([
      { role: 'tool', tool_call_id: 'call_old', content: 'late' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_a', content: '1' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_a', content: '2' },
    ]);
    expect(validateSequence(seen, batch, 'messages')).toEqual({ errors: [], state: { lastRole: 'tool', openToolUseIds: [] } });
  });

  it('rejects unknown results, duplicate open ids, double answers and misplaced blocks, naming the fields in the shape sent', () => {
    const a = anthropic([
      { role: 'user', content: [{ type: 'text', text: 'x' }, { type: 'tool_result', tool_use_id: 'toolu_unknown', content: '' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'x', input: {} }, { type: 'tool_use', id: 'toolu_1', name: 'x', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '' }, { type: 'tool_result', tool_use_id: 'toolu_1', content: '' }] },
      { role: 'user', content: [{ type: 'tool_use', id: 'toolu_2', name: 'x', input: {} }] },
      { role: 'assistant', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '' }] },
    ]);
    expect(validateSequence({ ...fresh(), openToolUseIds: [] }, a, 'messages').errors.map((e) => e.field)).toEqual([
      'messages[0].content[1].tool_use_id',
      'messages[1].content[1].id',
      'messages[2].content[1].tool_use_id',
      'messages[3].content[0]',
      'messages[4].content[0]',
    ]);

    const o = openai([
      { role: 'system', content: [{ type: 'text', text: 'ok' }, { type: 'image_url', image_url: { url: 'https://x' } }] },
      { role: 'assistant', content: 'hi', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_nope', content: 'x' },
      { role: 'tool', content: 'x', tool_call_ids: ['call_zzz'] },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_2', type: 'function', function: { name: 'f', arguments: '{}' } }, { id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
    ]);
    const errors = validateSequence(fresh(), o, 'messages').errors;
    expect(errors.map((e) => e.field)).toEqual(['messages[0].content[1]', 'messages[2].tool_call_id', 'messages[3].tool_call_ids[0]', 'messages[4].tool_calls[1].id']);
    expect(errors[1].message).toBe("no tool call with id 'call_nope' in this session's history or earlier in this request");

    const c = canonical([{ role: 'tool', blocks: [{ type: 'text', text: 'x' }] }, { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'id_1', content: 'x' }] }]);
    expect(validateSequence(fresh(), c, 'messages').errors.map((e) => e.field)).toEqual(['messages[0].blocks[0]', 'messages[1].blocks[0].toolUseId']);
  });

  it('rejects a reused id while its first call still waits for a result in the stored history', () => {
    const batch = openai([{ role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }] }]);
    const r = validateSequence({ lastRole: 'user', openToolUseIds: ['call_1'], seenToolUseIds: new Set() }, batch, 'messages');
    expect(r.errors).toEqual([{ field: 'messages[0].tool_calls[0].id', message: "duplicate tool call id 'call_1': a call with this id is still waiting for its result" }]);
  });
});

describe('referencedForeignToolUseIds', () => {
  it('lists result ids no call of the batch produces, once each', () => {
    const batch = anthropic([
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_old', content: '' }, { type: 'tool_result', tool_use_id: 'toolu_old', content: '' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_new', name: 'x', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_new', content: '' }, { type: 'tool_result', tool_use_id: 'toolu_other', content: '' }] },
    ]);
    expect(referencedForeignToolUseIds(batch)).toEqual(['toolu_old', 'toolu_other']);
  });
});
