import fc from 'fast-check';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { toAnthropic } from './anthropic';
import { detectFormat } from './detect';
import { parseOpenAIMessages, toOpenAI } from './openai';
import { makeProviderValid, providerValidityProblems } from './provider-valid';
import { validateSequence } from './sequence';

const json = <T>(v: T): T => JSON.parse(JSON.stringify(v));

function roundTrip(messages: unknown[]): unknown[] {
  const parsed = parseOpenAIMessages(messages, 'messages');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return json(toOpenAI(parsed.value));
}

const fixture: unknown[] = [
  { role: 'developer', content: 'Follow the style guide.' },
  { role: 'system', content: [{ type: 'text', text: 'You are an agent.' }], name: 'sys' },
  {
    role: 'user',
    name: 'alice',
    content: [
      { type: 'text', text: 'What is in these?' },
      { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
      { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/4AAQ', detail: 'high', future: 1 } },
      { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
      { type: 'file', file: { file_id: 'file-abc', filename: 'a.pdf' } },
    ],
  },
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris" }' } },
      { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{not json' } },
      { type: 'function', id: 'call_3', function: { arguments: '', name: 'noop' } },
    ],
  },
  { role: 'tool', tool_call_id: 'call_1', content: '18°C' },
  { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: '12:00' }, { type: 'text', text: 'UTC' }] },
  { role: 'tool', tool_call_id: 'call_3', content: '' },
  { role: 'assistant', content: [{ type: 'text', text: 'Partly:' }, { type: 'refusal', refusal: 'I cannot share that.' }], refusal: null },
  { role: 'assistant', content: 'Done.', audio: { id: 'audio_1' }, function_call: { name: 'legacy', arguments: '{}' } },
  { role: 'assistant', tool_calls: [], content: '' },
  { role: 'assistant', tool_calls: null },
  { role: 'assistant', content: 'x', tool_calls: [{ id: 'call_c', type: 'custom', custom: { name: 'grammar', input: 'a b' } }] },
  { role: 'tool', tool_call_id: 'call_c', content: 'ok', name: 'grammar' },
  { role: 'user', content: 'thanks' },
];

describe('OpenAI → canonical → OpenAI', () => {
  it('gives back the same messages for every kind of message and part', () => {
    expect(roundTrip(fixture)).toEqual(fixture);
  });

  it('models what it knows', () => {
    const parsed = parseOpenAIMessages(fixture, 'messages');
    if (!parsed.ok) throw new Error('parse failed');
    const v = parsed.value;
    expect(v[0]).toEqual({ role: 'system', blocks: [{ type: 'text', text: 'Follow the style guide.' }], contentForm: 'string', origin: 'openai', extras: { role: 'developer' } });
    expect(v[2].blocks.map((b) => b.type)).toEqual(['text', 'image', 'image', 'opaque', 'opaque', 'opaque']);
    expect(v[2].blocks[1]).toEqual({ type: 'image', source: { kind: 'url', url: 'https://example.com/cat.png' }, extras: { detail: 'low' }, origin: 'openai' });
    expect(v[2].blocks[2]).toMatchObject({ type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' } });
    expect(v[3].blocks).toEqual([
      { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' }, argumentsText: '{"city": "Paris" }' },
      { type: 'tool_use', id: 'call_2', name: 'get_time', input: '{not json', argumentsText: '{not json' },
      { type: 'tool_use', id: 'call_3', name: 'noop', input: '', argumentsText: '' },
    ]);
    expect(v[4]).toEqual({
      role: 'tool',
      blocks: [{ type: 'tool_result', toolUseId: 'call_1', content: '18°C', isError: false }],
      contentForm: 'string',
      origin: 'openai',
    });
    expect(v[11].blocks[1]).toMatchObject({ type: 'opaque', provider: 'openai', slot: 'tool_calls' });
  });

  it('round-trips generated conversations (property)', () => {
    fc.assert(
      fc.property(openaiMessages, (generated) => {
        const input = json(generated);
        expect(roundTrip(input)).toEqual(input);
      }),
      { seed: 4242, numRuns: 300 },
    );
  });
});

describe('OpenAI validation', () => {
  const errorsOf = (input: unknown) => {
    const r = parseOpenAIMessages(input, 'messages');
    return r.ok ? [] : r.errors;
  };

  it('names the field of each structural error', () => {
    const errors = errorsOf([
      { content: 'x' },
      { role: 'robot', content: 'x' },
      { role: 'function', name: 'f', content: 'x' },
      { role: 'user' },
      { role: 'user', content: [] },
      { role: 'assistant', content: 5, tool_calls: {} },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call 1', type: 'function', function: { name: 'a', arguments: '{}' } },
          { id: 'call_2', type: 'function', function: { name: '', arguments: {} } },
          { id: 'call_3', function: { name: 'a', arguments: '{}' } },
          { id: 'call_4', type: 'function' },
        ],
      },
      { role: 'tool', content: 'x' },
      { role: 'tool', tool_call_id: 'x'.repeat(300), content: 'x' },
      { role: 'tool', tool_call_id: 'call_1', content: { text: 'x' } },
      { role: 'user', content: [{ type: 'text', text: 1 }, { type: 'image_url', image_url: 'u' }, { nope: 1 }] },
    ]);
    expect(errors.map((e) => e.field)).toEqual([
      'messages[0].role',
      'messages[1].role',
      'messages[2].role',
      'messages[3].content',
      'messages[4].content',
      'messages[5].content',
      'messages[5].tool_calls',
      'messages[6].tool_calls[0].id',
      'messages[6].tool_calls[1].function.name',
      'messages[6].tool_calls[1].function.arguments',
      'messages[6].tool_calls[2].type',
      'messages[6].tool_calls[3].function',
      'messages[7].tool_call_id',
      'messages[8].tool_call_id',
      'messages[9].content',
      'messages[10].content[0].text',
      'messages[10].content[1].image_url',
      'messages[10].content[2].type',
    ]);
    expect(errors[8].message).toBe('must be a string of 1–128 characters');
    expect(errors[13].message).toBe('must be a string of 1–256 characters');
  });
});

// ------------------------------------------------------------------------------------------
// SWE-agent trajectories (real OpenAI-shaped histories with extra per-message fields).

const TRAJ_DIR = join(__dirname, '../../../../testdata/swe-agent-trajectories');
const trajectories = readdirSync(TRAJ_DIR)
  .filter((f) => f.endsWith('.traj'))
  .map((f) => ({ file: f, history: (JSON.parse(readFileSync(join(TRAJ_DIR, f), 'utf8')) as { history: unknown[] }).history }));

describe('SWE-agent trajectories', () => {
  it('finds the trajectories', () => {
    expect(trajectories.length).toBeGreaterThanOrEqual(5);
  });

  it.each(trajectories.map((t) => [t.file, t.history] as const))('%s: every message round-trips identically, alone and as a history', (_file, history) => {
    expect(detectFormat(history)).toBe('openai');
    for (const message of history) expect(roundTrip([message])).toEqual([message]);
    expect(roundTrip(history)).toEqual(history);
  });

  it.each(trajectories.map((t) => [t.file, t.history] as const))('%s: is a valid sequence and gives a provider-valid context', (_file, history) => {
    const parsed = parseOpenAIMessages(history, 'history');
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const checked = validateSequence({ lastRole: null, openToolUseIds: [], seenToolUseIds: new Set() }, parsed.value, 'history');
    expect(checked.errors).toEqual([]);
    const { messages, dropped } = makeProviderValid(parsed.value);
    expect(providerValidityProblems(messages)).toEqual([]);
    expect(dropped.every((d) => d.reason === 'tool-result-pending')).toBe(true);
    // Results named through tool_call_ids now carry tool_call_id.
    for (const m of toOpenAI(messages) as Array<Record<string, unknown>>) {
      if (m.role === 'tool') expect(typeof m.tool_call_id).toBe('string');
    }
    const anthropic = toAnthropic(messages);
    expect(typeof anthropic.system).toBe('string');
    expect((anthropic.messages[0] as { role: string }).role).toBe('user');
  });
});

// ------------------------------------------------------------------------------------------
// Arbitraries: valid OpenAI messages of every role and content form.

const callId = fc.stringMatching(/^call_[A-Za-z0-9]{1,20}$/);
const extrasOf = (keys: string[]) => fc.dictionary(fc.constantFrom(...keys), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 2 });
const withExtras = <T extends object>(arb: fc.Arbitrary<T>, keys: string[]) => fc.tuple(arb, extrasOf(keys)).map(([b, e]) => ({ ...e, ...b }));

const textPart = withExtras(fc.record({ type: fc.constant('text'), text: fc.string() }), ['cache_control']);
const imagePart = fc.record({
  type: fc.constant('image_url'),
  image_url: fc.record(
    {
      url: fc.oneof(fc.webUrl(), fc.base64String({ maxLength: 40 }).map((d) => `data:image/png;base64,${d}`)),
      detail: fc.constantFrom('auto', 'low', 'high'),
    },
    { requiredKeys: ['url'] },
  ),
});
const otherPart = fc.oneof(
  fc.record({ type: fc.constant('input_audio'), input_audio: fc.record({ data: fc.base64String(), format: fc.constantFrom('wav', 'mp3') }) }),
  fc.record({ type: fc.constant('file'), file: fc.record({ file_id: fc.string() }) }),
  fc.record({ type: fc.constant('mystery_part'), value: fc.jsonValue({ maxDepth: 2 }) }),
);
const refusalPart = fc.record({ type: fc.constant('refusal'), refusal: fc.string() });
const toolCall = withExtras(
  fc.record({
    id: callId,
    type: fc.constant('function'),
    function: fc.record({
      name: fc.string({ minLength: 1, maxLength: 30 }),
      arguments: fc.oneof(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 })).map((o) => JSON.stringify(o)), fc.string()),
    }),
  }),
  ['index'],
);

