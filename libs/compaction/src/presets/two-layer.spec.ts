import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { Block, CanonicalMessage, ToolResultBlock } from '../messages/canonical';
import { countableParts } from '../messages/countable';
import { parseOpenAIMessages } from '../messages/openai';
import { makeProviderValid, providerValidityProblems } from '../messages/provider-valid';
import { LlmError, SummarizeRequest, Summarizer } from '../llm/summarizer';
import { resolveParams } from '../policy/params';
import { presetTrigger } from '../policy/presets';
import { compactTwoLayer, compressLargeResult, TWO_LAYER, TWO_LAYER_DEFAULTS, TwoLayerParams } from './two-layer';
import { CompactionInput, CountMessage, SessionMessage } from '../engine/types';
import { applyPrefix, checkpointMessage, EMPTY_PREFIX, VersionPrefix } from '../engine/version';

// Results here run to hundreds of thousands of chars: a cheap, deterministic estimate (4 chars a token) keeps the spec fast.
const countText = (t: string) => Math.ceil(t.length / 4);
const count: CountMessage = (m) => 3 + countableParts(m).texts.reduce((n, t) => n + countText(t), 0);
const text = (t: string): Block => ({ type: 'text', text: t });

/**
 * A deterministic stand-in for the LLM: answers `ratio` × (target tokens × 4) chars of the
 * request's text, so with ratio 1 a result is compressed to ~10% (seed 002's target).
 * `fail` decides per call (1-based) whether it throws.
 */
class ShrinkingSummarizer implements Summarizer {
  readonly provider = 'test';
  readonly model = 'shrink';
  readonly deterministic = true;
  readonly contextWindow = 1_000_000;
  calls: SummarizeRequest[] = [];
  constructor(private readonly opts: { ratio?: number; fail?: (request: SummarizeRequest, n: number) => LlmError | undefined; answer?: (request: SummarizeRequest) => string } = {}) {}
  async summarize(request: SummarizeRequest) {
    this.calls.push(request);
    const error = this.opts.fail?.(request, this.calls.length);
    if (error) throw error;
    const body = request.messages.map((m) => m.blocks.map((b) => (b.type === 'text' ? b.text : '')).join('')).join('\n');
    const source = request.kind === 'tool-result' ? body.slice(body.indexOf('RESULT:\n') + 8) : body;
    const out = this.opts.answer ? this.opts.answer(request) : `${request.kind}: ${source.slice(0, Math.floor(request.targetTokens * 4 * (this.opts.ratio ?? 1)))}`;
    return { text: out, usage: { inputTokens: countText(body), outputTokens: countText(out), costUsd: 0.001 }, provider: 'test', model: 'shrink', attempts: 1 };
  }
}

/** `n` chars of varied text (so a prefix of it is recognizable). */
const blob = (label: string, n: number) => {
  let s = '';
  for (let i = 0; s.length < n; i += 1) s += `${label}#${i} value=${(i * 7919) % 10007}; `;
  return s.slice(0, n);
};

interface Step {
  thought: string;
  tool: string;
  result: string;
  isError?: boolean;
}

function trajectory(steps: Step[], opts: { openaiShape?: boolean } = {}): CanonicalMessage[] {
  const out: CanonicalMessage[] = [
    { role: 'system', blocks: [text('You are a ReAct agent. Think, act, observe.')] },
    { role: 'user', blocks: [text('Research the topic and report.')] },
  ];
  steps.forEach((s, k) => {
    out.push({ role: 'assistant', blocks: [text(s.thought), { type: 'tool_use', id: `t${k}`, name: s.tool, input: { step: k } }] });
    const r: ToolResultBlock = { type: 'tool_result', toolUseId: `t${k}`, content: s.result, isError: s.isError ?? false };
    out.push({ role: opts.openaiShape ? 'tool' : 'user', blocks: [r] });
  });
  out.push({ role: 'assistant', blocks: [text('Done.')] });
  return out;
}

