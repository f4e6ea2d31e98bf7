import { CanonicalMessage } from '../messages/canonical';
import { parseAnthropicMessages } from '../messages/anthropic';
import { parseOpenAIMessages } from '../messages/openai';
import fc from 'fast-check';
import { derivedSessionId, matchBlockByBlock, matchConversation, messageKeys, StoredKeys } from './conversation-match';

const anthropic = (messages: unknown[]): CanonicalMessage[] => {
  const parsed = parseAnthropicMessages(messages, 'messages');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
};
const openai = (messages: unknown[]): CanonicalMessage[] => {
  const parsed = parseOpenAIMessages(messages, 'messages');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
};
const stored = (messages: CanonicalMessage[], firstSeq = 1): StoredKeys[] => messages.map((m, i) => ({ seq: firstSeq + i, keys: messageKeys(m) }));

const turn1 = [
  { role: 'user', content: 'Fix the failing test in parser.ts' },
  {
    role: 'assistant',
    content: [
      { type: 'thinking', thinking: 'Look at the test first.', signature: 'sig' },
      { type: 'text', text: 'Reading it.', citations: null },
      { type: 'tool_use', id: 'toolu_1', name: 'read', input: { path: 'parser.ts', limit: 20 } },
    ],
  },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'export function parse() {}' }] },
];

describe('matchConversation', () => {
  it('a request that carries the stored history plus new messages extends it; the new ones start after it', () => {
    const history = stored(anthropic(turn1));
    const request = anthropic([...turn1, { role: 'assistant', content: 'It is fixed.' }, { role: 'user', content: 'Thanks, now run lint' }]);
    const match = matchConversation(history, request.map(messageKeys));
    expect(match).toEqual({ kind: 'extends', newFrom: 3, matchedThroughSeq: 3, seqOf: [1, 2, 3, undefined, undefined] });
  });

  it('what clients change between identical turns never counts: cache markers, stripped thinking, citations, string vs block, key order, whitespace', () => {
    const history = stored(anthropic(turn1));
    const echoed = [
      { role: 'user', content: [{ type: 'text', text: 'Fix the failing test in parser.ts ', cache_control: { type: 'ephemeral' } }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Reading it.' }, { type: 'tool_use', id: 'toolu_1', name: 'read', input: { limit: 20, path: 'parser.ts' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'export function parse() {}' }], cache_control: { type: 'ephemeral' } }] },
    ];
    expect(matchConversation(history, anthropic(echoed).map(messageKeys))).toMatchObject({ kind: 'extends', newFrom: 3 });
  });

  it('an earlier message edited diverges at that message', () => {
    const history = stored(anthropic([...turn1, { role: 'assistant', content: 'Done.' }, { role: 'user', content: 'next' }]));
    const edited = anthropic([{ role: 'user', content: 'Fix the failing test in lexer.ts' }, ...turn1.slice(1)]);
    expect(matchConversation(history, edited.map(messageKeys))).toEqual({ kind: 'diverged', commonBlocks: 0, divergedAtSeq: 1 });
  });

  it('a rewind to an earlier user turn followed by a different message diverges', () => {
    const history = stored(anthropic([...turn1, { role: 'assistant', content: 'Done.' }, { role: 'user', content: 'now lint' }, { role: 'assistant', content: 'Lint is clean.' }]));
    const rewound = anthropic([...turn1, { role: 'assistant', content: 'Done.' }, { role: 'user', content: 'now run the tests instead' }]);
    expect(matchConversation(history, rewound.map(messageKeys))).toMatchObject({ kind: 'diverged', divergedAtSeq: 5 });
  });

  it('a retried request whose answer is already stored is behind, forwarded through its own last message', () => {
    const history = stored(anthropic([...turn1, { role: 'assistant', content: 'It is fixed.' }]));
    expect(matchConversation(history, anthropic(turn1).map(messageKeys))).toMatchObject({ kind: 'behind', matchedThroughSeq: 3 });
    // Missing more than the answer (a user turn too) is a rewind, not a retry.
    expect(matchConversation(history, anthropic(turn1.slice(0, 1)).map(messageKeys)).kind).toBe('diverged');
  });

  it('a block added to a stored message diverges (the message was changed)', () => {
    const history = stored(anthropic(turn1.slice(0, 1)));
    const changed = anthropic([{ role: 'user', content: [{ type: 'text', text: 'Fix the failing test in parser.ts' }, { type: 'text', text: 'and the docs' }] }]);
    expect(matchConversation(history, changed.map(messageKeys)).kind).toBe('diverged');
  });

  it('OpenAI: system prompts at the start are left out, parallel tool calls and their results compare as blocks', () => {
    const conversation = [
      { role: 'user', content: 'Read a.ts and b.ts' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'read', arguments: '{"path":"a.ts"}' } },
          { id: 'call_b', type: 'function', function: { name: 'read', arguments: '{"path":"b.ts"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: 'A' },
      { role: 'tool', tool_call_id: 'call_b', content: 'B' },
    ];
    const history = stored(openai(conversation), 2);
    // The client echoes the answer back with the SDK's extra fields and spacing in the arguments.
    const echoed = openai([
      conversation[0],
      {
        role: 'assistant',
        content: '',
        refusal: null,
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'read', arguments: '{ "path": "a.ts" }' } },
          { id: 'call_b', type: 'function', function: { name: 'read', arguments: '{"path":"b.ts"}' } },
        ],
      },
      ...conversation.slice(2),
      { role: 'user', content: 'Compare them' },
    ]);
    expect(matchConversation(history, echoed.map(messageKeys), 1)).toMatchObject({ kind: 'extends', newFrom: 4, matchedThroughSeq: 5, seqOf: [2, 3, 4, 5, undefined] });
  });

  it('an empty history takes every message as new', () => {
    expect(matchConversation([], anthropic(turn1).map(messageKeys), 1)).toMatchObject({ kind: 'extends', newFrom: 0, matchedThroughSeq: 1 });
  });
});

