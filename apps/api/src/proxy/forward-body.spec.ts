import { CanonicalMessage, checkpointMessage, goalBlockMessage, parseAnthropicMessages, SessionMessage } from '@compactor/compaction';
import { forwardBody } from './forward-body';
import { ProxyRequest } from './proxy-request';
import { jsonbOrder, storedForm } from './stored-form';

const parse = (messages: unknown[]): CanonicalMessage[] => {
  const parsed = parseAnthropicMessages(messages, 'messages');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
};
const session = (messages: CanonicalMessage[], firstSeq: number): SessionMessage[] => messages.map((message, i) => ({ seq: firstSeq + i, message, tokens: 10 }));

describe('forwardBody', () => {
  const turns = [
    { role: 'user', content: [{ type: 'text', text: 'First task', cache_control: { type: 'ephemeral' } }] },
    { role: 'assistant', content: 'Done.' },
    { role: 'user', content: [{ type: 'text', text: 'Second task' }] },
  ];

  it("keeps the request's own fields and system prompt, moves cache markers to the request's blocks, and puts the goal and checkpoints after the system prompt", () => {
    // Stored: the first message still carries the marker an earlier request put there; this request marks the last one.
    const stored = session(parse(turns), 2);
    const request = new ProxyRequest('anthropic', {
      model: 'claude-opus-4-5',
      max_tokens: 100,
      system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      tools: [{ name: 't', input_schema: { type: 'object' } }],
      messages: [{ role: 'user', content: 'First task' }, turns[1], { role: 'user', content: [{ type: 'text', text: 'Second task', cache_control: { type: 'ephemeral' } }] }],
    });
    const checkpoint = { seq: 1, message: checkpointMessage({ id: 'ckpt_1', fromSeq: 1, toSeq: 1, level: 0, text: 'Earlier work.', tokens: 5, originalTokens: 50 }), tokens: 5 };
    const goal = { seq: 0, message: goalBlockMessage('Ship it.'), tokens: 5 };
    const storedSystem = { seq: 1, message: { role: 'system' as const, blocks: [{ type: 'text' as const, text: 'Old system prompt.' }] }, tokens: 5 };
    const body = JSON.parse(forwardBody({ request, context: [storedSystem, goal, checkpoint, ...stored], compacted: false, leadingSystemSeqs: new Set([1]), seqOf: [2, 3, 4] }).toString());
    expect(Object.keys(body)).toEqual(['model', 'max_tokens', 'system', 'tools', 'messages']);
    expect(body.system).toEqual([
      { type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } },
      { type: 'text', text: '[GOAL BLOCK]\nShip it.' },
      { type: 'text', text: '[CHECKPOINT ckpt_1 · messages 1–1]\nEarlier work.' },
    ]);
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'First task' }] },
      { role: 'assistant', content: 'Done.' },
      { role: 'user', content: [{ type: 'text', text: 'Second task', cache_control: { type: 'ephemeral' } }] },
    ]);
    // The context's own objects are shared with the cache: never changed in place.
    expect(stored[0].message.blocks[0]).toMatchObject({ extras: { cache_control: { type: 'ephemeral' } } });
  });

  it('a retried request is forwarded through its own last message, a prefill after the context', () => {
    const stored = session(parse([...turns, { role: 'assistant', content: 'Recorded answer.' }]), 1);
    const request = new ProxyRequest('anthropic', { model: 'm', max_tokens: 10, messages: [...turns, { role: 'assistant', content: 'Sure:' }] });
    expect(request.prefill).toBe(true);
    const body = JSON.parse(forwardBody({ request, context: stored, compacted: false, leadingSystemSeqs: new Set(), throughSeq: 3, seqOf: [1, 2, 3] }).toString());
    expect((body.messages as unknown[]).slice(-2)).toEqual([turns[2], { role: 'assistant', content: 'Sure:' }]);
    expect(body).not.toHaveProperty('system');
  });
});

describe('storedForm', () => {
  it('orders object keys as jsonb does (shorter first, then bytewise) and drops undefined', () => {
    expect(JSON.stringify(jsonbOrder({ bb: 1, a: { z: 1, y: undefined, ab: [{ d: 1, c: 2 }] }, B: 2 }))).toBe('{"B":2,"a":{"z":1,"ab":[{"c":2,"d":1}]},"bb":1}');
    const [message] = parse([{ role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'run', input: { zeta: 1, alpha: { y: 2, x: 1 } } }] }]);
    expect(JSON.stringify(storedForm(message).blocks[0])).toContain('"input":{"zeta":1,"alpha":{"x":1,"y":2}}');
  });
});
