import fc from 'fast-check';
import { Block, CanonicalMessage, ToolResultBlock } from './canonical';
import { makeProviderValid } from './provider-valid';
import { makeProviderValidIncremental, ValidPrefix } from './valid-prefix';
import { messagesArrayJson, SerializedPrefix, serializeMessagesIncremental } from './serialized-prefix';
import { toAnthropic } from './anthropic';
import { toOpenAI } from './openai';

const text = (t: string): Block => ({ type: 'text', text: t });
const use = (id: string): Block => ({ type: 'tool_use', id, name: 'run', input: { id } });
const result = (id: string, extra: Partial<ToolResultBlock> = {}): ToolResultBlock => ({ type: 'tool_result', toolUseId: id, content: `out ${id}`, isError: false, ...extra });
const thinking: Block = { type: 'thinking', thinking: 'hmm', signature: 'sig==' };
const msg = (role: CanonicalMessage['role'], ...blocks: Block[]): CanonicalMessage => ({ role, blocks });

/**
 * A growing agent history: mostly fresh call ids (as agents write them), answered as tool messages or
 * user blocks, sometimes late, twice, never, or by an id used before (SWE-agent replays reuse ids);
 * plus the garbage the provider-valid pass exists for (orphans, empty messages, calls in the wrong role).
 */
const step = (n: number): fc.Arbitrary<CanonicalMessage[]> => {
  const fresh = (k: number) => `call_${n}_${k}`;
  const id = fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 0, max: 2 }).map(fresh) }, { weight: 1, arbitrary: fc.constantFrom('a', 'b', `call_${Math.max(0, n - 1)}_0`) });
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .record({ calls: fc.integer({ min: 0, max: 3 }), think: fc.boolean(), openai: fc.boolean(), answer: fc.constantFrom('all', 'all', 'all', 'some', 'none', 'twice'), note: fc.boolean() })
        .map(({ calls, think, openai, answer, note }) => {
          const ids = Array.from({ length: calls }, (_, k) => fresh(k));
          const out = [msg('assistant', ...(think ? [thinking] : []), text(`step ${n}`), ...ids.map(use))];
          const answered = answer === 'none' ? [] : answer === 'some' ? ids.slice(1) : answer === 'twice' ? [...ids, ...ids.slice(0, 1)] : ids;
          if (openai) out.push(...answered.map((x) => msg('tool', result(x))));
          else if (answered.length) out.push(msg('user', ...answered.map((x) => result(x)), ...(note ? [text('and then')] : [])));
          return out;
        }),
    },
    { weight: 3, arbitrary: fc.string({ maxLength: 4 }).map((t) => [msg('user', text(`say ${t}`))]) },
    { weight: 1, arbitrary: id.map((x) => [msg('assistant', use(x))]) },
    { weight: 1, arbitrary: id.map((x) => [msg('tool', result(x))]) },
    { weight: 1, arbitrary: id.map((x) => [msg('user', use(x))]) },
    { weight: 1, arbitrary: fc.constantFrom<CanonicalMessage['role']>('user', 'assistant', 'tool').map((r) => [msg(r)]) },
    { weight: 1, arbitrary: fc.constant<CanonicalMessage[]>([{ ...msg('system', text('mid')), inConversation: true }]) },
  );
};
const growth = fc.integer({ min: 1, max: 14 }).chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => step(i))));

const whole = (messages: CanonicalMessage[]) => {
  const { messages: out, sources, dropped } = makeProviderValid(messages);
  return { messages: out, sources, dropped };
};

