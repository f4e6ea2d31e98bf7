import fc from 'fast-check';
import { Block, CanonicalMessage, ToolResultBlock } from './canonical';
import { toAnthropic } from './anthropic';
import { toOpenAI } from './openai';
import { anthropicTurns, CONTINUATION_TURN, makeProviderValid, providerValidityProblems } from './provider-valid';

const text = (t: string): Block => ({ type: 'text', text: t });
const use = (id: string, name = 'run'): Block => ({ type: 'tool_use', id, name, input: { id } });
const result = (id: string, content = `out ${id}`, extra: Partial<ToolResultBlock> = {}): ToolResultBlock => ({ type: 'tool_result', toolUseId: id, content, isError: false, ...extra });
const thinking: Block = { type: 'thinking', thinking: 'hmm', signature: 'sig==' };
const msg = (role: CanonicalMessage['role'], ...blocks: Block[]): CanonicalMessage => ({ role, blocks });

describe('makeProviderValid: examples', () => {
  it('returns a valid history unchanged, as the same objects', () => {
    const history = [
      msg('system', text('sys')),
      msg('user', text('hi')),
      msg('assistant', text('calling'), use('a'), use('b')),
      msg('tool', result('a')),
      msg('tool', result('b')),
      msg('assistant', thinking, use('c')),
      msg('user', result('c'), text('and more')),
      msg('assistant', text('done')),
    ];
    const out = makeProviderValid(history);
    expect(out.dropped).toEqual([]);
    expect(out.messages).toHaveLength(history.length);
    out.messages.forEach((m, k) => expect(m).toBe(history[k]));
    expect(out.sources).toEqual(history.map((_, k) => k));
  });

  it('leaves out a trailing call whose result has not arrived, keeping the text', () => {
    const history = [msg('user', text('go')), msg('assistant', text('running'), use('a'))];
    const out = makeProviderValid(history);
    expect(out.messages[0]).toBe(history[0]);
    expect(out.messages[1]).not.toBe(history[1]);
    expect(out.messages[1].blocks).toEqual([text('running')]);
    expect(out.dropped).toEqual([{ index: 1, reason: 'tool-result-pending', blocks: [1] }]);
    expect(history[1].blocks).toHaveLength(2); // the input is never modified
  });

  it('drops a pending thinking turn whole', () => {
    const history = [msg('user', text('go')), msg('assistant', thinking, text('running'), use('a'))];
    const out = makeProviderValid(history);
    expect(out.messages).toEqual([history[0]]);
    expect(out.dropped).toEqual([{ index: 1, reason: 'tool-result-pending' }]);
  });

  it('removes orphan results and unanswered calls in the middle, naming the reasons', () => {
    const history = [
      msg('user', text('go')),
      msg('tool', result('ghost')),
      msg('assistant', use('a'), use('b')),
      msg('tool', result('a')),
      msg('assistant', text('next')),
      msg('user', result('b'), text('late result')),
      msg('assistant', thinking, use('c')),
      msg('user', text('interrupt')),
      msg('assistant', text('again')),
      msg('tool', result('c')),
      msg('assistant'),
      msg('user'),
    ];
    const out = makeProviderValid(history);
    expect(providerValidityProblems(out.messages)).toEqual([]);
    expect(out.dropped).toEqual([
      { index: 1, reason: 'orphan-tool-result' },
      { index: 2, reason: 'tool-result-missing', blocks: [1] },
      { index: 5, reason: 'orphan-tool-result', blocks: [0] },
      { index: 6, reason: 'tool-result-missing' },
      { index: 9, reason: 'orphan-tool-result' },
      { index: 10, reason: 'empty' },
      { index: 11, reason: 'empty' },
    ]);
    expect(out.sources).toEqual([0, 2, 3, 4, 5, 7, 8]);
  });

  it('moves a user message that arrived before the tool results after them', () => {
    const history = [msg('user', text('go')), msg('assistant', use('a')), msg('user', text('hurry up')), msg('tool', result('a')), msg('assistant', text('ok'))];
    const out = makeProviderValid(history);
    expect(out.messages).toEqual([history[0], history[1], history[3], history[2], history[4]]);
    out.messages.forEach((m, k) => expect(m).toBe(history[out.sources[k]]));
    expect(out.dropped).toEqual([]);
  });

  it('puts results before other blocks of a user message, and clears toolUseIdFrom', () => {
    const history = [msg('assistant', use('a')), msg('user', text('note'), result('a', 'x', { toolUseIdFrom: 'tool_call_ids' }))];
    const out = makeProviderValid(history);
    expect(out.messages[1].blocks).toEqual([result('a', 'x'), text('note')]);
    expect(toOpenAI(out.messages)).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'run', arguments: '{"id":"a"}' } }] },
      { role: 'tool', tool_call_id: 'a', content: 'x' },
      { role: 'user', content: 'note' },
    ]);
  });

  it('renames a reused call id and its result, and drops a second result', () => {
    const history = [msg('assistant', use('a')), msg('tool', result('a')), msg('assistant', use('a')), msg('tool', result('a', 'second')), msg('tool', result('a', 'again'))];
    const out = makeProviderValid(history);
    expect(providerValidityProblems(out.messages)).toEqual([]);
    expect(out.messages[2].blocks[0]).toMatchObject({ type: 'tool_use', id: 'a_2' });
    expect(out.messages[3].blocks[0]).toMatchObject({ type: 'tool_result', toolUseId: 'a_2', content: 'second' });
    expect(out.dropped).toEqual([{ index: 4, reason: 'duplicate-tool-result' }]);
  });
});

