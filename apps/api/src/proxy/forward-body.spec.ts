import { CanonicalMessage, checkpointMessage, CONTINUATION_TURN, goalBlockMessage, parseAnthropicMessages, SessionMessage } from '@compactor/compaction';
import fc from 'fast-check';
import { forwardBody } from './forward-body';
import { ProxyRequest } from './proxy-request';
import { storedForm } from './stored-form';

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

  it("a Responses request read from its bytes: its own fields and leading developer items go as the client's bytes, the context's items after them", () => {
    const developer = { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Be careful.' }] };
    const items = [developer, { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'List the files.' }] }];
    // Spacing and key order the client chose, which writing the body again would not keep.
    const raw = Buffer.from(`{ "tools": [ {"type":"custom","name":"apply_patch"} ],\n  "input": [ ${items.map((i) => JSON.stringify(i)).join(' , ')} ], "model" : "gpt-5.5" }`);
    const request = ProxyRequest.parse('responses', raw);
    expect(request.leading).toBe(1);
    const stored = session([request.turn(0)], 2);
    const goal = { seq: 0, message: goalBlockMessage('Ship it.'), tokens: 5 };
    const out = forwardBody({ request, context: [goal, ...stored], compacted: false, leadingSystemSeqs: new Set(), seqOf: [2] }).toString();
    expect(out.startsWith('{ "tools": [ {"type":"custom","name":"apply_patch"} ],\n  "input": [')).toBe(true);
    expect(out.endsWith('], "model" : "gpt-5.5" }')).toBe(true);
    expect(JSON.parse(out).input).toEqual([developer, { type: 'message', role: 'developer', content: [{ type: 'input_text', text: '[GOAL BLOCK]\nShip it.' }] }, items[1]]);
  });
});

describe('storedForm', () => {
  it('keeps object keys in the order they were sent (json columns keep the text) and drops undefined', () => {
    const [message] = parse([{ role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Grep', input: { pattern: 'TODO', path: 'src', output_mode: 'count', '-n': true, x: undefined } }] }]);
    expect(JSON.stringify(storedForm(message).blocks[0])).toContain('"input":{"pattern":"TODO","path":"src","output_mode":"count","-n":true}');
  });
});

describe('forwardBody with Claude Code 2.1 requests', () => {
  // Claude Code 2.1's default model sends role: "system" messages inside `messages` and `context_management`.
  const conversation = [
    { role: 'user', content: [{ type: 'text', text: 'Count the TODOs.' }] },
    { role: 'system', content: [{ type: 'text', text: '<system-reminder>cwd: /repo</system-reminder>', cache_control: { type: 'ephemeral' } }] },
    {
      role: 'assistant',
      content: [
        { type: 'compaction', content: 'Summary of the earlier conversation.', encrypted: 'Zm9v' },
        { type: 'tool_use', id: 'toolu_1', name: 'Grep', input: { pattern: 'TODO', path: 'src', output_mode: 'count', '-n': true } },
      ],
    },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'src/a.ts:3' }] },
    { role: 'system', content: [], output_config: { effort: 'low' } },
  ];
  const body = {
    model: 'claude-opus-4-8',
    max_tokens: 64000,
    system: [{ type: 'text', text: 'You are Claude Code.' }],
    messages: conversation,
    context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] },
    stream: true,
  };

  it('forwards the in-conversation system messages in place, compaction blocks and context_management untouched', () => {
    const request = new ProxyRequest('anthropic', JSON.parse(JSON.stringify(body)));
    const stored = session(parse(conversation).map(storedForm), 2);
    const out = forwardBody({ request, context: stored, compacted: false, leadingSystemSeqs: new Set([1]), seqOf: [2, 3, 4, 5, 6] }).toString();
    // Byte for byte what the client sent: nothing reordered, nothing moved to `system`.
    expect(out).toBe(JSON.stringify(body));
  });

  it('after a compaction, the continuation turn opens the context before one whose user turn was summarized: all stay in place', () => {
    const request = new ProxyRequest('anthropic', JSON.parse(JSON.stringify(body)));
    const stored = session(parse(conversation), 2).slice(1); // the user turn went into a checkpoint
    const checkpoint = { seq: 2, message: checkpointMessage({ id: 'ckpt_1', fromSeq: 2, toSeq: 2, level: 0, text: 'The user asked for TODOs.', tokens: 5, originalTokens: 50 }), tokens: 5 };
    const out = JSON.parse(forwardBody({ request, context: [checkpoint, ...stored], compacted: true, leadingSystemSeqs: new Set([1]), seqOf: [2, 3, 4, 5, 6] }).toString());
    expect(out.context_management).toEqual(body.context_management);
    expect((out.messages as Array<{ role: string }>).map((m) => m.role)).toEqual(['user', 'system', 'assistant', 'user', 'system']);
    expect(out.messages[0].content).toBe(CONTINUATION_TURN.blocks[0].type === 'text' ? CONTINUATION_TURN.blocks[0].text : '');
    expect(out.messages[1]).toEqual(conversation[1]);
    expect(out.messages[2]).toEqual(conversation[2]);
    expect(out.messages[4]).toEqual(conversation[4]);
    expect(out.system[0]).toEqual({ type: 'text', text: 'You are Claude Code.' });
  });
});

