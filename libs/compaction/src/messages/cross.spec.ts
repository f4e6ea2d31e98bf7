import fc from 'fast-check';
import { CanonicalMessage } from './canonical';
import { ANTHROPIC_FIRST_USER_PLACEHOLDER, parseAnthropicMessages, parseAnthropicSystem, toAnthropic } from './anthropic';
import { OPENAI_TOOL_ERROR_PREFIX, parseOpenAIMessages, toOpenAI } from './openai';

const json = <T>(v: T): T => JSON.parse(JSON.stringify(v));

function parseAnthropic(body: { system?: unknown; messages: unknown[] }): CanonicalMessage[] {
  const parsed = parseAnthropicMessages(json(body.messages), 'messages');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  if (body.system === undefined) return parsed.value;
  const system = parseAnthropicSystem(json(body.system), 'system');
  if (!system.ok) throw new Error(JSON.stringify(system.errors));
  return [system.value, ...parsed.value];
}

function parseOpenAI(messages: unknown[]): CanonicalMessage[] {
  const parsed = parseOpenAIMessages(json(messages), 'messages');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

/**
 * "The conversation" of a canonical history, what must survive a crossing:
 * - `system`: the system texts in order;
 * - `events`: in order, (role-kind, text) for non-empty user and assistant texts, images as
 *   (role-kind, url or data URL), each tool call as (id, name, input), each tool result as
 *   (id, result texts, with a failed result's first text prefixed `Error: ` as OpenAI gets it).
 * Within a message its tool results come first, then the images they held, then its other
 * blocks: both providers put results first and OpenAI carries result images in the user
 * message after them. Thinking, provider-only blocks and provider fields are not part of it,
 * nor is the placeholder that opens a conversation Anthropic would not take.
 */
function conversation(messages: CanonicalMessage[]) {
  const system: string[] = [];
  const events: unknown[] = [];
  for (const m of messages) {
    if (m.role === 'system') {
      for (const b of m.blocks) if (b.type === 'text' && b.text !== '') system.push(b.text);
      continue;
    }
    const kind = m.role === 'assistant' ? 'assistant' : 'user';
    const resultImages: unknown[] = [];
    for (const b of m.blocks) {
      if (b.type !== 'tool_result') continue;
      let texts = typeof b.content === 'string' ? [b.content] : b.content.flatMap((c) => (c.type === 'text' ? [c.text] : []));
      if (typeof b.content !== 'string') for (const c of b.content) if (c.type === 'image') resultImages.push([kind, 'image', imageRef(c.source)]);
      if (b.isError) texts = texts.length === 0 ? [OPENAI_TOOL_ERROR_PREFIX] : [`${OPENAI_TOOL_ERROR_PREFIX}${texts[0]}`, ...texts.slice(1)];
      events.push(['result', b.toolUseId, texts.join('\n')]);
    }
    events.push(...resultImages);
    for (const b of m.blocks) {
      if (b.type === 'text' && b.text !== '') events.push([kind, b.text]);
      if (b.type === 'image') events.push([kind, 'image', imageRef(b.source)]);
      if (b.type === 'tool_use') events.push(['call', b.id, b.name, b.input]);
    }
  }
  if (JSON.stringify(events[0]) === JSON.stringify(['user', ANTHROPIC_FIRST_USER_PLACEHOLDER])) events.shift();
  return { system, events };
}

function imageRef(source: { kind: 'base64'; mediaType: string; data: string } | { kind: 'url'; url: string }): string {
  return source.kind === 'base64' ? `data:${source.mediaType};base64,${source.data}` : source.url;
}

// ------------------------------------------------------------------------------------------
// Abstract conversations, rendered in each provider's shape.

interface Exchange {
  user: Array<{ text: string } | { image: string }> | null;
  assistantText: string | null;
  think: boolean;
  calls: Array<{ name: string; input: Record<string, unknown>; result: string | string[]; isError: boolean; resultImage: boolean }>;
  after: string | null;
}

const nonEmpty = fc.string({ minLength: 1, maxLength: 12 });
const url = fc.oneof(fc.webUrl(), fc.base64String({ minLength: 4, maxLength: 16 }).map((d) => `data:image/png;base64,${d}`));
const exchange: fc.Arbitrary<Exchange> = fc.record({
  user: fc.option(fc.array(fc.oneof(nonEmpty.map((text) => ({ text })), url.map((image) => ({ image }))), { minLength: 1, maxLength: 3 })),
  assistantText: fc.option(nonEmpty),
  think: fc.boolean(),
  calls: fc.array(
    fc.record({
      name: fc.stringMatching(/^[a-z_]{1,12}$/),
      input: fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
      result: fc.oneof(fc.string({ maxLength: 12 }), fc.array(nonEmpty, { minLength: 1, maxLength: 3 })),
      isError: fc.boolean(),
      resultImage: fc.boolean(),
    }),
    { maxLength: 3 },
  ),
  after: fc.option(nonEmpty),
});
const conversationArb = fc.record({ system: fc.option(nonEmpty), exchanges: fc.array(exchange, { minLength: 1, maxLength: 4 }) });

type Conv = { system: string | null; exchanges: Exchange[] };

function anthropicImage(ref: string) {
  const m = /^data:([^;,]+);base64,(.*)$/.exec(ref);
  return { type: 'image', source: m ? { type: 'base64', media_type: m[1], data: m[2] } : { type: 'url', url: ref } };
}

function renderAnthropic(conv: Conv): { system?: unknown; messages: unknown[] } {
  const messages: unknown[] = [];
  conv.exchanges.forEach((ex, x) => {
    messages.push({
      role: 'user',
      content: ex.user ? ex.user.map((p) => ('text' in p ? { type: 'text', text: p.text, cache_control: { type: 'ephemeral' } } : anthropicImage(p.image))) : 'continue',
    });
    const content: unknown[] = [];
    if (ex.think) content.push({ type: 'thinking', thinking: 'secret', signature: 'c2ln' });
    if (ex.assistantText) content.push({ type: 'text', text: ex.assistantText });
    ex.calls.forEach((c, k) => content.push({ type: 'tool_use', id: `toolu_${x}_${k}`, name: c.name, input: c.input }));
    content.push({ type: 'server_tool_use', id: `srvtoolu_${x}`, name: 'web_search', input: {} });
    messages.push({ role: 'assistant', content });
    if (ex.calls.length > 0) {
      const results: unknown[] = ex.calls.map((c, k) => {
        const texts = typeof c.result === 'string' ? c.result : c.result.map((t) => ({ type: 'text', text: t }));
        const body = c.resultImage ? [...(typeof texts === 'string' ? [{ type: 'text', text: texts }] : texts), anthropicImage('https://img/x.png')] : texts;
        return { type: 'tool_result', tool_use_id: `toolu_${x}_${k}`, content: body, ...(c.isError ? { is_error: true } : {}) };
      });
      if (ex.after) results.push({ type: 'text', text: ex.after });
      messages.push({ role: 'user', content: results });
    }
  });
  return { ...(conv.system ? { system: [{ type: 'text', text: conv.system, cache_control: { type: 'ephemeral' } }] } : {}), messages };
}

function renderOpenAI(conv: Conv): unknown[] {
  const messages: unknown[] = [];
  if (conv.system) messages.push({ role: 'developer', content: conv.system });
  conv.exchanges.forEach((ex, x) => {
    if (ex.user) {
      messages.push({
        role: 'user',
        name: 'alice',
        content: ex.user.map((p) => ('text' in p ? { type: 'text', text: p.text } : { type: 'image_url', image_url: { url: p.image, detail: 'low' } })),
      });
    }
    messages.push({
      role: 'assistant',
      content: ex.assistantText ?? null,
      ...(ex.calls.length > 0
        ? { tool_calls: ex.calls.map((c, k) => ({ id: `call_${x}_${k}`, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.input) } })) }
        : {}),
      ...(ex.think ? { refusal: null } : {}),
    });
    ex.calls.forEach((c, k) => {
      const content = typeof c.result === 'string' ? c.result : c.result.map((t) => ({ type: 'text', text: t }));
      messages.push({ role: 'tool', tool_call_id: `call_${x}_${k}`, content });
    });
    if (ex.after) messages.push({ role: 'user', content: ex.after });
  });
  return messages;
}