// ------------------------------------------------------------------------------------------
// Properties over random histories: parallel calls, errors, thinking, pending trailing calls,
// results as tool messages or user blocks, and garbage (orphans, duplicates, empty messages,
// calls in the wrong role, interleaved user messages).

const ids = ['a', 'b', 'c', 'd', 'e'];
const id = fc.constantFrom(...ids);
const op: fc.Arbitrary<CanonicalMessage> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ calls: fc.array(id, { maxLength: 3 }), said: fc.option(fc.string({ maxLength: 5 })), think: fc.boolean() }).map(({ calls, said, think }) =>
      msg('assistant', ...(think ? [thinking] : []), ...(said !== null ? [text(said)] : []), ...calls.map((c) => use(c))),
    ) },
  { weight: 4, arbitrary: fc.record({ id, isError: fc.boolean(), from: fc.boolean() }).map(({ id: x, isError, from }) =>
      msg('tool', result(x, `r${x}`, { isError, ...(from ? { toolUseIdFrom: 'tool_call_ids' as const } : {}) })),
    ) },
  { weight: 3, arbitrary: fc.record({ results: fc.array(id, { minLength: 1, maxLength: 3 }), note: fc.option(fc.string({ maxLength: 5 })), noteFirst: fc.boolean() }).map(({ results, note, noteFirst }) => {
      const rs = results.map((x) => result(x));
      const extra = note !== null ? [text(note)] : [];
      return msg('user', ...(noteFirst ? [...extra, ...rs] : [...rs, ...extra]));
    }) },
  { weight: 3, arbitrary: fc.string({ maxLength: 5 }).map((t) => msg('user', text(t))) },
  { weight: 1, arbitrary: fc.string({ maxLength: 5 }).map((t) => msg('system', text(t))) },
  { weight: 1, arbitrary: fc.constantFrom<CanonicalMessage['role']>('user', 'assistant', 'tool', 'system').map((r) => msg(r)) },
  { weight: 1, arbitrary: id.map((x) => msg('user', use(x))) },
  { weight: 1, arbitrary: id.map((x) => msg('assistant', result(x))) },
  { weight: 1, arbitrary: id.map((x) => msg('tool', text(x), result(x))) },
);
const history = fc.array(op, { maxLength: 14 });

describe('makeProviderValid: properties', () => {
  const runs = { seed: 20240607, numRuns: 1000 };

  it('always returns a valid sequence', () => {
    fc.assert(
      fc.property(history, (h) => {
        expect(providerValidityProblems(makeProviderValid(h).messages)).toEqual([]);
      }),
      runs,
    );
  });

  it('is idempotent: a second pass changes nothing and returns the same objects', () => {
    fc.assert(
      fc.property(history, (h) => {
        const once = makeProviderValid(h).messages;
        const twice = makeProviderValid(once);
        expect(twice.dropped).toEqual([]);
        expect(twice.messages).toHaveLength(once.length);
        twice.messages.forEach((m, k) => expect(m).toBe(once[k]));
      }),
      runs,
    );
  });

  it('keeps the order of kept messages (a plain message only moves after tool results), reuses unchanged objects and never edits thinking', () => {
    fc.assert(
      fc.property(history, (h) => {
        const { messages, sources, dropped } = makeProviderValid(h);
        const inputs = new Set(h);
        const hasResult = (m: CanonicalMessage) => m.blocks.some((b) => b.type === 'tool_result');
        for (let p = 0; p < messages.length; p++) {
          // Same object, or a new one (never another input message).
          if (inputs.has(messages[p])) expect(messages[p]).toBe(h[sources[p]]);
          if (messages[p].blocks.some((b) => b.type === 'thinking')) expect(messages[p]).toBe(h[sources[p]]);
          for (let q = p + 1; q < messages.length; q++) {
            if (sources[p] > sources[q]) {
              // An inversion: tool results placed before a plain message that arrived before them.
              expect(hasResult(messages[p])).toBe(true);
              expect(hasResult(messages[q])).toBe(false);
            }
          }
        }
        // Whole drops and kept messages partition the input; the input is untouched.
        const whole = new Set(dropped.filter((d) => !d.blocks).map((d) => d.index));
        for (let k = 0; k < h.length; k++) expect(whole.has(k) || sources.includes(k)).toBe(true);
        for (const k of sources) expect(whole.has(k)).toBe(false);
      }),
      runs,
    );
  });

  it('gives contexts both serializers turn into valid provider requests', () => {
    fc.assert(
      fc.property(history, (h) => {
        const valid = makeProviderValid(h).messages;
        expect(anthropicProblems(toAnthropic(valid).messages as AnthropicMsg[])).toEqual([]);
        expect(openaiProblems(toOpenAI(valid) as OpenAIMsg[])).toEqual([]);
      }),
      { ...runs, numRuns: 500 },
    );
  });
});

