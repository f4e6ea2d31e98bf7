import fc from 'fast-check';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BudgetTooSmall, DomainError, ErrorCode } from '../errors';
import { toAnthropic } from '../messages/anthropic';
import { Block, CanonicalMessage, TextBlock, ToolResultBlock } from '../messages/canonical';
import { countableParts } from '../messages/countable';
import { parseOpenAIMessages, toOpenAI } from '../messages/openai';
import { makeProviderValid, providerValidityProblems } from '../messages/provider-valid';
import { validateSequence } from '../messages/sequence';
import { FallbackOptions, FallbackResult, FallbackStep, fitToBudget } from './fallback';
import { maskObservations } from './masking';
import { ProtectionPolicy, protectionOf } from './protection';
import { CountMessage, SessionMessage } from './types';
import { checkpointMessage, contentId, FACTS_HEADER } from './version';
import { CONSTRAINTS_LABEL } from '../ledger/render';

/** A cheap deterministic counter (the engine takes counting injected): 4 characters a token, 3 per message, 85 per image. */
const count: CountMessage = (m) => {
  const parts = countableParts(m);
  return 3 + parts.texts.reduce((n, t) => n + Math.ceil(t.length / 4), 0) + 85 * parts.images.length + parts.opaqueJson.reduce((n, j) => n + Math.ceil(j.length / 4), 0);
};
const text = (t: string): TextBlock => ({ type: 'text', text: t });
const lines = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label}:${i}: const value_${i} = compute(${i});`).join('\n');
const words = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label}${i}`).join(' ');

const system = (t: string): CanonicalMessage => ({ role: 'system', blocks: [text(t)] });
const user = (t: string, extra: Partial<CanonicalMessage> = {}): CanonicalMessage => ({ role: 'user', blocks: [text(t)], ...extra });
const say = (t: string, extra: Partial<CanonicalMessage> = {}): CanonicalMessage => ({ role: 'assistant', blocks: [text(t)], ...extra });
const call = (id: string, name = 'bash'): CanonicalMessage => ({ role: 'assistant', blocks: [text(`Running ${name}.`), { type: 'tool_use', id, name, input: { id } }] });
const result = (id: string, content: ToolResultBlock['content'], isError = false): CanonicalMessage => ({ role: 'user', blocks: [{ type: 'tool_result', toolUseId: id, content, isError }] });
const checkpoint = (fromSeq: number, toSeq: number, body: string): CanonicalMessage =>
  checkpointMessage({ id: contentId('ckpt', fromSeq, toSeq, body), fromSeq, toSeq, level: 0, text: body, tokens: 0, originalTokens: 0 });

const session = (messages: CanonicalMessage[]): SessionMessage[] => messages.map((message, i) => ({ seq: i + 1, message, tokens: count(message) }));
const tokensOf = (xs: SessionMessage[]) => xs.reduce((n, m) => n + m.tokens, 0);
const seqsOf = (xs: SessionMessage[]) => xs.map((m) => m.seq);
const policy = (over: Partial<ProtectionPolicy> = {}): ProtectionPolicy => ({ latestMessages: 2, latestUserTexts: 1, allUserTexts: false, exemptToolNames: [], ...over });
const isNote = (m: SessionMessage) => m.message.tags?.includes('note') ?? false;
const options = (budget: number, over: Partial<ProtectionPolicy> = {}): FallbackOptions => ({ budget, protection: policy(over), countMessage: count });
const contentOf = (m: SessionMessage | undefined, k = 0) => (m?.message.blocks[k] as ToolResultBlock | undefined)?.content;
const bySeq = (out: FallbackResult, seq: number) => out.messages.find((m) => m.seq === seq);
const noteOf = (out: FallbackResult) => (out.messages.find(isNote)?.message.blocks[0] as TextBlock | undefined)?.text ?? '';
/** A system prompt (1), two old turns opened by `first` (2) and `second` (4), and a short tail the budget keeps (6–8). */
const twoOldTurns = (first: string, second: string) =>
  session([system('You are a coding agent.'), user(first), say(words('plan', 150)), user(second), say(words('done', 150)), user('What is left?'), say('Only the tests.'), user('Write them.')]);
function thrownBy(run: () => unknown): unknown {
  try {
    run();
  } catch (e) {
    return e;
  }
  return undefined;
}

/** What the API does before fitting: the context made provider-valid (a trailing call still waiting is left out), changed messages recounted. */
function providerValid(context: SessionMessage[]): SessionMessage[] {
  const { messages, sources } = makeProviderValid(context.map((m) => m.message));
  return messages.map((message, k) => {
    const from = context[sources[k]];
    return message === from.message ? from : { seq: from.seq, message, tokens: count(message) };
  });
}

// ---------------------------------------------------------------------------------------------
// Provider validity in both shapes (Guarantee 2), checked on what is actually sent.

type Json = Record<string, unknown>;

function anthropicProblems(messages: CanonicalMessage[]): string[] {
  const body = toAnthropic(messages).messages as Json[];
  const problems: string[] = [];
  if (body.length > 0 && body[0].role !== 'user') problems.push('the first message is not a user turn');
  const blocksOf = (t: Json): Json[] => (typeof t.content === 'string' ? [] : (t.content as Json[]));
  body.forEach((turn, i) => {
    if (i > 0 && body[i - 1].role === turn.role) problems.push(`[${i}] two ${String(turn.role)} turns in a row`);
    const calls = blocksOf(turn).filter((b) => b.type === 'tool_use').map((b) => b.id as string);
    const results = blocksOf(turn).filter((b) => b.type === 'tool_result');
    if (turn.role === 'assistant' && results.length > 0) problems.push(`[${i}] results in an assistant turn`);
    if (turn.role === 'user' && results.length > 0) {
      const prev = i > 0 ? blocksOf(body[i - 1]).filter((b) => b.type === 'tool_use').map((b) => b.id as string) : [];
      const leading: string[] = [];
      for (const b of blocksOf(turn)) {
        if (b.type !== 'tool_result') break;
        leading.push(b.tool_use_id as string);
      }
      if (leading.length !== results.length) problems.push(`[${i}] results after other blocks`);
      if (JSON.stringify([...leading].sort()) !== JSON.stringify([...prev].sort())) problems.push(`[${i}] results ${JSON.stringify(leading)} do not answer ${JSON.stringify(prev)}`);
    }
    if (calls.length > 0) {
      const next = body[i + 1];
      const answered = next ? blocksOf(next).filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id as string) : [];
      if (JSON.stringify([...answered].sort()) !== JSON.stringify([...calls].sort())) problems.push(`[${i}] calls ${JSON.stringify(calls)} not answered right after`);
    }
  });
  return problems;
}

function openaiProblems(messages: CanonicalMessage[]): string[] {
  const body = toOpenAI(messages) as Json[];
  const problems: string[] = [];
  let waiting: string[] = [];
  body.forEach((m, i) => {
    if (m.role === 'tool') {
      const id = m.tool_call_id as string;
      if (!waiting.includes(id)) problems.push(`[${i}] tool message for ${id} does not follow its call`);
      waiting = waiting.filter((w) => w !== id);
      return;
    }
    if (waiting.length > 0) problems.push(`[${i}] calls ${JSON.stringify(waiting)} not answered before a ${String(m.role)} message`);
    waiting = m.role === 'assistant' && Array.isArray(m.tool_calls) ? (m.tool_calls as Json[]).map((c) => c.id as string) : [];
  });
  if (waiting.length > 0) problems.push(`calls ${JSON.stringify(waiting)} never answered`);
  return problems;
}