// ------------------------------------------------------------------------------------------

describe('cross-provider conversion keeps the conversation', () => {
  const runs = { seed: 777, numRuns: 300 };

  it('Anthropic → OpenAI (property)', () => {
    fc.assert(
      fc.property(conversationArb, (conv) => {
        const fromAnthropic = parseAnthropic(renderAnthropic(conv));
        const openai = toOpenAI(fromAnthropic);
        expect(conversation(parseOpenAI(openai))).toEqual(conversation(fromAnthropic));
        // Signed thinking, Anthropic-only blocks and cache_control never reach OpenAI.
        const text = JSON.stringify(openai);
        expect(text).not.toMatch(/thinking|server_tool_use|cache_control/);
      }),
      runs,
    );
  });

  it('OpenAI → Anthropic (property)', () => {
    fc.assert(
      fc.property(conversationArb, (conv) => {
        const fromOpenAI = parseOpenAI(renderOpenAI(conv));
        const anthropic = toAnthropic(fromOpenAI);
        const back = parseAnthropic(anthropic);
        expect(conversation(back)).toEqual(conversation(fromOpenAI));
        // Roles alternate, user first; OpenAI-only fields stay behind.
        const roles = (anthropic.messages as Array<{ role: string }>).map((m) => m.role);
        if (roles.length > 0) expect(roles[0]).toBe('user');
        roles.forEach((r, k) => k > 0 && expect(r).not.toBe(roles[k - 1]));
        expect(JSON.stringify(anthropic)).not.toMatch(/"name":"alice"|"detail"|"refusal"|developer/);
      }),
      runs,
    );
  });

  it('there and back again keeps the conversation (property)', () => {
    fc.assert(
      fc.property(conversationArb, (conv) => {
        const a = parseAnthropic(renderAnthropic(conv));
        expect(conversation(parseAnthropic(toAnthropic(parseOpenAI(toOpenAI(a)))))).toEqual(conversation(a));
        const o = parseOpenAI(renderOpenAI(conv));
        expect(conversation(parseOpenAI(toOpenAI(parseAnthropic(toAnthropic(o)))))).toEqual(conversation(o));
      }),
      { ...runs, numRuns: 150 },
    );
  });
});