const toSession = (messages: CanonicalMessage[]): SessionMessage[] => messages.map((message, i) => ({ seq: i + 1, message, tokens: count(message) }));
const input = (history: SessionMessage[], budget: number, summarizer: Summarizer, prefix: VersionPrefix = EMPTY_PREFIX): CompactionInput => ({ history, prefix, budget, summarizer, countMessage: count, countText });
const contextOf = (history: SessionMessage[], prefix: VersionPrefix) => applyPrefix(prefix, history, (c) => count(checkpointMessage(c)));
const tokensOf = (xs: SessionMessage[]) => xs.reduce((n, m) => n + m.tokens, 0);
const resultOf = (m: SessionMessage) => (m.message.blocks.find((b) => b.type === 'tool_result') as ToolResultBlock).content as string;
const P = (over: Partial<TwoLayerParams> = {}): TwoLayerParams => ({ ...TWO_LAYER_DEFAULTS, ...over });

describe('two-layer preset (seed 002 "Context Compression Mechanism")', () => {
  it('seed 002 "Compression Threshold Parameters": the defaults are the seed\'s, each can be overridden per session, and layer 2 triggers at 80% of the budget', () => {
    expect(TWO_LAYER).toMatchObject({ name: 'two-layer', source: 'seed 002', defaults: TWO_LAYER_DEFAULTS, run: compactTwoLayer });
    expect(TWO_LAYER.ingest).toBeUndefined();
    expect(TWO_LAYER_DEFAULTS).toMatchObject({
      singleResultThreshold: 50_000,
      chunkSize: 50_000,
      compressionRatio: 0.1,
      globalCompressionThreshold: 0.8,
      resultCompressionMinSize: 5_000,
      fallbackChars: 1_000,
      compressionEnabled: true,
      contextLimit: 0,
      triggerFraction: 0.8,
    });
    expect(presetTrigger({ preset: 'two-layer', overrides: {} })).toEqual({ fraction: 0.8, base: 'budget' });
    const p = resolveParams(TWO_LAYER_DEFAULTS, { source: 'policy.overrides', values: { contextLimit: 128_000, compressionEnabled: false, resultCompressionMinSize: 8_000 } });
    expect(p).toMatchObject({ contextLimit: 128_000, compressionEnabled: false, resultCompressionMinSize: 8_000, chunkSize: 50_000 });
  });

  describe('layer 1: compressLargeResult', () => {
    it('seed 002 layer 1: a 150K result is split into 3 chunks of 50K, each summarized to ~10%, and combined (no second level needed)', async () => {
      const summarizer = new ShrinkingSummarizer();
      const original = blob('big', 150_000);
      const r = await compressLargeResult(original, summarizer, TWO_LAYER_DEFAULTS, countText);
      expect(summarizer.calls.map((c) => c.kind)).toEqual(['chunk', 'chunk', 'chunk']);
      expect(summarizer.calls.map((c) => c.targetTokens)).toEqual([1_250, 1_250, 1_250]);
      expect(summarizer.calls.map((c) => (c.messages[0].blocks[0] as { text: string }).text)).toEqual([original.slice(0, 50_000), original.slice(50_000, 100_000), original.slice(100_000)]);
      expect(r).toMatchObject({ method: 'summarized', chunks: 3, merged: false, llmCalls: 3 });
      expect(r?.text.length).toBeLessThan(16_000);
      expect(r?.text).toContain(original.slice(0, 200));
      expect(r?.text).toContain(original.slice(100_000, 100_200));
      expect(r?.usage.costUsd).toBeCloseTo(0.003);
      expect(r?.events).toEqual([
        { type: 'compressed', line: `Tool result too large (150,000 chars), applying streaming compression: 3 chunks; compressed 150,000 → ${r?.text.length.toLocaleString('en-US')} chars (${((100 * (r?.text.length ?? 0)) / 150_000).toFixed(1)}%)` },
      ]);
    });

    it('seed 002 layer 1 boundary: a result of exactly 50,000 chars is not compressed; 50,001 chars gives a chunk of 50,000 and one of 1', async () => {
      const summarizer = new ShrinkingSummarizer();
      expect(await compressLargeResult(blob('x', 50_000), summarizer, TWO_LAYER_DEFAULTS, countText)).toBeUndefined();
      expect(summarizer.calls).toHaveLength(0);
      const r = await compressLargeResult(blob('x', 50_001), summarizer, TWO_LAYER_DEFAULTS, countText);
      expect(r?.chunks).toBe(2);
      expect(summarizer.calls.map((c) => (c.messages[0].blocks[0] as { text: string }).text.length)).toEqual([50_000, 1]);
    });

    it('seed 002 "If compression is ineffective": a 300K result whose 6 chunk summaries combine to over 50K is compressed again (second level, ~10%)', async () => {
      // Each 50K chunk comes back as 12.5K: 6 × 12.5K = 75K > 50K.
      const summarizer = new ShrinkingSummarizer({ ratio: 2.5 });
      const r = await compressLargeResult(blob('huge', 300_000), summarizer, TWO_LAYER_DEFAULTS, countText);
      expect(summarizer.calls.map((c) => c.kind)).toEqual(['chunk', 'chunk', 'chunk', 'chunk', 'chunk', 'chunk', 'merge']);
      const combined = (summarizer.calls[6].messages[0].blocks[0] as { text: string }).text;
      expect(combined.length).toBeGreaterThan(50_000);
      expect(summarizer.calls[6].targetTokens).toBe(Math.ceil(countText(combined) * 0.1));
      expect(r).toMatchObject({ method: 'summarized', chunks: 6, merged: true });
      expect(r?.text.length).toBeLessThan(20_000);
      expect(r?.events[0].line).toMatch(/^Tool result too large \(300,000 chars\), applying streaming compression: 6 chunks, second-level compression; compressed 300,000 → [\d,]+ chars \(\d+\.\d%\)$/);
    });

    it('seed 002 boundary: a combined summary of exactly 50,000 chars is not compressed again', async () => {
      const summarizer = new ShrinkingSummarizer({ answer: (r) => (r.kind === 'chunk' ? 'c'.repeat(24_999) : 'merged') });
      const r = await compressLargeResult(blob('x', 100_000), summarizer, TWO_LAYER_DEFAULTS, countText);
      // Two pieces of 24,999 chars joined by a blank line: 50,000 chars.
      expect(r?.text.length).toBe(50_000);
      expect(r?.merged).toBe(false);
      const over = new ShrinkingSummarizer({ answer: (q) => (q.kind === 'chunk' ? 'c'.repeat(25_000) : 'merged') });
      expect((await compressLargeResult(blob('x', 100_000), over, TWO_LAYER_DEFAULTS, countText))?.text).toBe('merged');
    });

    it('seed 002 "Error Handling" layer 1: when an LLM call fails, simple truncation keeps the first 1,000 chars', async () => {
      const original = blob('doc', 120_000);
      for (const failAt of [1, 2, 4]) {
        // Call 4 is the second-level compression (ratio 5 makes 3 × 25K = 75K > 50K).
        const summarizer = new ShrinkingSummarizer({ ratio: 5, fail: (_r, n) => (n === failAt ? new LlmError('server', 'upstream 500', 2, 500) : undefined) });
        const r = await compressLargeResult(original, summarizer, TWO_LAYER_DEFAULTS, countText);
        expect(r?.method).toBe('truncated');
        expect(r?.text).toBe(`${original.slice(0, 1_000)}\n[truncated: the first 1,000 of 120,000 chars kept; compression failed]`);
        expect(r?.error?.kind).toBe('server');
        expect(r?.llmCalls).toBe(failAt - 1 + 2);
        expect(r?.events).toEqual([{ type: 'compression-error', line: 'Tool result too large (120,000 chars), applying streaming compression: 3 chunks; summarizer failed (server), kept the first 1,000 chars' }]);
      }
      const empty = await compressLargeResult(original, new ShrinkingSummarizer({ answer: () => '' }), TWO_LAYER_DEFAULTS, countText);
      expect(empty?.method).toBe('truncated');
    });

    it('an aborted call is not a failure to fall back from: the cancellation propagates', async () => {
      const summarizer = new ShrinkingSummarizer({ fail: () => new LlmError('aborted', 'job cancelled', 1) });
      await expect(compressLargeResult(blob('x', 60_000), summarizer, TWO_LAYER_DEFAULTS, countText)).rejects.toMatchObject({ kind: 'aborted' });
    });
  });

  describe('run', () => {
    const steps = (sizes: number[]): Step[] => sizes.map((n, k) => ({ thought: `Thought ${k}: I need source ${k}.`, tool: k % 2 ? 'search' : 'fetch_page', result: blob(`r${k}`, n) }));

    it('seed 002 layer 1 in the run: a result over 50K not yet treated is compressed (kind compressed, stage two-layer); under 80% layer 2 does not run', async () => {
      const history = toSession(trajectory(steps([120_000, 3_000, 7_000])));
      const summarizer = new ShrinkingSummarizer();
      const out = await compactTwoLayer(input(history, 200_000, summarizer));
      expect(out.status).toBe('succeeded');
      expect(out.steps).toEqual(['layer1']);
      expect(summarizer.calls.map((c) => c.kind)).toEqual(['chunk', 'chunk', 'chunk']);
      expect(Object.keys(out.prefix.treatments)).toEqual(['4']);
      const t = out.prefix.treatments[4];
      expect(t).toMatchObject({ kind: 'compressed', stage: 'two-layer' });
      const block = (t as { message: CanonicalMessage }).message.blocks[0] as ToolResultBlock;
      expect(block).toMatchObject({ type: 'tool_result', toolUseId: 't0', isError: false });
      expect((block.content as string).length).toBeLessThan(13_000);
      expect(out.prefix.coversThroughSeq).toBe(4);
      expect(out.stats).toEqual({
        total_size: out.tokensAfter,
        total_size_before: out.tokensBefore,
        model_limit: 200_000,
        usage_percent: Number(((100 * out.tokensAfter) / 200_000).toFixed(1)),
        turns_count: 3,
        compression_threshold: 160_000,
        needs_compression: false,
        results_compressed: 1,
        layer2_triggered: false,
        size_unit: 'tokens',
      });
      // Run again over the new prefix: the treated result is under the threshold now, nothing left to do.
      const again = await compactTwoLayer(input(history, 200_000, new ShrinkingSummarizer(), out.prefix));
      expect(again).toMatchObject({ status: 'skipped', reason: 'below-threshold', prefix: out.prefix });
    });

    it('seed 002 layer 2: over 80% of the budget every result over 5,000 chars is compressed to ~10% with its thought and action as context; 5,000 exactly is left alone', async () => {
      const history = toSession(trajectory(steps([20_000, 5_000, 5_001, 4_000, 30_000])));
      const budget = Math.floor(tokensOf(history) / 0.85);
      const summarizer = new ShrinkingSummarizer();
      const out = await compactTwoLayer(input(history, budget, summarizer));
      expect(out.status).toBe('succeeded');
      expect(out.steps).toEqual(['layer2']);
      expect(summarizer.calls.every((c) => c.kind === 'tool-result')).toBe(true);
      expect(summarizer.calls).toHaveLength(3);
      const first = (summarizer.calls[0].messages[0].blocks[0] as { text: string }).text;
      expect(first.startsWith('THOUGHT:\nThought 0: I need source 0.\n\nACTION:\nfetch_page {"step":0}\n\nRESULT:\nr0#0')).toBe(true);
      expect(summarizer.calls[0].targetTokens).toBe(Math.ceil(countText(blob('r0', 20_000)) * 0.1));
      expect(Object.keys(out.prefix.treatments).map(Number)).toEqual([4, 8, 12]);
      const context = contextOf(history, out.prefix);
      // No turn is deleted; thought and action are never modified; only the results changed.
      expect(context).toHaveLength(history.length);
      context.forEach((m, i) => {
        expect(m.seq).toBe(history[i].seq);
        if (m.message.role !== 'user' || !m.message.blocks.some((b) => b.type === 'tool_result')) expect(m).toBe(history[i]);
      });
      expect(resultOf(context[5])).toBe(blob('r1', 5_000));
      expect(resultOf(context[7]).length).toBeLessThan(600);
      expect(resultOf(context[9])).toBe(blob('r3', 4_000));
      expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
      const lines = out.events.map((e) => e.line);
      expect(out.events[0]).toEqual({ type: 'warning', line: `Context size ${out.tokensBefore.toLocaleString('en-US')} tokens exceeds threshold ${Math.floor(budget * 0.8).toLocaleString('en-US')}, triggering global compression...` });
      expect(lines).toContain(`Turn 1: Compressed result 20,000 → ${resultOf(context[3]).length.toLocaleString('en-US')} chars`);
      expect(lines).toContain(`Turn 3: Compressed result 5,001 → ${resultOf(context[7]).length.toLocaleString('en-US')} chars`);
      expect(lines.some((l) => /^Global compression complete: 3 results compressed, total size [\d,]+ → [\d,]+ tokens \(\d+\.\d%\)$/.test(l))).toBe(true);
      expect(out.stats).toMatchObject({ layer2_triggered: true, results_compressed: 3, needs_compression: false, turns_count: 5 });
    });

    it('seed 002 layer 2 boundary: at exactly the threshold nothing happens; one token over triggers it ("exceeds threshold")', async () => {
      const history = toSession(trajectory(steps([20_000, 9_000])));
      const total = tokensOf(history);
      const at = await compactTwoLayer(input(history, 1_000_000, new ShrinkingSummarizer()), P({ contextLimit: total, globalCompressionThreshold: 1, minSavingTokens: 0 }));
      expect(at).toMatchObject({ status: 'skipped', reason: 'below-threshold' });
      expect(at.stats).toMatchObject({ total_size: total, compression_threshold: total, needs_compression: false, usage_percent: 100 });
      const over = await compactTwoLayer(input(history, 1_000_000, new ShrinkingSummarizer()), P({ contextLimit: total - 1, globalCompressionThreshold: 1, minSavingTokens: 0, minSavingFraction: 0 }));
      expect(over.status).toBe('succeeded');
      expect(over.steps).toEqual(['layer2']);
    });

    it('seed 002 "--context-limit": the limit can be set apart from the budget; 0 uses the budget', async () => {
      const history = toSession(trajectory(steps([20_000, 9_000])));
      const out = await compactTwoLayer(input(history, 1_000_000, new ShrinkingSummarizer()), P({ contextLimit: 8_000, minSavingTokens: 0, minSavingFraction: 0 }));
      expect(out.stats).toMatchObject({ model_limit: 8_000, compression_threshold: 6_400, layer2_triggered: true });
      const none = await compactTwoLayer(input(history, 1_000_000, new ShrinkingSummarizer()), P({ minSavingTokens: 0, minSavingFraction: 0 }));
      expect(none.stats).toMatchObject({ model_limit: 1_000_000, compression_threshold: 800_000, needs_compression: false });
    });

    it('seed 002 "Can I enable only Layer 1": global threshold 1.0 disables layer 2 under the limit, a huge single-result threshold disables layer 1', async () => {
      const history = toSession(trajectory(steps([80_000, 9_000])));
      const budget = Math.floor(tokensOf(history) / 0.9);
      const only1 = await compactTwoLayer(input(history, budget, new ShrinkingSummarizer()), P({ globalCompressionThreshold: 1 }));
      expect(only1.steps).toEqual(['layer1']);
      const only2 = await compactTwoLayer(input(history, budget, new ShrinkingSummarizer()), P({ singleResultThreshold: Number.MAX_SAFE_INTEGER }));
      expect(only2.steps).toEqual(['layer2']);
    });

    it('seed 002 "--disable-compression": compression disabled is skipped without an LLM call, stats still reported', async () => {
      const history = toSession(trajectory(steps([80_000])));
      const summarizer = new ShrinkingSummarizer();
      const out = await compactTwoLayer(input(history, 10_000, summarizer), P({ compressionEnabled: false }));
      expect(out).toMatchObject({ status: 'skipped', reason: 'compression-disabled', prefix: EMPTY_PREFIX, llmCalls: 0 });
      expect(out.stats).toMatchObject({ needs_compression: true, total_size: tokensOf(history) });
      expect(summarizer.calls).toHaveLength(0);
    });

    it('seed 002 "Error Handling" layer 2: a failed call keeps that turn\'s original result and the others are still compressed', async () => {
      const history = toSession(trajectory(steps([20_000, 9_000, 30_000])));
      const budget = Math.floor(tokensOf(history) / 0.9);
      const summarizer = new ShrinkingSummarizer({ fail: (_r, n) => (n === 2 ? new LlmError('rate-limited', '429', 3, 429) : undefined) });
      const out = await compactTwoLayer(input(history, budget, summarizer), P({ minSavingTokens: 0, minSavingFraction: 0 }));
      expect(out.status).toBe('succeeded');
      expect(Object.keys(out.prefix.treatments).map(Number)).toEqual([4, 8]);
      expect(resultOf(contextOf(history, out.prefix)[5])).toBe(blob('r1', 9_000));
      expect(out.events).toContainEqual({ type: 'compression-error', line: 'Turn 2: compression failed (rate-limited); the original result is kept' });
      expect(out.llmCalls).toBe(1 + 3 + 1);
    });

    it('seed 002 "Error Handling": when every call fails and nothing changed, the run is failed with the previous context', async () => {
      const history = toSession(trajectory(steps([20_000, 9_000])));
      const out = await compactTwoLayer(input(history, 5_000, new ShrinkingSummarizer({ fail: () => new LlmError('server', '500', 1, 500) })));
      expect(out).toMatchObject({ status: 'failed', reason: 'llm-server', prefix: EMPTY_PREFIX });
      expect(out.tokensAfter).toBe(out.tokensBefore);
      expect(out.events.filter((e) => e.type === 'compression-error')).toHaveLength(2);
    });

    it('seed 002 "Error Handling" in the run: layer 1 falls back to the first 1,000 chars and the run still succeeds', async () => {
      const history = toSession(trajectory(steps([90_000])));
      const out = await compactTwoLayer(input(history, 200_000, new ShrinkingSummarizer({ fail: () => new LlmError('timeout', 'slow', 3) })));
      expect(out.status).toBe('succeeded');
      expect(resultOf(contextOf(history, out.prefix)[3]).startsWith(blob('r0', 1_000))).toBe(true);
      expect(out.events[0].type).toBe('compression-error');
    });

    it('an aborted run (job cancelled) is failed with the previous prefix', async () => {
      const history = toSession(trajectory(steps([90_000])));
      const out = await compactTwoLayer(input(history, 200_000, new ShrinkingSummarizer({ fail: () => new LlmError('aborted', 'cancelled', 1) })));
      expect(out).toMatchObject({ status: 'failed', reason: 'llm-aborted', prefix: EMPTY_PREFIX });
    });

    it('Guarantee 5: a summary longer than its result is not used, and a saving below the minimum is skipped with the previous prefix', async () => {
      const history = toSession(trajectory(steps([6_000, 6_000])));
      const verbose = new ShrinkingSummarizer({ answer: (r) => (r.messages[0].blocks[0] as { text: string }).text });
      const out = await compactTwoLayer(input(history, 1_000, verbose), P({ minSavingTokens: 0, minSavingFraction: 0 }));
      expect(out).toMatchObject({ status: 'skipped', reason: 'no-saving', prefix: EMPTY_PREFIX });
      const small = await compactTwoLayer(input(history, 1_000, new ShrinkingSummarizer()), P({ minSavingTokens: 5_000 }));
      expect(small.status).toBe('skipped');
      expect(small.reason).toMatch(/^saving-below-minimum \([\d,]+ < 5,000 tokens\)$/);
      expect(small.prefix).toBe(EMPTY_PREFIX);
    });

    it('Guarantee 5 per result: a compressed result with fewer chars but more tokens is not used, the others are', async () => {
      // A counter where non-ASCII text costs 3 tokens a char: 600 such chars outweigh 6,000 ASCII ones.
      const heavyText = (t: string) => Math.ceil(t.replace(/[^ -~\s]/g, '').length / 4) + 3 * t.replace(/[ -~\s]/g, '').length;
      const heavy: CountMessage = (m) => 3 + countableParts(m).texts.reduce((n, t) => n + heavyText(t), 0);
      const history = trajectory(steps([6_000, 6_000])).map((message, i) => ({ seq: i + 1, message, tokens: heavy(message) }));
      const summarizer = new ShrinkingSummarizer({ answer: (r) => ((r.messages[0].blocks[0] as { text: string }).text.includes('ACTION:\nsearch') ? '語'.repeat(600) : 'short summary') });
      const out = await compactTwoLayer({ history, prefix: EMPTY_PREFIX, budget: 1_000, summarizer, countMessage: heavy, countText: heavyText }, P({ minSavingTokens: 0, minSavingFraction: 0 }));
      expect(out.status).toBe('succeeded');
      expect(Object.keys(out.prefix.treatments)).toEqual(['4']);
      expect(out.events.filter((e) => e.line.startsWith('Turn '))).toHaveLength(1);
    });

    it('Guarantee 3: results in pinned messages and of exempt tools are never compressed; system prompts never', async () => {
      const msgs = trajectory(steps([20_000, 20_000, 20_000, 20_000]));
      msgs[5] = { ...msgs[5], pinned: true };
      msgs[0] = { role: 'system', blocks: [text(blob('system', 8_000))] };
      const history = toSession(msgs);
      const summarizer = new ShrinkingSummarizer();
      const out = await compactTwoLayer(input(history, 10_000, summarizer), P({ protection: { ...TWO_LAYER_DEFAULTS.protection, exemptToolNames: ['fetch_page'] } }));
      expect(out.status).toBe('succeeded');
      // t0 and t2 are fetch_page (exempt), t1's result message (seq 6) is pinned: only t3's result (seq 10) is compressed.
      expect(Object.keys(out.prefix.treatments)).toEqual(['10']);
      expect(summarizer.calls).toHaveLength(1);
      const context = contextOf(history, out.prefix);
      for (const i of [0, 3, 5, 7]) expect(context[i]).toBe(history[i]);
    });

    it('a real SWE-agent trajectory over 80%: its 9K-char result is compressed, the context stays provider-valid and keeps every turn', async () => {
      const raw = JSON.parse(readFileSync(join(__dirname, '../../../../testdata/swe-agent-trajectories/marshmallow-1867__function_calling.traj'), 'utf8')) as { history: unknown[] };
      const parsed = parseOpenAIMessages(raw.history, 'history');
      if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
      const history = toSession(makeProviderValid(parsed.value).messages);
      const summarizer = new ShrinkingSummarizer();
      const out = await compactTwoLayer(input(history, Math.floor(tokensOf(history) / 0.85), summarizer), P({ minSavingTokens: 500, minSavingFraction: 0 }));
      expect(out.status).toBe('succeeded');
      expect(summarizer.calls.length).toBeGreaterThanOrEqual(1);
      const context = contextOf(history, out.prefix);
      expect(context.map((m) => m.seq)).toEqual(history.map((m) => m.seq));
      expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
      expect(out.tokensAfter).toBeLessThan(out.tokensBefore);
    });
  });

  it('properties over generated trajectories: G2 valid after applyPrefix, G5 never more tokens (skip below minimum), G3 protected messages unchanged, G8 deterministic, no turn deleted', async () => {
    // Thresholds scaled down 25× so the generated results cross them cheaply.
    const params = P({ singleResultThreshold: 2_000, chunkSize: 2_000, resultCompressionMinSize: 200, fallbackChars: 40, minSavingTokens: 50 });
    const tally = { succeeded: 0, layer1: 0, layer2: 0, skipped: 0 };
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          openaiShape: fc.boolean(),
          steps: fc.array(fc.record({ size: fc.integer({ min: 0, max: 7_000 }), isError: fc.boolean(), pinned: fc.boolean(), tool: fc.constantFrom('search', 'fetch', 'memory') }), { maxLength: 12 }),
          fill: fc.double({ min: 0.4, max: 1.6, noNaN: true }),
          failEvery: fc.integer({ min: 0, max: 4 }),
          exempt: fc.boolean(),
        }),
        async ({ openaiShape, steps: gen, fill, failEvery, exempt }) => {
          const msgs = trajectory(
            gen.map((s, k) => ({ thought: `Thought ${k}.`, tool: s.tool, result: blob(`g${k}`, s.size), isError: s.isError })),
            { openaiShape },
          );
          gen.forEach((s, k) => {
            if (s.pinned) msgs[3 + 2 * k] = { ...msgs[3 + 2 * k], pinned: true };
          });
          const history = toSession(msgs);
          const budget = Math.max(200, Math.ceil(tokensOf(history) / fill));
          const p = exempt ? { ...params, protection: { ...params.protection, exemptToolNames: ['memory'] } } : params;
          const make = () => new ShrinkingSummarizer({ fail: (_r, n) => (failEvery > 0 && n % failEvery === 0 ? new LlmError('server', '500', 1, 500) : undefined) });
          const a = await compactTwoLayer(input(history, budget, make()), p);
          const b = await compactTwoLayer(input(history, budget, make()), p);
          expect(b).toEqual(a);
          expect(a.tokensAfter).toBeLessThanOrEqual(a.tokensBefore);
          const minSaving = Math.max(Math.floor(0.05 * budget), 50);
          if (a.status === 'succeeded') expect(a.tokensBefore - a.tokensAfter).toBeGreaterThanOrEqual(minSaving);
          else expect(a.prefix).toBe(EMPTY_PREFIX);
          const context = contextOf(history, a.prefix);
          expect(tokensOf(context)).toBe(a.tokensAfter);
          expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
          // No turn deleted; only tool results changed; protected messages and exempt tools unchanged.
          expect(context.map((m) => m.seq)).toEqual(history.map((m) => m.seq));
          context.forEach((m, i) => {
            const h = history[i];
            if (h.message.role !== 'tool' && !(h.message.role === 'user' && h.message.blocks.some((x) => x.type === 'tool_result'))) expect(m).toBe(h);
            if (h.message.pinned || h.message.role === 'system') expect(m).toBe(h);
            const orig = h.message.blocks[0];
            if (exempt && orig.type === 'tool_result' && gen[Number(orig.toolUseId.slice(1))].tool === 'memory') expect(m).toBe(h);
            const got = m.message.blocks[0];
            if (orig.type === 'tool_result' && got.type === 'tool_result') expect([got.toolUseId, got.isError]).toEqual([orig.toolUseId, orig.isError]);
          });
          for (const t of Object.values(a.prefix.treatments)) expect(t).toMatchObject({ kind: 'compressed', stage: 'two-layer' });
          if (a.status === 'succeeded') tally.succeeded += 1;
          else tally.skipped += 1;
          if (a.status === 'succeeded' && a.steps.includes('layer1')) tally.layer1 += 1;
          if (a.status === 'succeeded' && a.steps.includes('layer2')) tally.layer2 += 1;
        },
      ),
      { numRuns: 80, seed: 2002 },
    );
    expect(tally.succeeded).toBeGreaterThan(10);
    expect(tally.layer1).toBeGreaterThan(3);
    expect(tally.layer2).toBeGreaterThan(3);
    expect(tally.skipped).toBeGreaterThan(3);
  });
});