function expectProviderValid(context: SessionMessage[]) {
  const messages = context.map((m) => m.message);
  expect(providerValidityProblems(messages)).toEqual([]);
  expect(validateSequence({ lastRole: null, openToolUseIds: [], seenToolUseIds: new Set() }, messages, 'context').errors).toEqual([]);
  expect(anthropicProblems(messages)).toEqual([]);
  expect(openaiProblems(messages)).toEqual([]);
}

// ---------------------------------------------------------------------------------------------
// What can never go, computed here from its definition, independently of the implementation.

const hasResults = (m: CanonicalMessage) => m.blocks.some((b) => b.type === 'tool_result');
function neverGoes(context: SessionMessage[]): { systems: SessionMessage[]; lastUser?: SessionMessage; open: SessionMessage[] } {
  const systems = context.filter((m) => m.message.role === 'system' && !m.message.tags?.includes('checkpoint'));
  const conversation = context.filter((m) => m.message.role !== 'system');
  const lastUser = [...conversation].reverse().find((m) => m.message.role === 'user' && !hasResults(m.message));
  let f = conversation.length - 1;
  while (f >= 0 && (conversation[f].message.role === 'tool' || (conversation[f].message.role === 'user' && hasResults(conversation[f].message)))) f -= 1;
  const open = f >= 0 && conversation[f].message.role === 'assistant' && conversation[f].message.blocks.some((b) => b.type === 'tool_use') ? conversation.slice(f) : [];
  return { systems, lastUser, open };
}

/** Turns before the last user message, and single steps (an assistant message and its results) after it. */
function unitsOf(context: SessionMessage[], lastUser: SessionMessage | undefined): SessionMessage[][] {
  const units: SessionMessage[][] = [];
  let afterLast = lastUser === undefined;
  for (const m of context) {
    if (m.message.role === 'system') continue;
    if (m === lastUser) {
      afterLast = true;
      units.push([m]);
      units.push([]);
      continue;
    }
    const opens = afterLast ? m.message.role === 'assistant' : m.message.role === 'user' && !hasResults(m.message);
    if (opens || units.length === 0) units.push([]);
    units[units.length - 1].push(m);
  }
  return units.filter((u) => u.length > 0);
}

// ---------------------------------------------------------------------------------------------