describe('derivedSessionId', () => {
  it('depends on the system prompt and the first message only, normalised', () => {
    const system = [{ role: 'system' as const, blocks: [{ type: 'text' as const, text: 'You are a coding agent.' }] }];
    const a = derivedSessionId('anthropic', system, anthropic(turn1));
    const marked = anthropic([{ role: 'user', content: [{ type: 'text', text: 'Fix the failing test in parser.ts', cache_control: { type: 'ephemeral' } }] }]);
    expect(derivedSessionId('anthropic', system, marked)).toBe(a);
    expect(a).toMatch(/^proxy-[0-9a-f]{32}$/);
    expect(derivedSessionId('anthropic', system, anthropic([{ role: 'user', content: 'Another task' }]))).not.toBe(a);
    expect(derivedSessionId('anthropic', [], anthropic(turn1))).not.toBe(a);
  });
});

describe('matchConversation: the shortcut for a request that extends the stored history message by message', () => {
  // Small alphabets so that equal keys, shared prefixes, empty key lists and splits across messages all happen.
  const keyList = fc.array(fc.constantFrom('uA', 'uB', 'aA', 'aB', 'acX', 'rX'), { maxLength: 3 });
  it('gives what the block-by-block walk gives, for any stored history and request', () => {
    fc.assert(
      fc.property(fc.array(keyList, { maxLength: 8 }), fc.array(keyList, { maxLength: 4 }), fc.boolean(), fc.nat(3), (history, added, copy, base) => {
        const storedKeys: StoredKeys[] = history.map((keys, i) => ({ seq: base + 1 + i, keys }));
        // The proxy's own appends share the request's key arrays; other histories were read back as copies.
        const request = [...history.map((keys) => (copy ? [...keys] : keys)), ...added];
        expect(matchConversation(storedKeys, request, base)).toEqual(matchBlockByBlock(storedKeys, request, base));
        const edited = request.map((keys, i) => (i === Math.floor(request.length / 2) ? [...keys, 'uA'] : keys));
        expect(matchConversation(storedKeys, edited, base)).toEqual(matchBlockByBlock(storedKeys, edited, base));
      }),
      { numRuns: 3000 },
    );
  });
});
