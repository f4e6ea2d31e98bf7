import fc from 'fast-check';
import { CanonicalMessage } from './canonical';
import { parseAnthropicMessages, parseAnthropicSystem, toAnthropic } from './anthropic';

const json = <T>(v: T): T => JSON.parse(JSON.stringify(v));

function roundTrip(messages: unknown[], system?: unknown): { system?: unknown; messages: unknown[] } {
  const parsed = parseAnthropicMessages(messages, 'messages');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const canonical: CanonicalMessage[] = [...parsed.value];
  if (system !== undefined) {
    const s = parseAnthropicSystem(system, 'system');
    if (!s.ok) throw new Error(JSON.stringify(s.errors));
    canonical.unshift(s.value);
  }
  return json(toAnthropic(canonical));
}

// A 2×3 PNG (header only is enough for the size).
const PNG_2x3 = Buffer.from('89504e470d0a1a0a0000000d4948445200000002000000030806000000', 'hex').toString('base64');

const fixture: unknown[] = [
  { role: 'user', content: 'Fix the bug in parser.py' },
  {
    role: 'user',
    content: [
      { type: 'text', text: 'Here is the screenshot', cache_control: { type: 'ephemeral' } },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_2x3 } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/a.jpg' }, cache_control: { type: 'ephemeral', ttl: '1h' } },
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'doc' }, title: 'Spec', citations: { enabled: true } },
    ],
  },
  {
    role: 'assistant',
    content: [
      { type: 'thinking', thinking: 'Let me look.\n', signature: 'EqQBCkYIARgCKkB+/=' },
      { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP' },
      {
        type: 'text',
        text: 'The parser drops the last line.',
        citations: [{ type: 'char_location', cited_text: 'x', document_index: 0, start_char_index: 0, end_char_index: 1 }],
      },
      { type: 'server_tool_use', id: 'srvtoolu_01', name: 'web_search', input: { query: 'parser' } },
      { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_01', content: [{ type: 'web_search_result', url: 'https://x', title: 't', encrypted_content: 'abc' }] },
      { type: 'tool_use', id: 'toolu_01A', name: 'read_file', input: { path: 'parser.py' } },
      { type: 'tool_use', id: 'toolu_01B', name: 'run', input: {}, cache_control: { type: 'ephemeral' } },
    ],
  },
  {
    role: 'user',
    content: [
      { type: 'tool_result', tool_use_id: 'toolu_01A', content: 'def parse(): ...' },
      {
        type: 'tool_result',
        tool_use_id: 'toolu_01B',
        content: [
          { type: 'text', text: 'exit 1' },
          { type: 'image', source: { type: 'base64', media_type: 'image/gif', data: 'R0lGODlhAQABAAAAACw=' } },
          { type: 'search_result', source: 'https://s', title: 'r', content: [{ type: 'text', text: 'hit' }] },
        ],
        is_error: true,
      },
      { type: 'text', text: 'and now?' },
    ],
  },
  { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_02', name: 'noop', input: { deep: { a: [1, 2, null] } } }] },
  {
    role: 'user',
    content: [
      { type: 'tool_result', tool_use_id: 'toolu_02' },
      { type: 'container_upload', file_id: 'file_1' },
    ],
  },
  { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_03', name: 'noop', input: {} }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_03', content: [], is_error: false, cache_control: { type: 'ephemeral' } }] },
  { role: 'assistant', content: '' },
  { role: 'assistant', content: [], stop_reason: 'end_turn', custom_field: { keep: true } },
  { role: 'user', content: [{ type: 'mystery_block_v9', anything: [1, { x: 'y' }] }] },
];

describe('Anthropic → canonical → Anthropic', () => {
  it('gives back the same messages for every kind of block', () => {
    expect(roundTrip(fixture)).toEqual({ messages: fixture });
  });

  it('keeps the system prompt as a string or as the block array received', () => {
    expect(roundTrip(fixture, 'You are careful.').system).toBe('You are careful.');
    const blocks = [
      { type: 'text', text: 'You are careful.' },
      { type: 'text', text: 'Project rules…', cache_control: { type: 'ephemeral' } },
    ];
    expect(roundTrip(fixture, blocks).system).toEqual(blocks);
  });

  it('models known blocks and keeps unknown ones opaque, byte-exact', () => {
    const parsed = parseAnthropicMessages(fixture, 'messages');
    if (!parsed.ok) throw new Error('parse failed');
    const [first, second, third, fourth, , sixth] = parsed.value;
    expect(first).toEqual({ role: 'user', blocks: [{ type: 'text', text: 'Fix the bug in parser.py' }], contentForm: 'string', origin: 'anthropic' });
    expect(second.blocks[0]).toEqual({ type: 'text', text: 'Here is the screenshot', extras: { cache_control: { type: 'ephemeral' } }, origin: 'anthropic' });
    expect(second.blocks[1]).toMatchObject({ type: 'image', source: { kind: 'base64', mediaType: 'image/png' }, width: 2, height: 3 });
    expect(second.blocks[3]).toEqual({ type: 'opaque', provider: 'anthropic', raw: (fixture[1] as { content: unknown[] }).content[3] });
    expect(third.blocks.map((b) => b.type)).toEqual(['thinking', 'redacted_thinking', 'text', 'opaque', 'opaque', 'tool_use', 'tool_use']);
    expect(fourth.blocks[1]).toMatchObject({ type: 'tool_result', toolUseId: 'toolu_01B', isError: true });
    expect(fourth.blocks[0]).toMatchObject({ type: 'tool_result', isError: false, isErrorOmitted: true });
    expect(sixth.blocks[0]).toMatchObject({ type: 'tool_result', content: '', contentOmitted: true, isErrorOmitted: true });
  });

  it('round-trips generated conversations (property)', () => {
    fc.assert(
      fc.property(anthropicMessages, (generated) => {
        const input = json(generated);
        expect(roundTrip(input)).toEqual({ messages: input });
      }),
      { seed: 1701, numRuns: 300 },
    );
  });
});