describe('fitToBudget: Guarantee 4 fallback (mask, offload, drop oldest unprotected turns) and Guarantee 3 give-way order', () => {
  it('G4: a context within budget is returned unchanged, not applied', () => {
    const context = session([system('You are a coding agent.'), user('Fix the test.'), call('a'), result('a', lines('out', 30)), say('Done.')]);
    const out = fitToBudget(context, options(tokensOf(context)));
    expect(out.applied).toBe(false);
    expect(out.steps).toEqual([]);
    expect(out.tokens).toBe(tokensOf(context));
    expect(out.messages).toHaveLength(context.length);
    out.messages.forEach((m, i) => expect(m).toBe(context[i]));
  });

  describe('the order of Guarantee 4: mask, offload, then drop the oldest unprotected turns whole', () => {
    const context = session([
      system('You are a coding agent.'),
      user('Read the config.'), // 2
      call('a', 'read_file'), // 3
      result('a', lines('config.ts', 80)), // 4
      say('The config sets the port.'), // 5
      user('Now run the tests.'), // 6
      call('b', 'bash'), // 7
      result('b', lines('jest', 80), true), // 8
      say('Two tests fail.'), // 9
      user('Fix them.'), // 10
      say('Fixed.'), // 11
    ]);
    const total = tokensOf(context);

    it('masks tool outputs first and stops there when that is enough: nothing is dropped', () => {
      const out = fitToBudget(context, options(total - 100));
      expect(out.steps).toEqual(['mask']);
      expect(out.dropped).toEqual([]);
      // Oldest first, and only as many as needed.
      expect(out.maskedSeqs).toEqual([4]);
      // The placeholder names the output and lists the ledger keys it held (the file it names).
      expect(contentOf(bySeq(out, 4))).toMatch(/^\[masked tool output: read_file, 80 lines, ~\d+ tokens; the full output is in the session history at seq 4\]\nKeys in it: config\.ts$/);
      expect(bySeq(out, 8)).toBe(context[7]);
      expect(out.tokens).toBeLessThanOrEqual(total - 100);
      expect(out.line).toMatch(/^Fallback: masked 1 tool output \(saved ~[\d,]+ tokens\) to fit the [\d,]+-token budget$/);
    });

    it('drops the oldest unprotected turn whole only after masking everything it may', () => {
      const afterMasking = maskObservations(context, protectionOf(context, policy()), { keepLatestTurns: 0, minTokens: 50 }, count).tokensAfter;
      const out = fitToBudget(context, options(afterMasking - 1)); // one token less than masking alone gives
      expect(out.steps).toEqual(['mask', 'drop-turns']);
      expect(out.maskedSeqs).toEqual([4, 8]);
      expect(out.dropped).toEqual([2, 3, 4, 5]); // the first turn, whole, tool pair included
      // The dropped turn leaves a note with its keys where it was (seq 2).
      expect(seqsOf(out.messages)).toEqual([1, 2, 6, 7, 8, 9, 10, 11]);
      expect(out.messages[1].message).toMatchObject({ role: 'system', tags: ['note'] });
      // The first request's turn is out: the note states it, then the keys.
      expect((out.messages[1].message.blocks[0] as { text: string }).text).toMatch(/^\[4 earlier messages left out to fit the budget \(seq 2–5; the history keeps them\)\]\nTASK \(the session's first request\):\n[^\n]+\nKeys in them: /);
      expect(out.line).toMatch(/^Fallback: masked 2 tool outputs, dropped 1 oldest turn \(saved ~[\d,]+ tokens\) to fit the [\d,]+-token budget$/);
      expectProviderValid(out.messages);
    });
  });

  it('offloads what masking leaves (small outputs, images) by a reference to the history, before dropping anything', () => {
    const image: ToolResultBlock['content'] = [text('screenshot'), { type: 'image', source: { kind: 'url', url: 'https://example.test/shot.png' }, width: 800, height: 600 }];
    const context = session([
      system('You are a browsing agent.'),
      user('Look at the page.'),
      call('s1', 'screenshot'), // 3
      result('s1', image), // 4
      call('s2', 'screenshot'), // 5
      { role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 's2', content: image, isError: true }] }, // 6
      call('q', 'query'), // 7
      result('q', words('row', 20)), // 8: under the masking minimum
      say('The page shows a login form.'),
      user('Log in.'),
      say('Logged in.'),
    ]);
    const out = fitToBudget(context, options(tokensOf(context) - 100));
    expect(out.steps).toEqual(['offload']);
    expect(out.dropped).toEqual([]);
    expect(out.offloadedSeqs).toEqual([4, 6]);
    const block = bySeq(out, 6)?.message.blocks[0];
    expect(block).toMatchObject({ type: 'tool_result', toolUseId: 's2', isError: true });
    expect(contentOf(bySeq(out, 6))).toMatch(/^\[tool output offloaded: screenshot, ~\d+ tokens; full output in the session history at seq 6\]$/);
    expect(bySeq(out, 6)?.message.role).toBe('tool');
    expectProviderValid(out.messages);
  });

  it('G3: unprotected turns are dropped before protected ones, oldest first, skipping a pinned turn', () => {
    const context = session([
      system('You are a helpful assistant.'),
      user(`Remember: ${words('rule', 200)}`, { pinned: true }), // 2, pinned
      say(words('ack', 200)), // 3
      user(words('q', 200)), // 4
      say(words('a', 200)), // 5
      user(words('r', 200)), // 6
      say(words('b', 200)), // 7
      user('And now?'), // 8
      say('Now we are done.'), // 9
    ]);
    const total = tokensOf(context);
    const out = fitToBudget(context, options(total - context[3].tokens - context[4].tokens - 10));
    expect(out.steps).toEqual(['drop-turns']);
    expect(out.dropped).toEqual([4, 5, 6, 7]);
    expect(seqsOf(out.messages)).toEqual([1, 2, 3, 8, 9]);
    expect(out.line).toMatch(/^Fallback: dropped 2 oldest turns \(saved ~[\d,]+ tokens\) to fit the [\d,]+-token budget$/);
    expect(out.latestMessages).toBe(2);
  });

  it('checkpoints first lose their prose and keep their Facts section; a dropped one keeps the user constraints of it (Guarantee 3)', () => {
    const facts = (c: SessionMessage, body: string): SessionMessage => {
      const block = c.message.blocks[0] as { type: 'text'; text: string };
      const message = { ...c.message, blocks: [{ type: 'text' as const, text: `${block.text}\n\n${FACTS_HEADER}\n${body}` }] };
      return { ...c, message, tokens: count(message) };
    };
    const context = session([
      system('You are a coding agent.'),
      checkpoint(1, 40, words('early', 300)), // 2
      user('Carry on.'), // 3
      say('Carrying on.'), // 4
    ]);
    context[1] = facts(context[1], `- ${CONSTRAINTS_LABEL}:\n  - "Never touch the migrations."\n- Files: src/app.py (edited); src/db.py (created)`);
    const total = tokensOf(context);
    // Room for all but the prose: the Facts section stays whole.
    const cut = fitToBudget(context, options(total - 250));
    expect(cut.steps).toEqual(['checkpoint-facts']);
    const kept = (cut.messages[1].message.blocks[0] as { text: string }).text;
    expect(kept).toContain('src/db.py (created)');
    expect(kept).not.toContain('early');
    expect(cut.line).toContain('cut 1 oldest checkpoint to its Facts section');
    // Room for even less: the checkpoint goes, but the user's constraint stays.
    const header = (context[1].message.blocks[0] as { text: string }).text.split('\n')[0];
    const stub = count({ ...context[1].message, blocks: [{ type: 'text', text: `${header}\n\n${FACTS_HEADER}\n- ${CONSTRAINTS_LABEL}:\n  - "Never touch the migrations."` }] });
    const tight = fitToBudget(context, options(total - count(context[1].message) + stub));
    expect(tight.steps).toEqual(['checkpoint-facts', 'drop-checkpoints']);
    const left = (tight.messages[1].message.blocks[0] as { text: string }).text;
    expect(left).toContain('"Never touch the migrations."');
    expect(left).not.toContain('src/db.py');
  });

  it("a checkpoint cut to its Facts section keeps the keys and errors its prose held (the Facts section holds only what the summary lacked)", () => {
    const prose = `${words('early', 200)}\nFetched https://downloads.example.net/tool-2.4.1.tar.gz and set RETRY_LIMIT=7.\nTypeError: cannot read properties of undefined (reading 'id')\n${words('later', 100)}`;
    const base = checkpoint(1, 40, prose);
    const block = base.blocks[0] as TextBlock;
    const withFacts: CanonicalMessage = { ...base, blocks: [{ type: 'text', text: `${block.text}\n\n${FACTS_HEADER}\n- Files: src/app.py (edited)` }] };
    const context = session([system('You are a coding agent.'), withFacts, user('Carry on.'), say('Carrying on.')]);
    const total = tokensOf(context);
    const cut = fitToBudget(context, options(total - 200));
    expect(cut.steps).toEqual(['checkpoint-facts']);
    const kept = (cut.messages[1].message.blocks[0] as TextBlock).text;
    expect(kept).not.toContain('early1 ');
    expect(kept).toContain('- Files: src/app.py (edited)');
    expect(kept).toMatch(/- Keys in its summary: .*https:\/\/downloads\.example\.net\/tool-2\.4\.1\.tar\.gz/);
    expect(kept).toContain('RETRY_LIMIT=7');
    expect(kept).toContain("- Errors in its summary:\n  - TypeError: cannot read properties of undefined (reading 'id')");
    expect(cut.tokens).toBeLessThanOrEqual(total - 200);
  });

  it('a checkpoint that goes whole leaves its Facts to the note: its keys (a setting at its latest value), its latest error', () => {
    const ids = Array.from({ length: 40 }, (_, i) => `handler_name_${i}`).join('; ');
    const facts = `- Errors:\n  - KeyError: 'user_id'\n- Settings and versions (latest): RETRY_LIMIT=9 (was RETRY_LIMIT=7)\n- URLs: https://ci.example.org/build/512\n- Identifiers: ${ids}`;
    const base = checkpoint(1, 40, words('early', 300));
    const withFacts: CanonicalMessage = { ...base, blocks: [{ type: 'text', text: `${(base.blocks[0] as TextBlock).text}\n\n${FACTS_HEADER}\n${facts}` }] };
    for (const turns of [true, false]) {
      const context = session([
        system('You are a coding agent.'),
        withFacts,
        ...(turns ? [user('Carry on with the importer.'), say(words('reply', 300))] : []),
        user('Next.'),
        say('Done.'),
      ]);
      const kept = [0, context.length - 2, context.length - 1].reduce((n, i) => n + context[i].tokens, 0);
      const out = fitToBudget(context, options(kept + 70));
      expect(out.steps).toContain('drop-checkpoints');
      expect(out.droppedCheckpoints).toEqual([2]);
      const note = noteOf(out);
      expect(note).toContain('Keys of the checkpoint left out (messages 1–40): RETRY_LIMIT=9; https://ci.example.org/build/512; handler_name_0');
      expect(note).not.toContain('(was');
      expect(note).toContain("Errors in them:\nKeyError: 'user_id'");
      expect(note.startsWith(turns ? '[2 earlier messages left out' : '[a checkpoint left out to fit the budget (messages 1–40;')).toBe(true);
      expect(out.tokens).toBeLessThanOrEqual(kept + 70);
      expectProviderValid(out.messages);
    }
  });

  it('gives back: a checkpoint cut or dropped by an earlier step returns, in the fullest form that fits, when a later step freed the room (the budget is used)', () => {
    const context = session([
      system('You are a coding agent.'),
      checkpoint(1, 40, words('early', 100)), // 2
      user(words('big', 600)), // 3
      say('Read it.'), // 4
      user('Carry on.'), // 5
      say('Carrying on.'), // 6
    ]);
    const block = context[1].message.blocks[0] as { type: 'text'; text: string };
    const message = { ...context[1].message, blocks: [{ type: 'text' as const, text: `${block.text}\n\n${FACTS_HEADER}\n- ${CONSTRAINTS_LABEL}:\n  - "Never touch the migrations."` }] };
    context[1] = { ...context[1], message, tokens: count(message) };
    const total = tokensOf(context);
    // Cutting and dropping the checkpoint is not enough; the latest-N protection shrinks (the last turn's reply goes),
    // then the large turn goes, which leaves room for the whole checkpoint again, and for the reply.
    const out = fitToBudget(context, options(total - Math.floor(context[2].tokens / 2), { latestMessages: 4, latestUserTexts: 2 }));
    expect(out.steps).toEqual(['checkpoint-facts', 'drop-protected']);
    expect(out.dropped).toEqual([3, 4]);
    expect(seqsOf(out.messages.filter((m) => !isNote(m)))).toEqual([1, 2, 5, 6]);
    expect(out.messages[1]).toBe(context[1]);
    expect(out.droppedCheckpoints).toEqual([]);
    expect(out.line).not.toMatch(/checkpoint/);
    expect(out.tokens).toBeLessThanOrEqual(total - Math.floor(context[2].tokens / 2));
  });

  it('gives back whole the protected tool outputs that became references, newest first, where the room left at the end takes them', () => {
    const served = `Serving HTTP on 0.0.0.0 port 8000 (http://0.0.0.0:8000/) ...\n${lines('GET', 4)}`;
    const context = session([
      system('You are a coding agent.'), // 1
      user('Build the app.'), // 2: protected from here on
      call('t1'), // 3
      result('t1', lines('build', 30)), // 4
      say(words('summary', 900)), // 5: huge
      user('Now serve it.'), // 6: the last user message
      call('t2'), // 7
      result('t2', served), // 8: small, with the URL it served
      say('It is up.'), // 9
    ]);
    const never = tokensOf([context[0], context[5]]);
    const out = fitToBudget(context, options(never + 120, { latestMessages: 7, latestUserTexts: 3 }));
    // Both outputs became references, then the oldest protected turn went with its huge answer: the room it freed takes the
    // small output whole again.
    expect(out.steps).toContain('offload-protected');
    expect(out.dropped).toEqual([2, 3, 4, 5]);
    expect(contentOf(bySeq(out, 8))).toBe(served);
    expect(out.offloadedSeqs).not.toContain(8);
    expect(out.tokens).toBeLessThanOrEqual(never + 120);
    expectProviderValid(out.messages);
  });

  it('gives back the protected turns that fit, newest first, once a large newer one freed the room: in the form the room takes, never an unprotected turn', () => {
    const context = session([
      system('You are a coding agent.'), // 1
      user(words('old', 120)), // 2: unprotected
      say(words('oldreply', 40)), // 3
      user('Check the log.'), // 4: protected from here on
      call('t1'), // 5
      result('t1', lines('log', 40)), // 6
      say('The log shows the retry loop.'), // 7
      user(words('huge', 900)), // 8
      say('Noted.'), // 9
      user('Carry on.'), // 10: the last user message
    ]);
    const never = tokensOf([context[0], context[9]]);
    const out = fitToBudget(context, options(never + 120, { latestMessages: 7, latestUserTexts: 3 }));
    // Everything protected went, oldest first, until the huge turn was gone; the turn before it comes back, its output
    // still the reference the protected give-way made of it. The unprotected oldest turn stays out.
    expect(out.steps).toEqual(['drop-turns', 'offload-protected', 'drop-protected']);
    expect(seqsOf(out.messages.filter((m) => !isNote(m)))).toEqual([1, 4, 5, 6, 7, 10]);
    expect(contentOf(bySeq(out, 6))).toMatch(/^\[tool output offloaded/);
    expect(out.dropped).toEqual([2, 3, 8, 9]);
    expect(out.line).toContain('dropped 2 oldest protected messages');
    expect(out.tokens).toBeLessThanOrEqual(never + 120);
    expectProviderValid(out.messages);
    // With keys in what is still out, the note says where: two runs of seqs, with the turn that came back between them.
    const keyed = session(context.map((m, i) => (i === 1 ? user(`${words('old', 120)} from https://example.com/specs/old`) : i === 8 ? say('Noted: the spec is https://example.com/specs/huge') : m.message)));
    const noted = fitToBudget(keyed, options(never + 160, { latestMessages: 7, latestUserTexts: 3 }));
    expect(seqsOf(noted.messages.filter((m) => !isNote(m)))).toEqual([1, 4, 5, 6, 7, 10]);
    const note = noted.messages.find(isNote);
    expect(note?.seq).toBe(2);
    expect((note?.message.blocks[0] as TextBlock).text).toMatch(/^\[4 earlier messages left out to fit the budget \(seq 2–3, 8–9; the history keeps them\)\]\nKeys in them: .*https:\/\/example\.com\/specs\/huge/);
    // Without room for it, it stays out with the others.
    const tight = fitToBudget(context, options(never + 20, { latestMessages: 7, latestUserTexts: 3 }));
    expect(seqsOf(tight.messages.filter((m) => !isNote(m)))).toEqual([1, 10]);
    expect(tight.line).toContain('dropped 6 oldest protected messages');
  });

  it("keeps the user's constraints of the turns it leaves out, verbatim, in the note (Guarantee 3): the rest of the note gives way first, then one more turn", () => {
    const context = twoOldTurns(`Port the exporter to the new API. Never change the public function names. ${words('ctx', 60)}`, `Now the importer, and keep the old flags working. ${words('more', 60)} See https://example.com/docs/importer`);
    const never = tokensOf([context[0], context[5], context[6], context[7]]);
    const room = fitToBudget(context, options(never + 150));
    expect(room.dropped).toEqual([2, 3, 4, 5]);
    const note = noteOf(room);
    expect(note).toContain(`- ${CONSTRAINTS_LABEL}:\n  - "Never change the public function names."`);
    expect(note).toContain('- User requests (verbatim):\n  - "Now the importer, and keep the old flags working."');
    expect(note).toContain('https://example.com/docs/importer');
    expect(room.tokens).toBeLessThanOrEqual(never + 150);
    // Room for the constraint alone: the request and the keys give way, the constraint stays.
    const stub = count(system(`[4 earlier messages left out to fit the budget (seq 2–5; the history keeps them)]\n- ${CONSTRAINTS_LABEL}:\n  - "Never change the public function names."`));
    const tight = fitToBudget(context, options(never + stub));
    const tightNote = noteOf(tight);
    expect(tightNote).toContain('"Never change the public function names."');
    expect(tightNote).not.toContain('https://example.com');
    expect(tight.tokens).toBeLessThanOrEqual(never + stub);
    // Where the note's room is taken, one more turn goes so that it fits: the constraint is never the part that is lost.
    const tighter = fitToBudget(context, options(never + stub - 2, { latestMessages: 4 }));
    expect(noteOf(tighter)).toContain('"Never change the public function names."');
    expect(tighter.tokens).toBeLessThanOrEqual(never + stub - 2);
    expectProviderValid(tighter.messages);
    // A constraint a kept checkpoint already quotes is not written twice.
    const quoted = session([
      system('You are a coding agent.'),
      checkpoint(1, 1, `Earlier work.\n\n${FACTS_HEADER}\n- ${CONSTRAINTS_LABEL}:\n  - "Never change the public function names."`),
      ...context.slice(1).map((m) => m.message),
    ]);
    const once = fitToBudget(quoted, options(never + count(quoted[1].message) + 150));
    const onceNote = noteOf(once);
    expect(onceNote).not.toContain('Never change the public function names');
    expect(once.messages.map((m) => JSON.stringify(m.message)).join('\n')).toContain('Never change the public function names');
  });

  it("states the session's first request in the note when its turn is left out and nothing kept states the task", () => {
    const request = 'Add a CSV export to the reports page; the button goes next to Print.';
    const context = twoOldTurns(request, words('more', 150));
    const never = tokensOf([context[0], context[5], context[6], context[7]]);
    const out = fitToBudget(context, options(never + 120));
    expect(out.dropped).toEqual([2, 3, 4, 5]);
    const note = noteOf(out);
    expect(note).toContain(`TASK (the session's first request):\n${request}`);
    expect(out.tokens).toBeLessThanOrEqual(never + 120);
    // A goal block that states the goal: the note does not state the request again.
    const goal: CanonicalMessage = { role: 'system', tags: ['goal'], blocks: [text('[GOAL BLOCK]\nACTIVE GOAL: ship the CSV export')] };
    const withGoal = session([context[0].message, goal, ...context.slice(1).map((m) => m.message)]);
    const again = fitToBudget(withGoal, options(never + count(goal) + 120));
    expect(noteOf(again)).not.toContain('TASK (');
  });

  it('writes the note in time linear in what the turns left out said: each request line is counted once, not the note again for each', () => {
    const turns = Array.from({ length: 600 }, (_, i) => [user(`Please keep the cache warm for service ${i}.`), say(`Done for service ${i}.`)]).flat();
    // A large last turn to leave out too, so that the room left takes a long note.
    const context = session([system('You are a coding agent.'), ...turns, user('Now the report.'), say(words('report', 3000)), user('Carry on.')]);
    let counted = 0;
    const counting: CountMessage = (m) => {
      counted += m.blocks.reduce((n, b) => n + (b.type === 'text' ? b.text.length : 0), 0);
      return count(m);
    };
    const contextChars = context.reduce((n, m) => n + m.message.blocks.reduce((k, b) => k + (b.type === 'text' ? b.text.length : 0), 0), 0);
    const out = fitToBudget(context, { ...options(3000), countMessage: counting });
    const note = noteOf(out);
    expect(note).toContain('- User requests (verbatim):');
    expect(note).toContain('"Please keep the cache warm for service 599."');
    expect(note.split('\n').filter((l) => l.startsWith('  - "Please keep')).length).toBeGreaterThan(100);
    expect(out.tokens).toBeLessThanOrEqual(3000);
    // Written again for each request, the note would be counted a hundred times over (tens of times the whole context).
    expect(counted).toBeLessThan(10 * contextChars);
  });

  it('lets the note list more keys where the room takes them (up to four times what a placeholder lists), and fewer where it takes less', () => {
    const urls = Array.from({ length: 24 }, (_, i) => `https://mirror-${i}.example.org/pkg/release-${i}.tar.gz`);
    const context = session([
      system('You are a coding agent.'), // 1
      user(`Fetch the releases. ${words('ctx', 40)}`), // 2
      say(`Fetched:\n${urls.join('\n')}\n${words('detail', 300)}`), // 3
      user('Which one is the latest?'), // 4
      say('The last one.'), // 5
      user('Install it.'), // 6: the last user message
    ]);
    const never = tokensOf([context[0], context[3], context[4], context[5]]);
    const keysLine = (out: FallbackResult) => (out.messages.find(isNote)?.message.blocks[0] as TextBlock).text.split('\n').find((l) => l.startsWith('Keys in them: '))!;
    const roomy = fitToBudget(context, options(never + 500));
    expect(roomy.dropped).toEqual([2, 3]);
    const listed = urls.filter((u) => keysLine(roomy).includes(u));
    expect(keysLine(roomy).length).toBeGreaterThan(320 + 'Keys in them: '.length);
    expect(listed.length).toBeGreaterThan(urls.length / 2);
    expect(roomy.tokens).toBeLessThanOrEqual(never + 500);
    // With room for a placeholder's worth only, the note lists that much.
    const tight = fitToBudget(context, options(never + 140));
    expect(keysLine(tight).length).toBeLessThanOrEqual(320 + 'Keys in them: '.length);
    expect(tight.tokens).toBeLessThanOrEqual(never + 140);
    // With room for less than a placeholder's worth, the first keys that fit (the note was left out whole before).
    const header = count(system('[2 earlier messages left out to fit the budget (seq 2–3; the history keeps them)]\nKeys in them: '));
    const scant = fitToBudget(context, options(never + header + 25));
    expect(keysLine(scant).length).toBeLessThanOrEqual(160 + 'Keys in them: '.length);
    expect(urls.some((u) => keysLine(scant).includes(u))).toBe(true);
    expect(scant.tokens).toBeLessThanOrEqual(never + header + 25);
  });

  it('drops checkpoints oldest first, only once the unprotected turns are gone, and before protected messages give way', () => {
    const context = session([
      system('You are a coding agent.'),
      checkpoint(1, 40, words('early', 150)), // 2
      checkpoint(41, 80, words('later', 150)), // 3
      user(words('old', 200)), // 4
      say(words('oldreply', 200)), // 5
      user('Pinned constraint: never touch the migrations.', { pinned: true }), // 6
      say(words('p', 200)), // 7
      user('Carry on.'), // 8
      say('Carrying on.'), // 9
    ]);
    const total = tokensOf(context);
    const out = fitToBudget(context, options(total - context[3].tokens - context[4].tokens - 10));
    expect(out.steps).toEqual(['drop-turns', 'drop-checkpoints']);
    expect(out.dropped).toEqual([4, 5]);
    expect(out.droppedCheckpoints).toEqual([2]);
    expect(seqsOf(out.messages.filter((m) => !isNote(m)))).toEqual([1, 3, 6, 7, 8, 9]);
    expect(out.line).toContain('dropped 1 oldest checkpoint');
  });

  it('G3 give-way (a): protected tool outputs are offloaded by reference (kept) before the latest-N protection shrinks', () => {
    const context = session([
      system('You are a coding agent.'),
      user('Run the suite.'), // 2
      call('a', 'bash'), // 3
      result('a', lines('suite', 100)), // 4
      say('It ran.'), // 5
      call('b', 'read_file'), // 6
      result('b', lines('log', 100)), // 7
      say('Read the log.'), // 8
    ]);
    // The latest 6 messages are protected: nothing may be masked or dropped, so the protected outputs are referenced.
    const out = fitToBudget(context, options(tokensOf(context) - context[3].tokens + 40, { latestMessages: 6 }));
    expect(out.steps).toEqual(['offload-protected']);
    expect(out.dropped).toEqual([]);
    expect(out.latestMessages).toBe(6);
    expect(seqsOf(out.messages)).toEqual(seqsOf(context));
    expect(contentOf(bySeq(out, 4))).toMatch(/^\[tool output offloaded: bash, ~\d+ tokens; full output in the session history at seq 4\]$/);
    expect(bySeq(out, 7)).toBe(context[6]); // oldest first, stop as soon as it fits
    expect(out.line).toContain('offloaded 1 protected tool output by reference');
  });

  describe('G3 give-way (b) then (c): N shrinks step by step before the oldest protected messages go', () => {
    const context = session([
      system('You are a helpful assistant.'),
      user(`Pinned: ${words('rule', 100)}`, { pinned: true }), // 2
      say(words('a1', 100)), // 3
      user(words('u2', 100)), // 4
      say(words('a2', 100)), // 5
      user(words('u3', 100)), // 6
      say(words('a3', 100)), // 7
      user(words('u4', 100)), // 8: the last user message
      say(words('a4', 100)), // 9
    ]);
    const total = tokensOf(context);
    const turn = (k: number) => context[2 * k - 1].tokens + context[2 * k].tokens; // turn k = seqs 2k, 2k+1

    it('shrinks N from 6 to 4 when dropping the turn it stops covering is enough; the pinned oldest turn stays', () => {
      const out = fitToBudget(context, options(total - turn(2) + 5, { latestMessages: 6 }));
      expect(out.steps).toEqual(['shrink-latest']);
      expect(out.latestMessages).toBe(4);
      expect(out.dropped).toEqual([4, 5]);
      expect(seqsOf(out.messages)).toEqual([1, 2, 3, 6, 7, 8, 9]);
      expect(out.line).toMatch(/shrank the latest-messages protection from 6 to 4 and dropped 2 messages it no longer covered/);
    });

    it('shrinks further (to 2) before touching the pinned turn', () => {
      const out = fitToBudget(context, options(total - turn(2) - turn(3) + 5, { latestMessages: 6 }));
      expect(out.steps).toEqual(['shrink-latest']);
      expect(out.latestMessages).toBe(2);
      expect(seqsOf(out.messages)).toEqual([1, 2, 3, 8, 9]);
    });

    it('only when N is 0 and still over do the oldest protected messages go; the last user message stays', () => {
      const budget = context[0].tokens + context[7].tokens + 5;
      const out = fitToBudget(context, options(budget, { latestMessages: 6 }));
      expect(out.steps).toEqual(['shrink-latest', 'drop-protected']);
      expect(out.latestMessages).toBe(0);
      // Turns 2 and 3 and the last reply went while shrinking; the pinned turn only after.
      expect(out.dropped).toEqual([2, 3, 4, 5, 6, 7, 9]);
      expect(seqsOf(out.messages)).toEqual([1, 8]);
      expect(out.line).toContain('dropped 2 oldest protected messages');
    });
  });

  it('keeps an open tool exchange and the last user message; its outputs are referenced only as the last resort', () => {
    const context = session([
      system('You are a coding agent.'),
      user(words('hist', 100)), // 2
      say(words('histreply', 100)), // 3
      user('Run the build.'), // 4: the last user message
      call('x1', 'bash'), // 5
      result('x1', lines('build1', 50)), // 6
      { role: 'assistant', blocks: [{ type: 'thinking', thinking: 'The build output matters.', signature: 'sig-1' }, text('Again, in parallel.'), { type: 'tool_use', id: 'p1', name: 'bash', input: {} }, { type: 'tool_use', id: 'p2', name: 'grep', input: {} }] }, // 7
      { role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 'p1', content: lines('build2', 80), isError: false }] }, // 8
      { role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 'p2', content: lines('grep', 80), isError: true }] }, // 9
    ]);
    const open = context[6].tokens;
    const floor = context[0].tokens + context[3].tokens + open;
    const out = fitToBudget(context, options(floor + 200, { latestMessages: 3 }));
    expect(out.steps).toEqual(['mask', 'drop-turns', 'offload-open']);
    expect(seqsOf(out.messages.filter((m) => !isNote(m)))).toEqual([1, 4, 7, 8, 9]);
    expect(bySeq(out, 7)).toBe(context[6]); // the thinking turn, byte-exact
    expect(contentOf(bySeq(out, 8))).toMatch(/^\[tool output offloaded: bash, ~\d+ tokens; full output in the session history at seq 8\]$/);
    expect(bySeq(out, 9)?.message.blocks[0]).toMatchObject({ toolUseId: 'p2', isError: true });
    expect(out.line).toContain("offloaded the open tool exchange's 2 outputs by reference");
    expectProviderValid(out.messages);
  });

  describe('the 422 path: what can never go exceeds the budget', () => {
    it('throws BudgetTooSmall (budget_too_small) with the budget and the irreducible tokens', () => {
      const context = session([system(words('sys', 800)), user('Hello.'), say(words('reply', 500))]);
      const irreducible = context[0].tokens + context[1].tokens;
      const thrown = thrownBy(() => fitToBudget(context, options(irreducible - 1)));
      expect(thrown).toBeInstanceOf(BudgetTooSmall);
      expect(thrown).toBeInstanceOf(DomainError);
      expect(thrown).toMatchObject({ code: ErrorCode.BudgetTooSmall, details: { budget: irreducible - 1, irreducibleTokens: irreducible } });
      // One token more and it fits: system prompt and last user message only.
      const out = fitToBudget(context, options(irreducible));
      expect(seqsOf(out.messages)).toEqual([1, 2]);
      expect(out.tokens).toBe(irreducible);
    });

    it('counts the open exchange in its referenced form, and a huge last user message as it is', () => {
      const context = session([system('Agent.'), user(words('paste', 2000)), call('c', 'read_file'), result('c', lines('file', 300))]);
      expect(() => fitToBudget(context, options(context[1].tokens))).toThrow(BudgetTooSmall);
      const thrown = thrownBy(() => fitToBudget(context, options(context[1].tokens + context[2].tokens)));
      expect(thrown).toBeInstanceOf(BudgetTooSmall);
      const { irreducibleTokens } = (thrown as BudgetTooSmall).details as { irreducibleTokens: number };
      expect(irreducibleTokens).toBeLessThan(tokensOf(context) - 1_000); // the 300-line result counted as its reference
      expect(irreducibleTokens).toBeGreaterThan(context[0].tokens + context[1].tokens + context[2].tokens);
      const out = fitToBudget(context, options(irreducibleTokens));
      expect(out.steps).toEqual(['offload-open']);
      expect(seqsOf(out.messages)).toEqual([1, 2, 3, 4]);
    });
  });

  it('drops a thinking turn whole and never edits a kept one', () => {
    const thinking: CanonicalMessage = { role: 'assistant', blocks: [{ type: 'thinking', thinking: words('hmm', 300), signature: 'sig-a' }, text('Reading.'), { type: 'tool_use', id: 't1', name: 'read_file', input: {} }] };
    const context = session([system('Agent.'), user('Go.'), thinking, result('t1', lines('f', 60)), say('Read it.'), user('Next.'), { ...thinking, blocks: [...thinking.blocks.slice(0, 2), { type: 'tool_use', id: 't2', name: 'read_file', input: {} }] }, result('t2', 'ok')]);
    const out = fitToBudget(context, options(tokensOf(context) - context[2].tokens, { latestMessages: 2 }));
    expect(out.dropped).toEqual([2, 3, 4, 5]);
    expect(bySeq(out, 7)).toBe(context[6]);
    expectProviderValid(out.messages);
  });

  describe('real SWE-agent trajectories (OpenAI shape)', () => {
    const dir = join(__dirname, '../../../../testdata/swe-agent-trajectories');
    const files = readdirSync(dir).filter((f) => f.endsWith('.traj'));
    it.each(files)('%s: fits 50%%, 20% and 5% budgets, valid, system prompt and task kept, or fails with 422', (file) => {
      const history = (JSON.parse(readFileSync(join(dir, file), 'utf8')) as { history: unknown[] }).history;
      const parsed = parseOpenAIMessages(history, 'history');
      if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
      const context = providerValid(session(parsed.value));
      const total = tokensOf(context);
      const never = neverGoes(context);
      for (const fraction of [0.5, 0.2, 0.05]) {
        const budget = Math.floor(total * fraction);
        try {
          const out = fitToBudget(context, options(budget, { latestMessages: 6, latestUserTexts: 3 }));
          expect(out.tokens).toBeLessThanOrEqual(budget);
          expectProviderValid(out.messages);
          for (const m of never.systems) expect(out.messages).toContain(m);
          if (never.lastUser) expect(out.messages).toContain(never.lastUser);
        } catch (e) {
          expect(e).toBeInstanceOf(BudgetTooSmall);
          expect(((e as BudgetTooSmall).details as { irreducibleTokens: number }).irreducibleTokens).toBeGreaterThan(budget);
        }
      }
    });
  });

  // -------------------------------------------------------------------------------------------
  // Properties over generated sessions.

  interface StepSpec {
    calls: number;
    error: boolean;
    size: number;
    image: boolean;
    thinking: boolean;
    pinned: boolean;
    tool: string;
    note: boolean;
  }
  interface TurnSpec {
    size: number;
    pinned: boolean;
    observation: boolean;
    steps: StepSpec[];
    reply: boolean;
  }
  const stepArb: fc.Arbitrary<StepSpec> = fc.record({
    calls: fc.integer({ min: 0, max: 3 }),
    error: fc.boolean(),
    size: fc.oneof(fc.integer({ min: 0, max: 10 }), fc.integer({ min: 10, max: 400 })),
    image: fc.boolean(),
    thinking: fc.boolean(),
    pinned: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
    tool: fc.constantFrom('read_file', 'bash', 'grep', 'memory'),
    note: fc.boolean(),
  });
  const turnArb: fc.Arbitrary<TurnSpec> = fc.record({
    size: fc.integer({ min: 1, max: 300 }),
    pinned: fc.integer({ min: 0, max: 7 }).map((n) => n === 0),
    observation: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
    steps: fc.array(stepArb, { maxLength: 5 }),
    reply: fc.boolean(),
  });
  const sessionArb = fc.record({
    openaiShape: fc.boolean(),
    systems: fc.integer({ min: 1, max: 2 }),
    systemSize: fc.integer({ min: 1, max: 150 }),
    goal: fc.boolean(),
    checkpoints: fc.integer({ min: 0, max: 2 }),
    preamble: fc.boolean(),
    turns: fc.array(turnArb, { maxLength: 6 }),
    ending: fc.constantFrom('user', 'reply', 'open', 'pending'),
    openSize: fc.integer({ min: 1, max: 300 }),
    latestMessages: fc.integer({ min: 0, max: 8 }),
    latestUserTexts: fc.integer({ min: 0, max: 3 }),
    exempt: fc.boolean(),
    // Mostly budgets the fallback can meet, some it cannot (the 422 path).
    fill: fc.oneof({ weight: 4, arbitrary: fc.double({ min: 0.2, max: 1.2, noNaN: true }) }, { weight: 1, arbitrary: fc.double({ min: 0.01, max: 0.2, noNaN: true }) }),
  });
  type SessionSpec = typeof sessionArb extends fc.Arbitrary<infer T> ? T : never;

  function build(spec: SessionSpec): SessionMessage[] {
    const out: CanonicalMessage[] = [];
    for (let k = 0; k < spec.systems; k += 1) out.push(system(`System prompt ${k}. ${words('sys', spec.systemSize)}`));
    if (spec.goal) out.push({ role: 'system', tags: ['goal'], blocks: [text('[GOAL] Make the suite pass. [DECISION] Keep the public API - LOCKED')] });
    for (let k = 0; k < spec.checkpoints; k += 1) out.push(checkpoint(k * 50 + 1, k * 50 + 50, words(`ckpt${k}_`, 120)));
    if (spec.preamble && spec.checkpoints > 0) out.push(say('Continuing from the checkpoint.'));
    let id = 0;
    const results = (ids: string[], s: StepSpec, note: boolean) => {
      const blocks = ids.map((c, x): ToolResultBlock => ({
        type: 'tool_result',
        toolUseId: c,
        // OpenAI tool messages carry no images: toOpenAI moves them to a user message after the result, so only the last result of a step has one.
        content: s.image && x === ids.length - 1 ? [text('shot'), { type: 'image', source: { kind: 'url', url: `https://example.test/${c}.png` }, width: 640, height: 480 }] : lines(c, s.size),
        isError: s.error && x === ids.length - 1,
      }));
      if (spec.openaiShape) for (const b of blocks) out.push({ role: 'tool', blocks: [b] });
      else out.push({ role: 'user', blocks: [...blocks, ...(note ? [text('(results above)')] : [])] });
    };
    const step = (s: StepSpec, label: string) => {
      const ids = Array.from({ length: s.calls }, () => `call_${(id += 1)}`);
      const blocks: Block[] = [];
      if (s.thinking) blocks.push({ type: 'thinking', thinking: `Thinking about ${label}.`, signature: `sig_${label}` });
      blocks.push(text(`Step ${label}.`));
      for (const c of ids) blocks.push({ type: 'tool_use', id: c, name: s.tool, input: { label } });
      out.push({ role: 'assistant', blocks, ...(s.pinned ? { pinned: true } : {}) });
      if (ids.length > 0) results(ids, s, s.note);
    };
    spec.turns.forEach((t, k) => {
      out.push(user(`Turn ${k}: ${words('w', t.size)}`, { ...(t.pinned ? { pinned: true } : {}), ...(t.observation ? { tags: ['observation'] } : {}) }));
      t.steps.forEach((s, j) => step(s, `${k}.${j}`));
      if (t.reply) out.push(say(`Reply ${k}.`));
    });
    const last: StepSpec = { calls: 2, error: false, size: spec.openSize, image: false, thinking: true, pinned: false, tool: 'bash', note: false };
    if (spec.ending === 'user') out.push(user('What now?'));
    else if (spec.ending === 'reply') out.push(say('All done.'));
    else if (spec.ending === 'open') step(last, 'open');
    else {
      const ids = [`call_${(id += 1)}`];
      out.push({ role: 'assistant', blocks: [text('Waiting.'), { type: 'tool_use', id: ids[0], name: 'bash', input: {} }] });
    }
    return providerValid(session(out));
  }

  const ORDER: FallbackStep[] = ['mask', 'offload', 'drop-turns', 'checkpoint-facts', 'offload-protected', 'drop-checkpoints', 'shrink-latest', 'drop-protected', 'offload-open'];

  it('read after read (memoized masks and the left-out turns\' ledger) gives exactly what a first read gives, as the session grows', () => {
    fc.assert(
      fc.property(sessionArb, fc.double({ min: 0.75, max: 1, noNaN: true }), (spec, cut) => {
        // Each user turn names a URL, so the left-out turns' note has keys to tell apart.
        const context = build(spec).map((m) => {
          const [first, ...rest] = m.message.blocks;
          if (m.message.role !== 'user' || first?.type !== 'text') return m;
          const message: CanonicalMessage = { ...m.message, blocks: [text(`${first.text} (see https://example.test/turn/${m.seq})`), ...rest] };
          return { seq: m.seq, message, tokens: count(message) };
        });
        const fresh = (xs: SessionMessage[]) => structuredClone(xs);
        // One budget for both reads, as a session's is: the longer session drops more of the same oldest turns.
        const budget = Math.floor(tokensOf(context) * (0.15 + spec.fill / 4));
        const opts = () => options(budget, { latestMessages: spec.latestMessages, latestUserTexts: spec.latestUserTexts, exemptToolNames: spec.exempt ? ['memory'] : [] });
        const attempt = (xs: SessionMessage[]) => {
          try {
            return fitToBudget(xs, opts());
          } catch (e) {
            return e instanceof BudgetTooSmall ? 'too-small' : e;
          }
        };
        // An earlier read of the same (shorter) session primes the memos with the same message objects.
        const earlier = context.slice(0, Math.max(1, Math.ceil(context.length * cut)));
        expect(attempt(earlier)).toEqual(attempt(fresh(earlier)));
        expect(attempt(context)).toEqual(attempt(fresh(context)));
        expect(attempt(context)).toEqual(attempt(fresh(context)));
      }),
      { numRuns: 150 },
    );
  });

  it('properties: within budget or 422 (G4), 422 only when what never goes exceeds the budget, valid for both providers (G2), protected content kept unless it had to give way (G3), deterministic (G8)', () => {
    fc.assert(
      fc.property(sessionArb, (spec) => {
        const context = build(spec);
        const total = tokensOf(context);
        const budget = Math.floor(total * spec.fill);
        const opts = options(budget, { latestMessages: spec.latestMessages, latestUserTexts: spec.latestUserTexts, exemptToolNames: spec.exempt ? ['memory'] : [] });
        const snapshot = structuredClone(context);
        const never = neverGoes(context);
        let out: FallbackResult | undefined;
        let thrown: unknown;
        try {
          out = fitToBudget(context, opts);
        } catch (e) {
          thrown = e;
        }
        expect(context).toEqual(snapshot); // the input (the history's messages) is never modified

        const floorTokens = tokensOf(never.systems) + (never.lastUser?.tokens ?? 0);
        if (!out) {
          expect(thrown).toBeInstanceOf(BudgetTooSmall);
          const { irreducibleTokens } = (thrown as BudgetTooSmall).details as { irreducibleTokens: number };
          expect(irreducibleTokens).toBeGreaterThan(budget);
          expect(irreducibleTokens).toBeGreaterThanOrEqual(floorTokens);
          expect(irreducibleTokens).toBeLessThanOrEqual(floorTokens + tokensOf(never.open));
          // The bound is tight: at exactly that budget, only what never goes is left.
          const tight = fitToBudget(context, { ...opts, budget: irreducibleTokens });
          const expected = [...never.systems, ...(never.lastUser ? [never.lastUser] : []), ...never.open].map((m) => m.seq).sort((a, b) => a - b);
          expect(seqsOf(tight.messages)).toEqual(expected);
          expect(() => fitToBudget(context, opts)).toThrow(BudgetTooSmall);
          return;
        }

        // G4
        expect(out.tokens).toBeLessThanOrEqual(budget);
        expect(out.tokens).toBe(tokensOf(out.messages));
        const original = new Map(context.map((m) => [m.seq, m]));
        // A note may stand where dropped turns were (their ledger keys): its seq is the first dropped one's, and it is smaller than they were.
        const notes = out.messages.filter(isNote);
        expect(notes.length).toBeLessThanOrEqual(1);
        for (const n of notes) {
          expect(out.dropped).toContain(n.seq);
          expect(n.tokens).toBe(count(n.message));
          expect(n.tokens).toBeLessThan(context.filter((m) => out.dropped.includes(m.seq)).reduce((t, m) => t + m.tokens, 0));
        }
        for (const m of out.messages.filter((x) => !isNote(x))) {
          const from = original.get(m.seq);
          expect(from).toBeDefined();
          if (m !== from) expect(m.tokens).toBe(count(m.message));
          if (m !== from) expect(m.tokens).toBeLessThan(from?.tokens ?? 0);
        }
        if (total <= budget) {
          expect(out.applied).toBe(false);
          out.messages.forEach((m, i) => expect(m).toBe(context[i]));
        } else expect(out.applied).toBe(true);

        // Order kept; kept and dropped partition the context.
        const kept = seqsOf(out.messages.filter((x) => !isNote(x)));
        expect(kept).toEqual(seqsOf(context).filter((s) => kept.includes(s)));
        expect([...kept, ...out.dropped, ...out.droppedCheckpoints].sort((a, b) => a - b)).toEqual(seqsOf(context).sort((a, b) => a - b));

        // What never goes is there, system prompts and the last user message untouched.
        for (const m of never.systems) expect(out.messages).toContain(m);
        if (never.lastUser) expect(out.messages).toContain(never.lastUser);
        for (const m of never.open) expect(kept).toContain(m.seq);

        // G2 in both shapes; thinking turns are never edited; the conversation still opens with the user when it did.
        expectProviderValid(out.messages);
        for (const m of out.messages) if (m.message.role === 'assistant') expect(m).toBe(original.get(m.seq));
        const firstTalk = (xs: SessionMessage[]) => xs.find((m) => m.message.role !== 'system')?.message.role;
        if (firstTalk(context) === 'user' && firstTalk(out.messages) !== undefined) expect(firstTalk(out.messages)).toBe('user');

        // Steps run in the documented order.
        expect(out.steps).toEqual(ORDER.filter((s) => out?.steps.includes(s)));

        // G3: without give-way, protected messages are all there (tool outputs of the latest N unchanged).
        const protection = protectionOf(context, opts.protection);
        const gaveWay = out.steps.some((s) => s === 'offload-protected' || s === 'shrink-latest' || s === 'drop-protected' || s === 'offload-open');
        if (!gaveWay) {
          expect(out.latestMessages).toBe(spec.latestMessages);
          for (const m of context) if (protection.whole.has(m.seq) && !m.message.tags?.includes('checkpoint')) expect(out.messages).toContain(m);
          for (const m of context) if (protection.userText.has(m.seq)) expect(kept).toContain(m.seq);
        }
        // Checkpoints and protected content go only once every unprotected turn (or step of the last turn) is gone.
        if (gaveWay || out.droppedCheckpoints.length > 0) {
          const isProtected = (m: SessionMessage) =>
            protection.whole.has(m.seq) || protection.userText.has(m.seq) || m.message.blocks.some((b) => b.type === 'tool_result' && protection.exemptToolUseIds.has(b.toolUseId));
          const neverSeqs = new Set([...never.systems, ...never.open, ...(never.lastUser ? [never.lastUser] : [])].map((m) => m.seq));
          for (const unit of unitsOf(context, never.lastUser)) {
            if (unit.some((m) => neverSeqs.has(m.seq)) || unit.some(isProtected)) continue;
            for (const m of unit) expect(out.dropped).toContain(m.seq);
          }
        }

        // G8
        expect(fitToBudget(context, opts)).toEqual(out);
      }),
      { numRuns: 300, seed: 20260501 },
    );
  });
});