const system = withExtras(
  fc.record({ role: fc.constantFrom('system', 'developer'), content: fc.oneof(fc.string(), fc.array(textPart, { minLength: 1, maxLength: 3 })) }),
  ['name'],
);
const user = withExtras(
  fc.record({ role: fc.constant('user'), content: fc.oneof(fc.string(), fc.array(fc.oneof(textPart, imagePart, otherPart), { minLength: 1, maxLength: 4 })) }),
  ['name', 'agent', 'message_type'],
);
const assistant = withExtras(
  fc.record(
    {
      role: fc.constant('assistant'),
      content: fc.oneof(fc.string(), fc.constant(null), fc.array(fc.oneof(textPart, refusalPart), { minLength: 1, maxLength: 3 })),
      tool_calls: fc.oneof(fc.array(toolCall, { maxLength: 3 }), fc.constant(null)),
    },
    { requiredKeys: ['role'] },
  ),
  ['name', 'refusal', 'audio', 'function_call', 'thought', 'action'],
);
const tool = withExtras(
  fc.oneof(
    fc.record({ role: fc.constant('tool'), tool_call_id: callId, content: fc.oneof(fc.string(), fc.array(fc.oneof(textPart, otherPart), { maxLength: 3 })) }),
    callId.chain((id) => fc.record({ role: fc.constant('tool'), content: fc.string(), tool_call_ids: fc.constant([id]) })),
  ),
  ['name', 'agent', 'message_type', 'cache_control'],
);
const openaiMessages = fc.array(fc.oneof(system, user, assistant, tool), { maxLength: 8 });