describe('makeProviderValidIncremental (the agent loop: a read after each append)', () => {
  it('gives exactly the whole pass at every length, reusing the final part when it can', () => {
    let reused = 0;
    let reads = 0;
    fc.assert(
      fc.property(growth, fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 20 }), (steps, strides) => {
        const history = steps.flat();
        let prefix: ValidPrefix | undefined;
        let length = 0;
        let s = 0;
        while (length < history.length) {
          length = Math.min(history.length, length + strides[s++ % strides.length]);
          // Each read builds a new array (as the context service does), holding the same message objects.
          const view = history.slice(0, length);
          const out = makeProviderValidIncremental(view, prefix);
          expect({ messages: out.messages, sources: out.sources, dropped: out.dropped }).toEqual(whole(view));
          out.messages.forEach((m, k) => expect(m === view[out.sources[k]]).toBe(whole(view).messages[k] === view[out.sources[k]]));
          reads += 1;
          if (out.incremental) reused += 1;
          prefix = out.prefix;
        }
      }),
      { seed: 20261127, numRuns: 600 },
    );
    // Not vacuous: most reads of these histories reuse the final part.
    expect(reused / reads).toBeGreaterThan(0.5);
  });

  it('runs the whole pass when an added message names an id the final part holds, or a call is given a fresh id', () => {
    const start = [msg('user', text('go')), msg('assistant', use('a')), msg('tool', result('a')), msg('assistant', text('next'))];
    const first = makeProviderValidIncremental(start);
    expect(first.prefix?.end).toBe(3);
    const reused = [...start, msg('user', text('again')), msg('assistant', use('a')), msg('tool', result('a'))];
    const second = makeProviderValidIncremental(reused, first.prefix);
    expect(second.incremental).toBe(false);
    expect(second.messages).toEqual(makeProviderValid(reused).messages);
    // The replayed call got a fresh id, which depends on every id: no final part is kept.
    expect(second.prefix).toBeUndefined();
    const grown = [...start, msg('user', text('more')), msg('assistant', use('b')), msg('tool', result('b'))];
    const third = makeProviderValidIncremental(grown, first.prefix);
    expect(third.incremental).toBe(true);
    expect(third.prefix?.end).toBe(5);
    // An id reused within the added messages gets a fresh one that must avoid the final part's ids too (x_2 is taken there).
    const taken = [msg('user', text('go')), msg('assistant', use('x_2')), msg('tool', result('x_2')), msg('assistant', text('ok'))];
    const base = makeProviderValidIncremental(taken);
    const replay = [...taken, msg('user', text('replay')), msg('assistant', use('x')), msg('tool', result('x')), msg('assistant', use('x')), msg('tool', result('x'))];
    const out = makeProviderValidIncremental(replay, base.prefix);
    expect(out.messages).toEqual(makeProviderValid(replay).messages);
    expect(out.messages[7].blocks[0]).toMatchObject({ type: 'tool_use', id: 'x_3' });
  });

  it('runs the whole pass when the sequence does not extend the one the prefix was computed on, through its last assistant message', () => {
    const a = [msg('user', text('go')), msg('assistant', use('a')), msg('tool', result('a')), msg('assistant', text('done'))];
    const first = makeProviderValidIncremental(a);
    const edited = [a[0], msg('assistant', use('a')), a[2], a[3], msg('user', text('more'))];
    const out = makeProviderValidIncremental(edited, first.prefix);
    expect(out.incremental).toBe(false);
    expect({ messages: out.messages, sources: out.sources, dropped: out.dropped }).toEqual(whole(edited));
    // A shorter read (a concurrent request that saw fewer messages) without that assistant message: its last call is pending, not missing.
    const grown = [...a, msg('user', text('more')), msg('assistant', use('b'))];
    const later = makeProviderValidIncremental(grown);
    const shorter = grown.slice(0, 5);
    const short = makeProviderValidIncremental([...a.slice(0, 2)], later.prefix);
    expect(short.incremental).toBe(false);
    expect(makeProviderValidIncremental(shorter, later.prefix).dropped).toEqual(whole(shorter).dropped);
  });
});

describe('serializeMessagesIncremental (the served body after each append)', () => {
  const origins = fc.constantFrom<CanonicalMessage['origin']>('anthropic', 'openai', undefined);
  it('writes exactly what the whole conversion writes, for both providers, at every length', () => {
    let reused = 0;
    let reads = 0;
    fc.assert(
      fc.property(growth, fc.array(origins, { minLength: 1, maxLength: 7 }), fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 20 }), fc.boolean(), (steps, originList, strides, system) => {
        // Messages as the proxy and REST appends store them: each from one provider's shape, system prompts first.
        const history = [...(system ? [msg('system', text('You are an agent.'))] : []), ...steps.flat()].map((m, i) => {
          const origin = originList[i % originList.length];
          return origin ? { ...m, origin } : m;
        });
        for (const format of ['anthropic', 'openai'] as const) {
          let valid: ValidPrefix | undefined;
          let serialized: SerializedPrefix | undefined;
          let length = 0;
          let s = 0;
          while (length < history.length) {
            length = Math.min(history.length, length + strides[s++ % strides.length]);
            const out = makeProviderValidIncremental(history.slice(0, length), valid);
            valid = out.prefix;
            const body = serializeMessagesIncremental(format, out.messages, out.prefix?.messages.length ?? 0, serialized);
            serialized = body.prefix;
            const expected = format === 'anthropic' ? toAnthropic(out.messages) : { messages: toOpenAI(out.messages) };
            expect(messagesArrayJson(body.chunks).toString()).toBe(JSON.stringify(expected.messages));
            expect(body.system).toBe('system' in expected && expected.system !== undefined ? JSON.stringify(expected.system) : undefined);
            reads += 1;
            if (body.incremental) reused += 1;
          }
        }
      }),
      { seed: 20261127, numRuns: 400 },
    );
    expect(reused / reads).toBeGreaterThan(0.3);
  });
});
