import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { LlmError, SummarizeRequest, Summarizer } from '../llm/summarizer';
import { toAnthropic } from '../messages/anthropic';
import { Block, CanonicalMessage } from '../messages/canonical';
import { countableParts } from '../messages/countable';
import { parseOpenAIMessages, toOpenAI } from '../messages/openai';
import { makeProviderValid, providerValidityProblems } from '../messages/provider-valid';
import { CompactionInput, CountMessage, SessionMessage } from '../engine/types';
import { applyPrefix, checkpointMessage, EMPTY_PREFIX, VersionPrefix } from '../engine/version';
import { advanceWatermark, compactWatermark, findWatermarkCall, isCheckpointTool, WATERMARK, WATERMARK_DEFAULTS, WatermarkParams } from './watermark';

const count: CountMessage = (m) => 3 + Math.ceil(countableParts(m).texts.reduce((n, t) => n + t.length, 0) / 4);
const session = (messages: CanonicalMessage[], from = 1): SessionMessage[] => messages.map((message, i) => ({ seq: from + i, message, tokens: count(message) }));
const text = (t: string): Block => ({ type: 'text', text: t });
const use = (id: string, name = 'bash'): Block => ({ type: 'tool_use', id, name, input: { cmd: `run ${id}` } });
const res = (id: string, lines = 80): Block => ({ type: 'tool_result', toolUseId: id, content: Array.from({ length: lines }, (_, i) => `${id} output line ${i}`).join('\n'), isError: false });

/** The watermark stage needs no LLM: any call to it is a defect. */
class NoLlm implements Summarizer {
  readonly provider = 'test';
  readonly model = 'none';
  readonly contextWindow = 100_000;
  readonly deterministic = true;
  async summarize(_request: SummarizeRequest): Promise<never> {
    throw new LlmError('bad-request', 'the watermark stage must not call the LLM', 1);
  }
}

const input = (history: SessionMessage[], prefix: VersionPrefix = EMPTY_PREFIX, budget = 10_000): CompactionInput => ({
  history,
  prefix,
  budget,
  summarizer: new NoLlm(),
  countMessage: count,
  countText: (t) => Math.ceil(t.length / 4),
  trigger: 'watermark',
});
const contextOf = (history: SessionMessage[], prefix: VersionPrefix) => applyPrefix(prefix, history, (c) => count(checkpointMessage(c)));
const params = (over: Partial<WatermarkParams> = {}): WatermarkParams => ({ ...WATERMARK_DEFAULTS, minSavingTokens: 0, minSavingFraction: 0, ...over });

/** Seed 001's "Execution Flow Example", with tool work before the checkpoint call. */
function seedExample(): CanonicalMessage[] {
  return [
    { role: 'system', blocks: [text('You are Claude.')] },
    { role: 'user', blocks: [text('Explore the code base, then deactivate refactoring/* augments.')] },
    { role: 'assistant', blocks: [text('Reading the code first.'), use('toolu_read1', 'read_file')] },
    { role: 'user', blocks: [res('toolu_read1'), text('also look at utils')] },
    { role: 'assistant', blocks: [use('toolu_read2', 'read_file')] },
    { role: 'user', blocks: [res('toolu_read2')] },
    { role: 'assistant', blocks: [text('Deactivating now.'), use('toolu_abc123xyz', 'compress_to_checkpoint')] },
    { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'toolu_abc123xyz', content: 'Deactivated 3 augments', isError: false }] },
    { role: 'assistant', blocks: [text('Deactivated 3 augments...'), use('toolu_after', 'bash')] },
    { role: 'user', blocks: [res('toolu_after')] },
    { role: 'user', blocks: [text('Now help me with feature X')] },
  ];
}

