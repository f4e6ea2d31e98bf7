import fc from 'fast-check';
import { parseAnthropicMessages, parseAnthropicSystem, toAnthropic } from './anthropic';
import { CanonicalMessage } from './canonical';
import { parseCanonicalMessages } from './canonical-parse';
import { countableParts } from './countable';
import { detectFormat } from './detect';
import { parseOpenAIMessages, toOpenAI } from './openai';
import { makeProviderValid } from './provider-valid';
import { referencedForeignToolUseIds, validateSequence } from './sequence';

const parsers = {
  anthropic: parseAnthropicMessages,
  openai: parseOpenAIMessages,
  canonical: parseCanonicalMessages,
};

/** Everything downstream of a successful parse must not throw either. */
function exercise(messages: CanonicalMessage[]) {
  validateSequence({ lastRole: null, openToolUseIds: [], seenToolUseIds: new Set(referencedForeignToolUseIds(messages)) }, messages, 'messages');
  const { messages: valid } = makeProviderValid(messages);
  toAnthropic(messages);
  toOpenAI(messages);
  toAnthropic(valid);
  toOpenAI(valid);
  messages.forEach(countableParts);
}

function parseEverything(input: unknown) {
  detectFormat(input);
  for (const parse of Object.values(parsers)) {
    const r = parse(input, 'messages');
    expect(typeof r.ok).toBe('boolean');
    if (r.ok) exercise(r.value);
    else for (const e of r.errors) expect(e.field.startsWith('messages')).toBe(true);
  }
  const s = parseAnthropicSystem(input, 'system');
  if (s.ok) exercise([s.value]);
}

// Malformed messages that look almost right, so the parsers go deep.
const anyValue = fc.anything({ maxDepth: 2 });
const type = fc.constantFrom('text', 'image', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking', 'opaque', 'image_url', 'refusal', 'document');
const part = fc.record(
  {
    type: fc.oneof(type, anyValue),
    text: fc.oneof(fc.string(), anyValue),
    id: fc.oneof(fc.constantFrom('toolu_1', 'call_1', 'x'.repeat(300), 'bad id'), anyValue),
    tool_use_id: fc.oneof(fc.constantFrom('toolu_1', 'call_1'), anyValue),
    toolUseId: fc.oneof(fc.constantFrom('toolu_1', 'call_1'), anyValue),
    name: fc.oneof(fc.string(), anyValue),
    input: anyValue,
    content: fc.oneof(fc.string(), fc.array(anyValue), anyValue),
    is_error: anyValue,
    source: fc.oneof(fc.record({ type: fc.constantFrom('base64', 'url'), kind: fc.constantFrom('base64', 'url'), data: anyValue, media_type: anyValue, url: anyValue }, { requiredKeys: [] }), anyValue),
    image_url: fc.oneof(fc.record({ url: anyValue, detail: anyValue }, { requiredKeys: [] }), anyValue),
    provider: fc.oneof(fc.constantFrom('anthropic', 'openai'), anyValue),
    raw: anyValue,
  },
  { requiredKeys: [] },
);
const message = fc.record(
  {
    role: fc.oneof(fc.constantFrom('user', 'assistant', 'system', 'tool', 'developer', 'function'), anyValue),
    content: fc.oneof(fc.string(), fc.constant(null), fc.array(fc.oneof(part, anyValue), { maxLength: 4 }), anyValue),
    blocks: fc.oneof(fc.array(fc.oneof(part, anyValue), { maxLength: 4 }), anyValue),
    tool_calls: fc.oneof(
      fc.array(fc.record({ id: fc.oneof(fc.constant('call_1'), anyValue), type: fc.oneof(fc.constant('function'), anyValue), function: fc.oneof(fc.record({ name: fc.oneof(fc.string(), anyValue), arguments: fc.oneof(fc.string(), anyValue) }, { requiredKeys: [] }), anyValue) }, { requiredKeys: [] }), { maxLength: 3 }),
      anyValue,
    ),
    tool_call_id: fc.oneof(fc.constant('call_1'), anyValue),
    tool_call_ids: fc.oneof(fc.constant(['call_1']), anyValue),
    pinned: anyValue,
    tags: anyValue,
    extras: anyValue,
  },
  { requiredKeys: [] },
);

describe('the parsers never throw', () => {
  it('on anything', () => {
    fc.assert(fc.property(fc.anything(), parseEverything), { seed: 99, numRuns: 600 });
  });

  it('on arrays of almost-valid messages', () => {
    fc.assert(fc.property(fc.array(fc.oneof(message, anyValue), { maxLength: 6 }), parseEverything), { seed: 100, numRuns: 1200 });
  });

  it('on JSON that went through HTTP (own __proto__ keys, deep nesting)', () => {
    parseEverything(JSON.parse('[{"role":"user","content":[{"type":"text","text":"x","__proto__":{"polluted":true}}],"__proto__":{"a":1}}]'));
    parseEverything(JSON.parse(`${'['.repeat(2000)}${']'.repeat(2000)}`));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const r = parseAnthropicMessages(JSON.parse('[{"role":"user","content":[{"type":"text","text":"x","__proto__":{"k":1}}]}]'), 'messages');
    expect(r.ok && JSON.stringify(toAnthropic(r.value).messages)).toBe('[{"role":"user","content":[{"type":"text","text":"x","__proto__":{"k":1}}]}]');
  });

  it('stops collecting problems at a bound on huge malformed input', () => {
    const r = parseOpenAIMessages(Array.from({ length: 10_000 }, () => ({ role: 'nobody' })), 'messages');
    expect(r.ok).toBe(false);
    expect(r.ok ? 0 : r.errors.length).toBeLessThanOrEqual(200);
  });
});

describe('canonical form', () => {
  it('reads back what the parsers produce (canonical → canonical)', () => {
    const parsed = parseAnthropicMessages(
      [
        { role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral' } }, { type: 'document', source: {} }] },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 't', signature: 's' }, { type: 'tool_use', id: 'toolu_1', name: 'n', input: { a: 1 } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1' }] },
      ],
      'messages',
    );
    if (!parsed.ok) throw new Error('parse failed');
    const again = parseCanonicalMessages(JSON.parse(JSON.stringify(parsed.value)), 'messages');
    expect(again).toEqual({ ok: true, value: parsed.value });
  });

  it('names the fields of canonical errors', () => {
    const r = parseCanonicalMessages(
      [
        { role: 'user', blocks: [] },
        { role: 'x', blocks: [{ type: 'tool_use', id: 'a', name: 'n' }, { type: 'mystery' }, { type: 'opaque', provider: 'google' }] },
        { role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 'a', content: 5, isError: 'no' }], pinned: 'yes' },
      ],
      'messages',
    );
    expect(r.ok ? [] : r.errors.map((e) => e.field)).toEqual([
      'messages[0].blocks',
      'messages[1].role',
      'messages[1].blocks[0].input',
      'messages[1].blocks[1].type',
      'messages[1].blocks[2].provider',
      'messages[1].blocks[2].raw',
      'messages[2].blocks[0].content',
      'messages[2].blocks[0].isError',
      'messages[2].pinned',
    ]);
  });
});