// ------------------------------------------------------------------------------------------
// Provider rules on the serialized requests.

type AnthropicMsg = { role: string; content: string | Array<Record<string, unknown>> };
type OpenAIMsg = { role: string; content?: unknown; tool_calls?: Array<{ id: string }>; tool_call_id?: string };

/** Alternating roles, user first, each tool_use answered first thing in the next user turn. */
function anthropicProblems(messages: AnthropicMsg[]): string[] {
  const problems: string[] = [];
  if (messages.length > 0 && messages[0].role !== 'user') problems.push('first message is not user');
  const seen = new Set<string>();
  messages.forEach((m, i) => {
    if (i > 0 && messages[i - 1].role === m.role) problems.push(`[${i}] same role as before`);
    const blocks = typeof m.content === 'string' ? [] : m.content;
    if (typeof m.content !== 'string' && m.content.length === 0) problems.push(`[${i}] empty`);
    const uses = blocks.filter((b) => b.type === 'tool_use').map((b) => b.id as string);
    for (const u of uses) {
      if (seen.has(u)) problems.push(`[${i}] duplicate tool_use id ${u}`);
      seen.add(u);
    }
    const next = messages[i + 1];
    const nextBlocks = next && typeof next.content !== 'string' ? next.content : [];
    let lead = 0;
    while (lead < nextBlocks.length && nextBlocks[lead].type === 'tool_result') lead++;
    const answered = nextBlocks.slice(0, lead).map((b) => b.tool_use_id as string);
    if (m.role === 'assistant' && JSON.stringify([...uses].sort()) !== JSON.stringify([...answered].sort())) problems.push(`[${i}] uses ${uses} answered by ${answered}`);
    if (m.role === 'assistant' && uses.length === 0 && answered.length > 0) problems.push(`[${i + 1}] results without uses`);
    if (m.role === 'user') {
      const firstOther = blocks.findIndex((b) => b.type !== 'tool_result');
      if (firstOther >= 0 && blocks.slice(firstOther).some((b) => b.type === 'tool_result')) problems.push(`[${i}] tool_result after other blocks`);
      if (blocks.some((b) => b.type === 'tool_result') && (i === 0 || messages[i - 1].role !== 'assistant')) problems.push(`[${i}] tool_result not after an assistant turn`);
    }
  });
  return problems;
}

/** Each assistant's tool_calls followed by exactly one tool message per call; no stray tool messages. */
function openaiProblems(messages: OpenAIMsg[]): string[] {
  const problems: string[] = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role === 'tool') {
      problems.push(`[${i}] tool message without a preceding call`);
      continue;
    }
    if (m.role !== 'assistant' || !m.tool_calls) continue;
    const want = m.tool_calls.map((c) => c.id).sort();
    const got: string[] = [];
    while (i + 1 < messages.length && messages[i + 1].role === 'tool') got.push(messages[++i].tool_call_id as string);
    if (JSON.stringify(want) !== JSON.stringify(got.sort())) problems.push(`[${i}] calls ${want} answered by ${got}`);
  }
  return problems;
}

describe('anthropicTurns (a compacted context in Anthropic turn order)', () => {
  const text = (role: 'user' | 'assistant' | 'system', t: string): CanonicalMessage => ({ role, blocks: [{ type: 'text', text: t }] });
  it('adds a continuation turn when the first kept message is the assistant', () => {
    const out = anthropicTurns([text('system', 'sys'), text('assistant', 'I will now run the tests.'), text('user', 'ok')]);
    expect(out.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(out[1]).toBe(CONTINUATION_TURN);
  });
  it('merges consecutive user messages into one turn, in order, and leaves tool pairs alone', () => {
    const call: CanonicalMessage = { role: 'assistant', blocks: [{ type: 'tool_use', id: 't1', name: 'bash', input: {} }] };
    const result: CanonicalMessage = { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 't1', content: 'done', isError: false }] };
    const out = anthropicTurns([text('user', 'a'), text('user', 'b'), call, result, text('user', 'c')]);
    expect(out.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(out[0].blocks).toEqual([...text('user', 'a').blocks, ...text('user', 'b').blocks]);
    expect(out[2].blocks.map((b) => b.type)).toEqual(['tool_result', 'text']);
    expect(providerValidityProblems(out)).toEqual([]);
  });
});