describe('fitToBudget: whole steps of the budget, so a growing session keeps its prefix between reads', () => {
  /** A session of `turns` tool steps with outputs of ~250 tokens each, then a last user message of `tail` characters. */
  const growing = (turns: number, tail: number) =>
    session([
      system('You are a coding agent.'),
      user('Fix the failing build.'),
      ...Array.from({ length: turns }, (_, i) => [call(`t${i}`), result(`t${i}`, lines(`out${i}`, 20))]).flat(),
      user(`and now ${'x'.repeat(tail)}`),
    ]);
  const budget = 2_000;

  it('frees whole steps (10% of the budget): a read that grew by less than what is left of its step sends the same context, the new message aside', () => {
    const first = fitToBudget(growing(12, 0), options(budget));
    expect(first.applied).toBe(true);
    // It freed a whole step: under the budget by up to a step, not just under it.
    expect(first.tokens).toBeLessThanOrEqual(budget);
    const step = budget * 0.1;
    const over = first.tokensBefore - budget;
    expect(first.tokensBefore - first.tokens).toBeGreaterThanOrEqual(Math.ceil(over / step) * step);
    // The last message grows by a few tokens (what the next read holds beyond the first): the same outputs are masked.
    const room = Math.ceil(over / step) * step - over;
    const next = fitToBudget(growing(12, Math.max(0, (room - 20) * 4)), options(budget));
    expect(next.maskedSeqs).toEqual(first.maskedSeqs);
    expect(next.messages.slice(0, -1)).toEqual(first.messages.slice(0, -1));
    expect(next.tokens).toBeLessThanOrEqual(budget);
  });

  it('takes a step more once the session outgrew the one it took; never more than the unprotected steps can give', () => {
    const first = fitToBudget(growing(12, 0), options(budget));
    const grown = fitToBudget(growing(14, 0), options(budget));
    expect(grown.maskedSeqs.length).toBeGreaterThan(first.maskedSeqs.length);
    expect(grown.tokens).toBeLessThanOrEqual(budget);
  });

  it('protected content gives way only as far as the budget, not a step further (Guarantee 3)', () => {
    // Everything is protected (the latest 100 messages): nothing unprotected can free the step, so only the budget counts.
    // Each output is ~3% of the budget: one offloaded is what the budget needs, a step would take three or more.
    const context = growing(30, 0);
    const total = tokensOf(context);
    const out = fitToBudget(context, options(total - 5, { latestMessages: 100 }));
    expect(out.applied).toBe(true);
    expect(out.tokens).toBeLessThanOrEqual(total - 5);
    // One protected output offloaded is enough for the budget; the step would have asked for more.
    expect(out.steps).toEqual(['offload-protected']);
    expect(out.tokens).toBeGreaterThan(total - 5 - Math.round((total - 5) * 0.1));
  });
});
