/**
 * In-conversation system messages (Anthropic `role: "system"` entries of `messages`, Claude Code's
 * reminders) are conversation, not system prompt: protected while among the latest N (or pinned),
 * summarized with their span when old, dropped with their turn by the fallback, never dropped in
 * the tail, and kept in place by the context assembly.
 */
import { toAnthropic } from '../messages/anthropic';
import { CanonicalMessage, TextBlock } from '../messages/canonical';
import { countableParts } from '../messages/countable';
import { makeProviderValid, providerValidityProblems } from '../messages/provider-valid';
import { fitToBudget } from './fallback';
import { exchangeRange, ProtectionPolicy, protectionOf } from './protection';
import { summarizableMessages } from './summarize';
import { CountMessage, SessionMessage } from './types';
import { applyPrefix, contentId, VersionPrefix } from './version';

const count: CountMessage = (m) => {
  const parts = countableParts(m);
  return 3 + parts.texts.reduce((n, t) => n + Math.ceil(t.length / 4), 0) + parts.opaqueJson.reduce((n, j) => n + Math.ceil(j.length / 4), 0);
};
const text = (t: string): TextBlock => ({ type: 'text', text: t });
const prompt: CanonicalMessage = { role: 'system', origin: 'anthropic', contentForm: 'string', blocks: [text('You are Claude Code.')] };
const reminder = (t: string): CanonicalMessage => ({ role: 'system', origin: 'anthropic', inConversation: true, contentForm: 'string', blocks: [text(`<system-reminder>${t}</system-reminder>`)] });
const user = (t: string): CanonicalMessage => ({ role: 'user', origin: 'anthropic', contentForm: 'string', blocks: [text(t)] });
const say = (t: string): CanonicalMessage => ({ role: 'assistant', origin: 'anthropic', contentForm: 'parts', blocks: [text(t)] });
const call = (id: string): CanonicalMessage => ({ role: 'assistant', origin: 'anthropic', contentForm: 'parts', blocks: [{ type: 'tool_use', id, name: 'Bash', input: { command: 'ls' } }] });
const result = (id: string, out: string): CanonicalMessage => ({ role: 'user', origin: 'anthropic', contentForm: 'parts', blocks: [{ type: 'tool_result', toolUseId: id, content: out, isError: false }] });
const session = (messages: CanonicalMessage[]): SessionMessage[] => messages.map((message, i) => ({ seq: i + 1, message, tokens: count(message) }));
const policy = (over: Partial<ProtectionPolicy> = {}): ProtectionPolicy => ({ latestMessages: 3, latestUserTexts: 1, allUserTexts: false, exemptToolNames: [], ...over });
const big = (label: string) => Array.from({ length: 200 }, (_, i) => `${label} line ${i}: nothing to see`).join('\n');

/** A Claude Code-like history: every user turn is followed by a system reminder. */
const history = session([
  prompt, // 1
  user('Find the TODOs.'), // 2
  reminder(`Old reminder. ${big('stale')}`), // 3
  call('toolu_1'), // 4
  result('toolu_1', big('output')), // 5
  say('Found them.'), // 6
  user('Fix the first one.'), // 7
  reminder('Current reminder: run the tests.'), // 8
  say('Fixed.'), // 9
]);

describe('in-conversation system messages in compaction', () => {
  it('are protected only among the latest N (the system prompt always)', () => {
    const p = protectionOf(history, policy());
    expect(p.whole.has(1)).toBe(true);
    expect(p.whole.has(3)).toBe(false);
    expect(p.whole.has(8)).toBe(true);
    const pinned = protectionOf(session(history.map((m) => (m.seq === 3 ? { ...m.message, pinned: true } : m.message))), policy());
    expect(pinned.whole.has(3)).toBe(true);
  });

  it('an old one is summarized with its span; a tail one never', () => {
    const span = summarizableMessages(history, protectionOf(history, policy())).map((m) => m.seq);
    expect(span).toContain(3);
    expect(span).not.toContain(1);
    expect(span).not.toContain(8);
  });

  it('the fallback drops an old one with its turn and keeps the tail one and the system prompt', () => {
    const valid = history.filter((m) => m.seq !== 0);
    const fitted = fitToBudget(valid, { budget: 120, protection: policy(), countMessage: count });
    const kept = fitted.messages.map((m) => m.seq);
    expect(kept).toEqual(expect.arrayContaining([1, 7, 8, 9]));
    expect(kept).not.toContain(3);
    expect(fitted.dropped).toEqual(expect.arrayContaining([2, 3, 4, 5, 6]));
    expect(fitted.tokens).toBeLessThanOrEqual(120);
    const body = toAnthropic(fitted.messages.map((m) => m.message));
    // The system prompt first; the note of the left-out turns (the command they ran) is a system message too, so it joins it.
    const system = typeof body.system === 'string' ? [text(body.system)] : (body.system as TextBlock[]);
    expect(system[0]).toEqual(text('You are Claude Code.'));
    expect(system.slice(1).map((b) => b.text.split('\n')[0])).toEqual(['[5 earlier messages left out to fit the budget (seq 2–6; the history keeps them)]']);
    expect((body.messages as Array<{ role: string }>).map((m) => m.role)).toEqual(['user', 'system', 'assistant']);
  });

  it('a trailing one after the results keeps the open exchange whole in the fallback', () => {
    const open = session([prompt, user('Go.'), call('toolu_9'), result('toolu_9', big('huge')), reminder('Keep going.')]);
    const fitted = fitToBudget(open, { budget: 90, protection: policy({ latestMessages: 1 }), countMessage: count });
    expect(fitted.messages.map((m) => m.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(providerValidityProblems(fitted.messages.map((m) => m.message))).toEqual([]);
  });

  it('one between a call and its results stays inside the exchange: no cut separates the pair', () => {
    const inside = session([user('Go.'), call('toolu_2'), reminder('Mid-exchange.'), result('toolu_2', 'ok'), say('Done.')]);
    expect(exchangeRange(inside, 1)).toEqual([1, 3]);
    expect(exchangeRange(inside, 3)).toEqual([1, 3]);
    expect(exchangeRange(inside, 2)).toEqual([1, 3]);
    // The latest N starting at the reminder widens to the call.
    const p = protectionOf(inside, policy({ latestMessages: 3 }));
    expect(p.latestFromSeq).toBe(2);
    expect([2, 3, 4, 5].every((s) => p.whole.has(s))).toBe(true);
    expect(makeProviderValid(inside.map((m) => m.message)).dropped).toEqual([]);
  });

  it('the context assembly keeps them in place (system prompts first, checkpoints after them)', () => {
    const prefix: VersionPrefix = {
      coversThroughSeq: 6,
      checkpoints: [{ id: contentId('ckpt', 2, 6), fromSeq: 2, toSeq: 6, level: 0, text: 'The TODOs were found.', tokens: 8, originalTokens: 900 }],
      treatments: Object.fromEntries([2, 3, 4, 5, 6].map((seq) => [seq, { kind: 'summarized' as const, checkpointId: 'x' }])),
    };
    const assembled = applyPrefix(prefix, history, () => 8);
    expect(assembled.map((m) => m.seq)).toEqual([1, 6, 7, 8, 9]);
    expect(assembled[1].message.tags).toEqual(['checkpoint']);
    expect(assembled[3].message).toBe(history[7].message);
  });
});