describe('watermark preset (seed 001; SPEC.md Policies)', () => {
  it('seed 001: before the watermark tool_use/tool_result blocks go and text stays; the watermark call, its result and everything after stay unchanged', async () => {
    const history = session(seedExample());
    const out = await compactWatermark(input(history), params());
    expect(out.status).toBe('succeeded');
    expect(out.prefix.watermarkSeq).toBe(7);
    expect(out.prefix.treatments).toEqual({
      3: { kind: 'compressed', stage: 'watermark', message: { role: 'assistant', blocks: [text('Reading the code first.')] }, tokens: count({ role: 'assistant', blocks: [text('Reading the code first.')] }) },
      4: { kind: 'compressed', stage: 'watermark', message: { role: 'user', blocks: [text('also look at utils')] }, tokens: count({ role: 'user', blocks: [text('also look at utils')] }) },
      5: { kind: 'dropped', stage: 'watermark' },
      6: { kind: 'dropped', stage: 'watermark' },
    });
    expect(out.prefix.coversThroughSeq).toBe(6);
    const context = contextOf(history, out.prefix);
    expect(context.map((m) => m.seq)).toEqual([1, 2, 3, 4, 7, 8, 9, 10, 11]);
    for (const m of history.filter((x) => x.seq >= 7 || x.seq <= 2)) expect(context).toContainEqual(m);
    expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
    expect(out.tokensAfter).toBeLessThan(out.tokensBefore);
    expect(out).toMatchObject({ llmCalls: 0, artifacts: [], steps: ['watermark'] });
    expect(out.events).toEqual([
      { type: 'watermark-advanced', line: 'Watermark advanced to message 7 (compress_to_checkpoint call toolu_abc123xyz)' },
      { type: 'compressed', line: expect.stringMatching(/^Compressed 4 tool blocks before watermark \(message 7\): 2 messages removed, 2 shortened \(saved ~[\d,]+ tokens\)$/) },
    ]);
  });

  it('seed 001: in the OpenAI shape, role tool messages before the watermark go whole; assistant content stays', async () => {
    const history = session([
      { role: 'system', blocks: [text('sys')] },
      { role: 'user', blocks: [text('task')] },
      { role: 'assistant', blocks: [text('two reads'), use('call_a'), use('call_b')], contentForm: 'string', origin: 'openai' },
      { role: 'tool', blocks: [res('call_a')], origin: 'openai' },
      { role: 'tool', blocks: [res('call_b')], origin: 'openai' },
      { role: 'assistant', blocks: [use('call_cp', 'compress_to_checkpoint')], contentForm: 'null', origin: 'openai' },
      { role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 'call_cp', content: 'ok', isError: false }], origin: 'openai' },
    ]);
    const out = await compactWatermark(input(history), params());
    expect(out.prefix.treatments[3]).toMatchObject({ kind: 'compressed', message: { role: 'assistant', blocks: [text('two reads')], contentForm: 'string' } });
    expect(out.prefix.treatments[4]).toEqual({ kind: 'dropped', stage: 'watermark' });
    expect(out.prefix.treatments[5]).toEqual({ kind: 'dropped', stage: 'watermark' });
    const context = contextOf(history, out.prefix).map((m) => m.message);
    expect(providerValidityProblems(context)).toEqual([]);
    expect(toOpenAI(context)).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'task' },
      { role: 'assistant', content: 'two reads' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_cp', type: 'function', function: { name: 'compress_to_checkpoint', arguments: JSON.stringify({ cmd: 'run call_cp' }) } }] },
      { role: 'tool', tool_call_id: 'call_cp', content: 'ok' },
    ]);
  });

  it('seed 001 edge case 3: several checkpoints, the watermark advances to the most recent one', async () => {
    const history = session([
      { role: 'user', blocks: [text('go')] },
      { role: 'assistant', blocks: [use('toolu_111', 'compress_to_checkpoint')] },
      { role: 'user', blocks: [res('toolu_111')] },
      { role: 'assistant', blocks: [text('working'), use('w1')] },
      { role: 'user', blocks: [res('w1')] },
      { role: 'assistant', blocks: [use('toolu_222', 'compress_to_checkpoint')] },
      { role: 'user', blocks: [res('toolu_222')] },
    ]);
    expect(findWatermarkCall(history, ['compress_to_checkpoint'])).toEqual({ seq: 6, toolUseId: 'toolu_222', name: 'compress_to_checkpoint' });
    const out = await compactWatermark(input(history), params());
    expect(out.prefix.watermarkSeq).toBe(6);
    // The earlier checkpoint call is ordinary tool history by now.
    expect(out.prefix.treatments[2]).toEqual({ kind: 'dropped', stage: 'watermark' });
    expect(Object.keys(out.prefix.treatments).map(Number)).toEqual([2, 3, 4, 5]);
  });

  it('seed 001: the call marks the checkpoint whatever its result says (set ALWAYS, even if nothing was deactivated or the tool failed)', async () => {
    const msgs = seedExample();
    msgs[7] = { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'toolu_abc123xyz', content: 'nothing to deactivate', isError: true }] };
    const out = await compactWatermark(input(session(msgs)), params());
    expect(out.status).toBe('succeeded');
    expect(out.prefix.watermarkSeq).toBe(7);
  });

  it('seed 001 persistence: the watermark stays in the prefix; later messages stay live; a new checkpoint call advances it', async () => {
    const all = seedExample();
    const first = session(all);
    const a = await compactWatermark(input(first), params());
    // More turns after the watermark: nothing new to compress, and the messages after it are untouched.
    const later = session([...all, { role: 'assistant', blocks: [text('On it.'), use('toolu_x1')] }, { role: 'user', blocks: [res('toolu_x1')] }]);
    const b = await compactWatermark(input(later, a.prefix), params());
    expect(b.status).toBe('skipped');
    expect(b.prefix).toBe(a.prefix);
    expect(contextOf(later, a.prefix).slice(-2)).toEqual(later.slice(-2));
    // A second checkpoint: the watermark advances and the earlier treatments are kept.
    const again = session([...later.map((m) => m.message), { role: 'assistant', blocks: [use('toolu_cp2', 'compress_to_checkpoint')] }, { role: 'user', blocks: [res('toolu_cp2', 1)] }]);
    const c = await compactWatermark(input(again, a.prefix), params());
    expect(c.status).toBe('succeeded');
    expect(c.prefix.watermarkSeq).toBe(14);
    for (const [seq, t] of Object.entries(a.prefix.treatments)) expect(c.prefix.treatments[Number(seq)]).toEqual(t);
    expect(c.prefix.treatments[7]).toEqual({ kind: 'compressed', stage: 'watermark', message: { role: 'assistant', blocks: [text('Deactivating now.')] }, tokens: expect.any(Number) });
    expect(providerValidityProblems(contextOf(again, c.prefix).map((m) => m.message))).toEqual([]);
  });

  it('only advances: an input prefix whose watermark is later than the latest call keeps it', async () => {
    const history = session(seedExample());
    const out = await compactWatermark(input(history, { ...EMPTY_PREFIX, watermarkSeq: 9 }), params());
    expect(out.prefix.watermarkSeq).toBe(9);
    expect(out.events.map((e) => e.type)).toEqual(['compressed']);
    // Seq 7's checkpoint call is before the watermark now: stripped, and its result with it.
    expect(out.prefix.treatments[7]).toMatchObject({ kind: 'compressed' });
    expect(out.prefix.treatments[8]).toEqual({ kind: 'dropped', stage: 'watermark' });
    expect(providerValidityProblems(contextOf(history, out.prefix).map((m) => m.message))).toEqual([]);
  });

  it('seed 001 edge case 2: no checkpoint call and no watermark: no compression and a warning', async () => {
    const history = session(seedExample().slice(0, 6));
    const out = await compactWatermark(input(history), params());
    expect(out).toMatchObject({ status: 'skipped', reason: 'watermark-not-found', prefix: EMPTY_PREFIX });
    expect(out.tokensAfter).toBe(out.tokensBefore);
    expect(out.events).toEqual([
      { type: 'warning', line: 'Checkpoint tool compress_to_checkpoint not found in conversation history' },
      { type: 'compression-skipped', line: 'Compaction skipped: watermark-not-found' },
    ]);
  });

  it('seed 001 edge case 1: a watermark that is not in the history: no compression and a warning', async () => {
    const history = session(seedExample().slice(0, 6));
    const prefix = { ...EMPTY_PREFIX, watermarkSeq: 40 };
    const out = await compactWatermark(input(history, prefix), params());
    expect(out).toMatchObject({ status: 'skipped', reason: 'watermark-not-found', prefix });
    expect(out.events[0]).toEqual({ type: 'warning', line: 'Watermark 40 not found - no compression applied' });
  });

  it('the checkpoint tool names are configurable (seed 001 uses deactivate_augments too) and match their MCP-qualified names', async () => {
    expect(isCheckpointTool('compress_to_checkpoint', ['compress_to_checkpoint'])).toBe(true);
    expect(isCheckpointTool('mcp__nisaba__compress_to_checkpoint', ['compress_to_checkpoint'])).toBe(true);
    expect(isCheckpointTool('mcp__nisaba__deactivate_augments', ['mcp__nisaba__deactivate_augments'])).toBe(true);
    expect(isCheckpointTool('my_compress_to_checkpoint', ['compress_to_checkpoint'])).toBe(false);
    expect(isCheckpointTool('mcp____compress_to_checkpoint', ['compress_to_checkpoint'])).toBe(false);
    expect(isCheckpointTool('activate_augments', ['deactivate_augments'])).toBe(false);
    const msgs = seedExample();
    msgs[6] = { role: 'assistant', blocks: [use('toolu_abc123xyz', 'mcp__nisaba__deactivate_augments')] };
    const history = session(msgs);
    expect((await compactWatermark(input(history), params())).reason).toBe('watermark-not-found');
    const out = await compactWatermark(input(history), params({ checkpointToolNames: ['compress_to_checkpoint', 'deactivate_augments'] }));
    expect(out.prefix.watermarkSeq).toBe(7);
    expect(WATERMARK).toMatchObject({ name: 'watermark', source: 'seed 001', defaults: WATERMARK_DEFAULTS });
    expect(WATERMARK_DEFAULTS.checkpointToolNames).toEqual(['compress_to_checkpoint']);
  });

  it('thinking is kept byte-exact or dropped with its whole turn (Guarantee 2)', async () => {
    const thinking: Block = { type: 'thinking', thinking: 'Let me read the file.', signature: 'EqQBCkYIBxgCKkB' };
    const history = session([
      { role: 'user', blocks: [text('go')] },
      { role: 'assistant', blocks: [thinking, text('reading'), use('t1')], origin: 'anthropic' },
      { role: 'user', blocks: [res('t1')], origin: 'anthropic' },
      { role: 'assistant', blocks: [thinking, text('Plain answer, no tools.')], origin: 'anthropic' },
      { role: 'user', blocks: [text('ok, checkpoint')], origin: 'anthropic' },
      { role: 'assistant', blocks: [use('cp', 'compress_to_checkpoint')], origin: 'anthropic' },
      { role: 'user', blocks: [res('cp', 1)], origin: 'anthropic' },
    ]);
    const out = await compactWatermark(input(history), params());
    expect(out.prefix.treatments[2]).toEqual({ kind: 'dropped', stage: 'watermark' });
    expect(out.prefix.treatments[3]).toEqual({ kind: 'dropped', stage: 'watermark' });
    expect(out.prefix.treatments[4]).toBeUndefined();
    const context = contextOf(history, out.prefix);
    expect(context.find((m) => m.seq === 4)).toBe(history[3]);
    expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
  });

  it('Guarantee 3: the system prompt and pinned messages (with their tool exchange) keep their tool blocks; the latest-N protection does not bound the watermark', async () => {
    const msgs = seedExample();
    msgs[4] = { ...msgs[4], pinned: true };
    const history = session(msgs);
    const out = await compactWatermark(input(history), params());
    // Seq 5 (pinned call) and seq 6 (its result) stay; seq 3/4 right before are still stripped.
    expect(out.prefix.treatments[5]).toBeUndefined();
    expect(out.prefix.treatments[6]).toBeUndefined();
    expect(out.prefix.treatments[3]).toMatchObject({ kind: 'compressed' });
    expect(contextOf(history, out.prefix)[0]).toBe(history[0]);
    expect(providerValidityProblems(contextOf(history, out.prefix).map((m) => m.message))).toEqual([]);
    // keepPinned: false strips them too.
    const loose = await compactWatermark(input(history), params({ keepPinned: false }));
    expect(loose.prefix.treatments[5]).toEqual({ kind: 'dropped', stage: 'watermark' });
  });

  it('a watermark set on a result message (POST /watermarks) never splits the tool pair before it', async () => {
    const history = session([
      { role: 'user', blocks: [text('go')] },
      { role: 'assistant', blocks: [text('reading'), use('r1')] },
      { role: 'user', blocks: [res('r1')] },
      { role: 'assistant', blocks: [use('p1'), use('p2')] },
      { role: 'tool', blocks: [res('p1')] },
      { role: 'tool', blocks: [res('p2')] },
      { role: 'user', blocks: [text('next')] },
    ]);
    const out = await compactWatermark(input(history, { ...EMPTY_PREFIX, watermarkSeq: 6 }), params());
    expect(out.prefix.watermarkSeq).toBe(6);
    expect(Object.keys(out.prefix.treatments).map(Number)).toEqual([2, 3]);
    expect(providerValidityProblems(contextOf(history, out.prefix).map((m) => m.message))).toEqual([]);
  });

  it('a call still waiting for its result is left alone, so the result that arrives later has its call', async () => {
    const msgs: CanonicalMessage[] = [
      { role: 'user', blocks: [text('go')] },
      { role: 'assistant', blocks: [text('reading'), use('r1')] },
      { role: 'user', blocks: [res('r1')] },
      { role: 'assistant', blocks: [text('long job'), use('slow')] },
      { role: 'user', blocks: [text('meanwhile: checkpoint here')] },
    ];
    const out = await compactWatermark(input(session(msgs), { ...EMPTY_PREFIX, watermarkSeq: 5 }), params());
    expect(Object.keys(out.prefix.treatments).map(Number)).toEqual([2, 3]);
    const later = session([...msgs, { role: 'user', blocks: [res('slow')] }]);
    const valid = makeProviderValid(contextOf(later, out.prefix).map((m) => m.message));
    expect(valid.dropped).toEqual([]);
    expect(providerValidityProblems(valid.messages)).toEqual([]);
  });

  it('removes Anthropic server tool blocks (server_tool_use with its web_search_tool_result) before the watermark', async () => {
    const history = session([
      { role: 'user', blocks: [text('search')] },
      {
        role: 'assistant',
        origin: 'anthropic',
        blocks: [
          text('Searching.'),
          { type: 'opaque', provider: 'anthropic', raw: { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'x' } } },
          { type: 'opaque', provider: 'anthropic', raw: { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [{ type: 'web_search_result', url: 'https://x', title: 'x'.repeat(400) }] } },
          text('Found it.'),
        ],
      },
      { role: 'user', blocks: [text('checkpoint please')], origin: 'anthropic' },
      { role: 'assistant', blocks: [use('cp', 'compress_to_checkpoint')], origin: 'anthropic' },
      { role: 'user', blocks: [res('cp', 1)], origin: 'anthropic' },
    ]);
    const out = await compactWatermark(input(history), params());
    expect(out.prefix.treatments[2]).toMatchObject({ kind: 'compressed', message: { blocks: [text('Searching.'), text('Found it.')] } });
  });

  it('Guarantee 5: a saving below the minimum (5% of the budget or 1,000 tokens) is skipped with the previous prefix', async () => {
    const history = session(seedExample());
    const out = await compactWatermark(input(history, EMPTY_PREFIX, 100_000), WATERMARK_DEFAULTS);
    expect(out).toMatchObject({ status: 'skipped', prefix: EMPTY_PREFIX });
    expect(out.reason).toMatch(/^saving-below-minimum \([\d,]+ < 5,000 tokens\)$/);
    expect(out.events.map((e) => e.type)).toEqual(['compression-skipped']);
  });

  it('advanceWatermark (POST /v1/sessions/:id/watermarks) only advances', () => {
    const p: VersionPrefix = { ...EMPTY_PREFIX, watermarkSeq: 10 };
    const up = advanceWatermark(p, 12);
    expect(up).toEqual({ prefix: { ...p, watermarkSeq: 12 }, advanced: true });
    expect(p.watermarkSeq).toBe(10);
    expect(advanceWatermark(p, 10)).toEqual({ prefix: p, advanced: false, reason: 'not-after-current' });
    expect(advanceWatermark(p, 3).prefix).toBe(p);
    expect(advanceWatermark(p, 2.5)).toEqual({ prefix: p, advanced: false, reason: 'invalid-seq' });
    expect(advanceWatermark(EMPTY_PREFIX, 1)).toEqual({ prefix: { ...EMPTY_PREFIX, watermarkSeq: 1 }, advanced: true });
  });

  it('on a real SWE-agent session (OpenAI shape), with find_file as the checkpoint tool: valid in both provider shapes', async () => {
    const raw = (JSON.parse(readFileSync(join(__dirname, '../../../../testdata/swe-agent-trajectories/marshmallow-1867__function_calling_replace_from_source.traj'), 'utf8')) as { history: unknown[] }).history;
    const parsed = parseOpenAIMessages(raw, 'history');
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const history = session(parsed.value);
    const out = await compactWatermark(input(history), params({ checkpointToolNames: ['find_file'] }));
    expect(out.status).toBe('succeeded');
    expect(out.prefix.watermarkSeq).toBe(17);
    const context = makeProviderValid(contextOf(history, out.prefix).map((m) => m.message)).messages;
    expect(providerValidityProblems(context)).toEqual([]);
    expect(context.filter((m) => m.role === 'tool')).toHaveLength(6);
    const anthropic = toAnthropic(context);
    expect((anthropic.messages[0] as { role: string }).role).toBe('user');
  });

  it('properties in both shapes: G2 valid, G5 never more tokens, G3 system/pinned/after-watermark untouched, G8 deterministic, watermark only advances', async () => {
    const arb = fc.record({
      openaiShape: fc.boolean(),
      steps: fc.array(
        fc.record({
          calls: fc.integer({ min: 0, max: 3 }),
          checkpoint: fc.integer({ min: 0, max: 5 }),
          thinking: fc.boolean(),
          talk: fc.boolean(),
          user: fc.boolean(),
          pinned: fc.integer({ min: 0, max: 6 }),
          lines: fc.integer({ min: 1, max: 40 }),
        }),
        { maxLength: 14 },
      ),
      prefixWatermark: fc.option(fc.integer({ min: 1, max: 60 }), { nil: undefined }),
      keepPinned: fc.boolean(),
    });
    const seen = { succeeded: 0, dropped: 0, compressed: 0, thinkingDropped: 0, pinnedKept: 0 };
    await fc.assert(
      fc.asyncProperty(arb, async ({ openaiShape, steps, prefixWatermark, keepPinned }) => {
        const msgs: CanonicalMessage[] = [{ role: 'system', blocks: [text('sys')] }, { role: 'user', blocks: [text('task')] }];
        let id = 0;
        steps.forEach((s, k) => {
          const ids = Array.from({ length: s.calls }, () => `call_${(id += 1)}`);
          const blocks: Block[] = [];
          if (s.thinking && !openaiShape) blocks.push({ type: 'thinking', thinking: `t${k}`, signature: 'sig' });
          if (s.talk || ids.length === 0) blocks.push(text(`step ${k}`));
          ids.forEach((c, x) => blocks.push(use(c, x === 0 && s.checkpoint === 0 ? 'compress_to_checkpoint' : 'bash')));
          msgs.push({ role: 'assistant', blocks, ...(s.pinned === 0 ? { pinned: true } : {}) });
          const results = ids.map((c) => res(c, s.lines));
          if (openaiShape) results.forEach((r) => msgs.push({ role: 'tool', blocks: [r] }));
          else if (results.length) msgs.push({ role: 'user', blocks: s.user ? [...results, text(`note ${k}`)] : results, ...(s.pinned === 1 ? { pinned: true } : {}) });
          if (s.user && (openaiShape || !results.length)) msgs.push({ role: 'user', blocks: [text(`note ${k}`)] });
        });
        const history = session(msgs);
        const prefix: VersionPrefix = prefixWatermark === undefined ? EMPTY_PREFIX : { ...EMPTY_PREFIX, watermarkSeq: prefixWatermark };
        const p = params({ keepPinned });
        const a = await compactWatermark(input(history, prefix), p);
        expect(await compactWatermark(input(history, prefix), p)).toEqual(a);
        expect(a.tokensAfter).toBeLessThanOrEqual(a.tokensBefore);
        const context = contextOf(history, a.prefix);
        expect(a.tokensAfter).toBe(context.reduce((n, m) => n + m.tokens, 0));
        expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
        // Both provider shapes take it (and a round trip through them keeps it valid).
        const viaOpenAI = parseOpenAIMessages(toOpenAI(context.map((m) => m.message)), 'm');
        expect(viaOpenAI.ok).toBe(true);
        if (viaOpenAI.ok) expect(providerValidityProblems(viaOpenAI.value)).toEqual([]);
        const anthropic = toAnthropic(context.map((m) => m.message));
        if (anthropic.messages.length) expect((anthropic.messages[0] as { role: string }).role).toBe('user');
        expect(a.artifacts).toEqual([]);
        if (a.status !== 'succeeded') {
          expect(a.prefix).toBe(prefix);
          return;
        }
        seen.succeeded += 1;
        const w = a.prefix.watermarkSeq!;
        expect(w).toBeGreaterThanOrEqual(prefix.watermarkSeq ?? 0);
        const call = findWatermarkCall(history, p.checkpointToolNames);
        expect(w).toBe(Math.max(call?.seq ?? 0, prefix.watermarkSeq ?? 0));
        for (const m of history) {
          const t = a.prefix.treatments[m.seq];
          if (m.seq >= w || m.message.role === 'system' || (keepPinned && m.message.pinned)) expect(t).toBeUndefined();
          if (keepPinned && m.message.pinned && m.seq < w && m.message.blocks.some((b) => b.type === 'tool_use' || b.type === 'tool_result')) seen.pinnedKept += 1;
          if (t) {
            seen[t.kind === 'compressed' ? 'compressed' : 'dropped'] += 1;
            if (t.kind === 'dropped' && m.message.blocks.some((b) => b.type === 'thinking')) seen.thinkingDropped += 1;
            expect(m.seq).toBeLessThan(w);
            if (t.kind === 'compressed') {
              expect(t.stage).toBe('watermark');
              expect(t.message.blocks.some((b) => b.type === 'tool_use' || b.type === 'tool_result' || b.type === 'thinking')).toBe(false);
              expect(t.message.blocks).toEqual(m.message.blocks.filter((b) => b.type !== 'tool_use' && b.type !== 'tool_result'));
            } else expect(t).toEqual({ kind: 'dropped', stage: 'watermark' });
          }
        }
        // Text before the watermark stays, unless its turn carried thinking and tools.
        for (const m of history.filter((x) => x.seq < w && x.message.role === 'user')) {
          const kept = context.find((x) => x.seq === m.seq);
          if (m.message.blocks.some((b) => b.type === 'text')) expect(kept?.message.blocks.filter((b) => b.type === 'text')).toEqual(m.message.blocks.filter((b) => b.type === 'text'));
        }
      }),
      { numRuns: 200, seed: 1001 },
    );
    // The generator reaches every case.
    for (const n of Object.values(seen)) expect(n).toBeGreaterThan(5);
  });
});