describe('Anthropic validation', () => {
  const errorsOf = (input: unknown) => {
    const r = parseAnthropicMessages(input, 'messages');
    return r.ok ? [] : r.errors;
  };

  it('names the field of each structural error', () => {
    const errors = errorsOf([
      { role: 'user', content: 'ok' },
      { content: 'no role' },
      { role: 'developer', content: 'x' },
      { role: 'user', content: [] },
      { role: 'user', content: 42 },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'x'.repeat(257), name: 'a', input: {} },
          { type: 'tool_use', id: 'toolu_ok', name: 'n'.repeat(129), input: [] },
          { type: 'text' },
          { text: 'no type' },
          'just a string',
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'bad id!' },
          { type: 'tool_result', tool_use_id: 'toolu_1', is_error: 'yes', content: 7 },
          { type: 'image', source: { type: 'base64', media_type: 'image/png' } },
          { type: 'thinking', thinking: 'x' },
        ],
      },
    ]);
    expect(errors.map((e) => e.field)).toEqual([
      'messages[1].role',
      'messages[2].role',
      'messages[3].content',
      'messages[4].content',
      'messages[5].content[0].id',
      'messages[5].content[1].name',
      'messages[5].content[1].input',
      'messages[5].content[2].text',
      'messages[5].content[3].type',
      'messages[5].content[4]',
      'messages[6].content[0].tool_use_id',
      'messages[6].content[1].content',
      'messages[6].content[1].is_error',
      'messages[6].content[2].source.data',
      'messages[6].content[3].signature',
    ]);
    expect(errors.find((e) => e.field === 'messages[5].content[0].id')?.message).toBe('must be a string of 1–256 characters');
    expect(errors.find((e) => e.field === 'messages[6].content[0].tool_use_id')?.message).toMatch(/letters, digits/);
    expect(errors.find((e) => e.field === 'messages[5].content[1].name')?.message).toBe('must be a string of 1–128 characters');
  });

  it('never validates unknown block types', () => {
    expect(errorsOf([{ role: 'user', content: [{ type: 'future_block', text: 5, id: 'not valid at all !!' }] }])).toEqual([]);
  });

  it('rejects a non-array and a system prompt with non-text blocks', () => {
    expect(errorsOf({ role: 'user' })).toEqual([{ field: 'messages', message: 'must be an array of messages (got object)' }]);
    const s = parseAnthropicSystem([{ type: 'text', text: 'a' }, { type: 'image' }], 'system');
    expect(s.ok ? [] : s.errors.map((e) => e.field)).toEqual(['system[1].type']);
    const n = parseAnthropicSystem(3, 'system');
    expect(n.ok).toBe(false);
  });

  it('accepts an empty assistant content array (models do return it)', () => {
    expect(errorsOf([{ role: 'assistant', content: [] }])).toEqual([]);
  });
});

// ------------------------------------------------------------------------------------------
// Arbitraries: valid Anthropic messages with extras, opaque blocks and every content form.

const toolId = fc.stringMatching(/^toolu_[A-Za-z0-9_-]{1,20}$/);
const extras = fc.dictionary(fc.constantFrom('cache_control', 'citations', 'x_meta'), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 2 });
const withExtras = <T extends object>(arb: fc.Arbitrary<T>) => fc.tuple(arb, extras).map(([b, e]) => ({ ...e, ...b }));

const text = withExtras(fc.record({ type: fc.constant('text'), text: fc.string() }));
const image = withExtras(
  fc.record({
    type: fc.constant('image'),
    source: fc.oneof(
      fc.record({ type: fc.constant('base64'), media_type: fc.constantFrom('image/png', 'image/jpeg'), data: fc.base64String({ maxLength: 40 }) }),
      fc.record({ type: fc.constant('url'), url: fc.webUrl() }),
      fc.record({ type: fc.constant('file'), file_id: fc.string() }),
    ),
  }),
);
const unknownBlock = fc.record({
  type: fc.constantFrom('document', 'search_result', 'server_tool_use', 'web_search_tool_result', 'container_upload', 'mystery_v9'),
  payload: fc.jsonValue({ maxDepth: 3 }),
});
const toolUse = withExtras(
  fc.record({ type: fc.constant('tool_use'), id: toolId, name: fc.string({ minLength: 1, maxLength: 40 }), input: fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 })) }),
);
const toolResult = withExtras(
  fc.record(
    {
      type: fc.constant('tool_result'),
      tool_use_id: toolId,
      content: fc.oneof(fc.string(), fc.array(fc.oneof(text, image, unknownBlock), { maxLength: 3 })),
      is_error: fc.boolean(),
    },
    { requiredKeys: ['type', 'tool_use_id'] },
  ),
);
const thinking = fc.record({ type: fc.constant('thinking'), thinking: fc.string(), signature: fc.base64String({ maxLength: 60 }) });
const redacted = fc.record({ type: fc.constant('redacted_thinking'), data: fc.base64String({ maxLength: 60 }) });
const block = fc.oneof(text, image, unknownBlock, toolUse, toolResult, thinking, redacted);

const anthropicMessages = fc.array(
  withExtras(
    fc.record({
      role: fc.constantFrom('user', 'assistant'),
      content: fc.oneof(fc.string(), fc.array(block, { minLength: 1, maxLength: 5 })),
    }),
  ),
  { maxLength: 6 },
);