describe('cross-provider conversion: examples', () => {
  it('merges consecutive OpenAI tool messages into one Anthropic user turn, results first', () => {
    const openai = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'weather and time?' },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
          { id: 'functions.time:1', type: 'function', function: { name: 'time', arguments: 'not json' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      { role: 'tool', tool_call_id: 'functions.time:1', content: [{ type: 'text', text: 'noon' }] },
      { role: 'user', content: 'thanks' },
    ];
    const anthropic = toAnthropic(parseOpenAI(openai));
    const rewritten = anthropic.messages[1] as { content: Array<{ id?: string }> };
    const timeId = rewritten.content[2].id as string;
    expect(timeId).toMatch(/^functions_time_1_[a-z0-9]+$/);
    expect(anthropic).toEqual({
      system: 'Be brief.',
      messages: [
        { role: 'user', content: 'weather and time?' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'call_1', name: 'weather', input: { city: 'Paris' } },
            { type: 'tool_use', id: timeId, name: 'time', input: { arguments: 'not json' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'call_1', content: 'sunny' },
            { type: 'tool_result', tool_use_id: timeId, content: [{ type: 'text', text: 'noon' }] },
            { type: 'text', text: 'thanks' },
          ],
        },
      ],
    });
  });

  it('splits an Anthropic user turn into tool messages and a user message; drops thinking; images become data URLs', () => {
    const anthropic = {
      system: 'Sys',
      messages: [
        { role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }, { type: 'text', text: 'look', cache_control: { type: 'ephemeral' } }] },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'private', signature: 'sig' },
            { type: 'redacted_thinking', data: 'xx' },
            { type: 'tool_use', id: 'toolu_1', name: 'shot', input: { w: 1 } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'taken' }, { type: 'image', source: { type: 'url', url: 'https://x/y.png' } }], is_error: true },
            { type: 'text', text: 'well?' },
          ],
        },
      ],
    };
    expect(toOpenAI(parseAnthropic(anthropic))).toEqual([
      { role: 'system', content: 'Sys' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }, { type: 'text', text: 'look' }] },
      { role: 'assistant', content: null, tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'shot', arguments: '{"w":1}' } }] },
      { role: 'tool', tool_call_id: 'toolu_1', content: 'Error: taken' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }, { type: 'text', text: 'well?' }] },
    ]);
  });

  it('keeps developer as developer for OpenAI and writes it as system for Anthropic; opens with a user turn', () => {
    const openai = [
      { role: 'developer', content: 'Rules.' },
      { role: 'assistant', content: 'Hello! How can I help?' },
      { role: 'user', content: 'hi' },
    ];
    const parsed = parseOpenAI(openai);
    expect(toOpenAI(parsed)).toEqual(openai);
    expect(toAnthropic(parsed)).toEqual({
      system: 'Rules.',
      messages: [
        { role: 'user', content: ANTHROPIC_FIRST_USER_PLACEHOLDER },
        { role: 'assistant', content: 'Hello! How can I help?' },
        { role: 'user', content: 'hi' },
      ],
    });
  });

  it('writes provider fields only back to their origin, also for blocks stored without their message', () => {
    const parsed = parseAnthropic({ messages: [{ role: 'user', content: [{ type: 'text', text: 'a', cache_control: { type: 'ephemeral' } }] }] });
    // The API stores blocks only: the message's origin is gone, the block still knows it.
    const stored: CanonicalMessage[] = parsed.map((m) => ({ role: m.role, blocks: m.blocks }));
    expect(toAnthropic(stored).messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'a', cache_control: { type: 'ephemeral' } }] }]);
    expect(toOpenAI(stored)).toEqual([{ role: 'user', content: 'a' }]);
  });
});