describe('forwardBody: a conversation forwarded turn after turn', () => {
  // The client's messages of a growing Anthropic conversation; a marker on some, as Claude Code puts them on the last ones.
  const clientMessage = (k: number, marked: boolean, edit: number): Record<string, unknown> => {
    const text = `message ${k}${edit > 0 ? ` edited ${edit}` : ''} ${'x'.repeat(k % 7)}`;
    const block = { type: 'text', text, ...(marked ? { cache_control: { type: 'ephemeral' } } : {}) };
    if (k % 4 === 1) return { role: 'assistant', content: [{ type: 'text', text }, { type: 'tool_use', id: `toolu_${k}_${edit}`, name: 'read', input: { k } }] };
    if (k % 4 === 2) return { role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${k - 1}_${edit}`, content: text }, block] };
    if (k % 4 === 3) return { role: 'assistant', content: text };
    return { role: 'user', content: [block] };
  };
  const bodyOf = (messages: unknown[]) => Buffer.from(JSON.stringify({ model: 'claude-opus-4-5', max_tokens: 100, system: 'Be brief.', messages }));

  it('copies the unchanged messages of the previous body and gives byte for byte what a body written from scratch gives', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ add: fc.integer({ min: 1, max: 4 }), edit: fc.nat(12), cut: fc.nat(3), marked: fc.boolean() }), { minLength: 1, maxLength: 12 }),
        (turns) => {
          // The stored context: message objects shared from one turn to the next, as the context source shares them.
          let context: SessionMessage[] = [];
          const edits: number[] = [];
          let n = 0;
          for (const turn of turns) {
            for (let j = 0; j < turn.add; j++) {
              edits.push(0);
              context.push({ seq: n + 1, message: storedForm(parse([clientMessage(n, false, 0)])[0]), tokens: 10 });
              n += 1;
            }
            // An earlier message edited (a new object at its place), or the oldest ones left out (a compaction, a fallback).
            if (turn.edit < n && turn.edit % 3 === 0) {
              edits[turn.edit] += 1;
              context[turn.edit] = { ...context[turn.edit], message: storedForm(parse([clientMessage(turn.edit, false, edits[turn.edit])])[0]) };
            }
            const from = Math.min(turn.cut, context.length - 1);
            const kept = context.slice(from);
            const client = kept.map((m) => clientMessage(m.seq - 1, turn.marked && m.seq === n, edits[m.seq - 1]));
            const request = ProxyRequest.parse('anthropic', bodyOf(client));
            const input = { request, compacted: false, leadingSystemSeqs: new Set<number>(), seqOf: kept.map((m) => m.seq) };
            const incremental = forwardBody({ ...input, context: kept });
            // The same state written from scratch: fresh message objects, nothing of earlier bodies to copy.
            const fresh = kept.map((m) => ({ ...m, message: structuredClone(m.message) }));
            expect(incremental.toString()).toBe(forwardBody({ ...input, context: fresh }).toString());
            if (turn.cut > 0) context = kept;
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
