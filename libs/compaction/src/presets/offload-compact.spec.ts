import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { ValidationFailed } from '../errors';
import { LlmError, renderTranscript, SummarizeRequest, Summarizer } from '../llm/summarizer';
import { Block, CanonicalMessage, ToolResultBlock } from '../messages/canonical';
import { countableParts } from '../messages/countable';
import { parseOpenAIMessages } from '../messages/openai';
import { makeProviderValid, providerValidityProblems } from '../messages/provider-valid';
import { resolveParams } from '../policy/params';
import { artifactContent, referencedArtifactIds } from '../engine/offload';
import {
  compactOffloadCompact,
  OFFLOAD_COMPACT,
  OFFLOAD_COMPACT_DEFAULTS,
  OFFLOAD_COMPACT_ENV,
  OFFLOAD_COMPACT_INSTRUCTIONS,
  offloadCompactEnvLayer,
  OffloadCompactParams,
} from './offload-compact';
import { CompactionInput, CountMessage, SessionMessage } from '../engine/types';
import { applyPrefix, checkpointMessage, contentId, EMPTY_PREFIX, VersionPrefix } from '../engine/version';

const count: CountMessage = (m) => 3 + Math.ceil(countableParts(m).texts.reduce((n, t) => n + t.length, 0) / 4);
const countText = (t: string) => Math.ceil(t.length / 4);
const text = (t: string): Block => ({ type: 'text', text: t });
const session = (messages: CanonicalMessage[], from = 1): SessionMessage[] => messages.map((message, i) => ({ seq: from + i, message, tokens: count(message) }));
const tokensOf = (xs: SessionMessage[]) => xs.reduce((n, m) => n + m.tokens, 0);
const contextOf = (history: SessionMessage[], prefix: VersionPrefix) => applyPrefix(prefix, history, (c) => count(checkpointMessage(c)));

const SECTIONS = ['Technical Context', 'Project Overview', 'Code Changes', 'Debugging & Issues', 'Current Status', 'Pending Tasks', 'User Preferences', 'Key Decisions'];

/** Deterministic stand-in for the LLM: the eight sections, each with a few words of the transcript. */
class SectionSummarizer implements Summarizer {
  readonly provider = 'test';
  readonly model = 'sections';
  readonly deterministic = true;
  calls: SummarizeRequest[] = [];
  constructor(
    private readonly opts: { failWith?: LlmError; wordsPerSection?: number; contextWindow?: number } = {},
  ) {}
  get contextWindow() {
    return this.opts.contextWindow ?? 1_000_000;
  }
  async summarize(request: SummarizeRequest) {
    this.calls.push(request);
    if (this.opts.failWith) throw this.opts.failWith;
    const words = renderTranscript(request.messages).split(/\s+/);
    const n = this.opts.wordsPerSection ?? 8;
    const body = SECTIONS.map((s, i) => `## ${s}\n${words.slice(i * n, (i + 1) * n).join(' ')}`).join('\n\n');
    return { text: body, usage: { inputTokens: words.length, outputTokens: countText(body), costUsd: 0 }, provider: 'test', model: 'sections', attempts: 1 };
  }
}

const file = (label: string, lines: number) => Array.from({ length: lines }, (_, i) => `${label}:${i}: const value_${i} = compute(${i}, "${label}");`).join('\n');

/** An agent session: `talk` words of reasoning per step; results of `big` lines every `bigEvery` steps, else `small` lines. */
function agentSession(steps: number, o: { talk?: number; big?: number; small?: number; bigEvery?: number; openaiShape?: boolean; pinEvery?: number } = {}): CanonicalMessage[] {
  const out: CanonicalMessage[] = [
    { role: 'system', blocks: [text('You are a coding agent. Work in /repo.')] },
    { role: 'user', blocks: [text('Fix the failing test in src/app.ts. Use tabs, never spaces.')] },
  ];
  for (let k = 0; k < steps; k += 1) {
    const thought = Array.from({ length: o.talk ?? 10 }, (_, i) => `idea_${k}_${i}`).join(' ');
    const id = `call_${k}`;
    const pinned = o.pinEvery !== undefined && k % o.pinEvery === 1;
    out.push({ role: 'assistant', blocks: [text(`Step ${k}: ${thought}`), { type: 'tool_use', id, name: k % 2 ? 'bash' : 'read_file', input: { k } }], ...(pinned ? { pinned: true } : {}) });
    const lines = k % (o.bigEvery ?? 1) === 0 ? (o.big ?? 200) : (o.small ?? 3);
    const result: Block = { type: 'tool_result', toolUseId: id, content: file(`src/f${k}.ts`, lines), isError: false };
    out.push(o.openaiShape ? { role: 'tool', blocks: [result] } : { role: 'user', blocks: [result] });
  }
  out.push({ role: 'assistant', blocks: [text('Now I know where the bug is.')] });
  return out;
}

const input = (history: SessionMessage[], budget: number, summarizer: Summarizer, prefix: VersionPrefix = EMPTY_PREFIX, trigger: CompactionInput['trigger'] = 'threshold'): CompactionInput => ({
  history,
  prefix,
  budget,
  summarizer,
  countMessage: count,
  countText,
  trigger,
});

/** Offloading frees little (few big results, a lot of talk) and the context stays over 80%. */
const talkative = (bigEvery = 6) => session(agentSession(30, { talk: 300, big: 60, small: 3, bigEvery }));

describe('offload-compact preset (seed 003; SPEC.md Policies)', () => {
  it('seed 003: history of 5 messages or fewer is skipped with reason history-too-short, 0 tokens freed', async () => {
    for (const n of [0, 1, 5]) {
      const msgs = agentSession(10, { big: 400 }).slice(0, n + 1); // + the system prompt
      const history = session(msgs);
      const summarizer = new SectionSummarizer();
      const out = await compactOffloadCompact(input(history, 100, summarizer, EMPTY_PREFIX, n === 5 ? 'manual' : 'threshold'));
      expect(out).toMatchObject({ status: 'skipped', reason: 'history-too-short', prefix: EMPTY_PREFIX, artifacts: [] });
      expect(out.tokensAfter).toBe(out.tokensBefore);
      expect(out.stats?.freedTokens).toBe(0);
      expect(summarizer.calls).toHaveLength(0);
    }
    // 6 messages are compacted.
    const six = session(agentSession(10, { big: 400 }).slice(0, 7));
    expect((await compactOffloadCompact(input(six, 100, new SectionSummarizer()))).reason).not.toBe('history-too-short');
  });

  it('seed 003: nothing to do below 80% of the budget', async () => {
    const history = session(agentSession(20));
    const out = await compactOffloadCompact(input(history, Math.ceil(tokensOf(history) / 0.79), new SectionSummarizer()));
    expect(out).toMatchObject({ status: 'skipped', prefix: EMPTY_PREFIX });
    expect(out.reason).toMatch(/^below-threshold/);
  });

  it('seed 003: offloads first; when that frees 15,000 tokens or more there is no compaction', async () => {
    const history = session(agentSession(30, { big: 200 }));
    const summarizer = new SectionSummarizer();
    const out = await compactOffloadCompact(input(history, Math.ceil(tokensOf(history) / 0.9), summarizer));
    expect(out.status).toBe('succeeded');
    expect(out.steps).toEqual(['offload']);
    expect(summarizer.calls).toHaveLength(0);
    expect(out.tokensBefore - out.tokensAfter).toBeGreaterThanOrEqual(15_000);
    const ids = referencedArtifactIds(out.prefix.treatments);
    expect(out.artifacts.map((a) => a.id).sort()).toEqual([...ids].sort());
    // The latest 5 messages are not offloaded.
    const context = contextOf(history, out.prefix);
    for (const m of history.slice(-5)) expect(context).toContainEqual(m);
    expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
    expect(out.events.map((e) => e.type)).toEqual(['offloaded', 'compressed']);
    expect(out.events[0].line).toMatch(/^Offloaded 28 tool results to artifacts \(freed ~[\d,]+ tokens\)$/);
  });

  it('seed 003: offloading that frees less than 15,000 tokens while still over 80% leads to compaction with the eight-section prompt targeting 8,000 tokens; the summarizer sees the original content', async () => {
    const history = talkative();
    const summarizer = new SectionSummarizer();
    const out = await compactOffloadCompact(input(history, Math.ceil(tokensOf(history) / 1.2), summarizer));
    expect(out.status).toBe('succeeded');
    expect(out.steps).toEqual(['offload', 'restore', 'compact']);
    expect(summarizer.calls).toHaveLength(1);
    const call = summarizer.calls[0];
    expect(call.kind).toBe('checkpoint');
    expect(call.targetTokens).toBe(8_000);
    expect(call.instructions).toBe(OFFLOAD_COMPACT_INSTRUCTIONS.replace('{targetTokens}', '8000'));
    for (const s of SECTIONS) expect(call.instructions).toContain(`## ${s}\n`);
    expect(call.instructions).toContain('Target length: approximately 8000 tokens.');
    // Restored: the original outputs, no references.
    const transcript = renderTranscript(call.messages);
    expect(transcript).toContain(file('src/f0.ts', 60));
    expect(transcript).not.toContain('[offloaded tool output');
    // [summary] + the latest 5 messages (widened to their tool exchange).
    const context = contextOf(history, out.prefix);
    expect(out.prefix.checkpoints).toHaveLength(1);
    expect(out.prefix.checkpoints[0].text.startsWith('[Compressed History]\n\n## Technical Context\n')).toBe(true);
    expect(context.map((m) => m.message.role)).toEqual(['system', 'system', 'assistant', 'user', 'assistant', 'user', 'assistant']);
    expect(context.slice(2)).toEqual(history.slice(-5));
    expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
    // The offloaded results were summarized: nothing refers to their artifacts, so none is stored.
    expect(out.artifacts).toEqual([]);
    expect(referencedArtifactIds(out.prefix.treatments).size).toBe(0);
    expect(out.stats).toMatchObject({ previousTokens: out.tokensBefore, currentTokens: out.tokensAfter, freedTokens: out.tokensBefore - out.tokensAfter, preservedCount: 5 });
    expect(out.events.map((e) => e.type)).toEqual(['checkpoint-created', 'compressed']);
    expect(out.events[0].line).toMatch(/^Summarized 57 messages → 1 summary \(saved ~[\d,]+ tokens\)$/);
  });

  it('seed 003: no compaction when offloading brought the context under the threshold, even if it freed less than 15,000 tokens', async () => {
    const history = talkative();
    const summarizer = new SectionSummarizer();
    const out = await compactOffloadCompact(input(history, Math.ceil(tokensOf(history) / 0.85), summarizer));
    expect(out.steps).toEqual(['offload']);
    expect(summarizer.calls).toHaveLength(0);
    expect(out.status).toBe('succeeded');
    expect(out.tokensAfter).toBeLessThanOrEqual(0.8 * Math.ceil(tokensOf(history) / 0.85));
  });

  it('seed 003: with no offloaded content to restore, compaction runs and only the restore step is skipped', async () => {
    const history = session(agentSession(30, { talk: 300, big: 3, small: 3 }));
    const out = await compactOffloadCompact(input(history, Math.ceil(tokensOf(history) / 1.2), new SectionSummarizer()));
    expect(out.status).toBe('succeeded');
    expect(out.steps).toEqual(['offload', 'compact']);
  });

  it('seed 003 cleanup: after compaction the artifacts of summarized messages are referenced by nothing; preserved messages keep their references', async () => {
    const history = talkative(7);
    const budget = Math.ceil(tokensOf(history) / 1.2);
    // A previous run offloaded results (one of them among the latest 5 by now).
    const earlier = await compactOffloadCompact(input(history, budget, new SectionSummarizer()), { ...OFFLOAD_COMPACT_DEFAULTS, triggerThreshold: 0, preserveCount: 1 });
    expect(earlier.steps).toEqual(['offload']);
    const before = referencedArtifactIds(earlier.prefix.treatments);
    expect(before.size).toBe(5);
    const summarizer = new SectionSummarizer();
    const out = await compactOffloadCompact(input(history, budget, summarizer, earlier.prefix));
    expect(out.status).toBe('succeeded');
    const after = referencedArtifactIds(out.prefix.treatments);
    expect(after.size).toBe(1);
    for (const id of after) expect(before.has(id)).toBe(true);
    expect(out.stats?.unreferencedArtifacts).toBe(4);
    expect(out.events.at(-1)?.line).toMatch(/, 4 artifacts no longer referenced\)$/);
    // The summarizer read the originals of earlier offloads too.
    expect(renderTranscript(summarizer.calls[0].messages)).toContain(file('src/f7.ts', 60));
    // The preserved offloaded message keeps its reference form (seed 003: "保留消息不还原").
    const context = contextOf(history, out.prefix);
    expect(JSON.stringify(context.slice(-5))).toContain('[offloaded tool output');
    expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
  });

  it('offloads only untreated messages, so an artifact always holds the original output (not another stage\'s rewrite of it)', async () => {
    const history = session(agentSession(30, { big: 200 }));
    const rewritten: CanonicalMessage = { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'call_0', content: file('src/f0.ts', 150), isError: false }] };
    const prefix: VersionPrefix = { coversThroughSeq: 4, checkpoints: [], treatments: { 4: { kind: 'compressed', message: rewritten, tokens: count(rewritten), stage: 'two-layer' } } };
    const out = await compactOffloadCompact(input(history, Math.ceil(tokensOf(history) / 0.9), new SectionSummarizer(), prefix));
    expect(out.status).toBe('succeeded');
    expect(out.prefix.treatments[4]).toBe(prefix.treatments[4]);
    expect(out.artifacts.some((a) => a.seq === 4)).toBe(false);
    expect(out.artifacts.length).toBeGreaterThan(20);
  });

  it('seed 003: an LLM failure after retries (inside the provider) keeps the offloaded context when that alone saves enough; no retry here', async () => {
    const history = talkative();
    const summarizer = new SectionSummarizer({ failWith: new LlmError('server', 'upstream 500', 3, 500) });
    const out = await compactOffloadCompact(input(history, Math.ceil(tokensOf(history) / 1.2), summarizer));
    expect(summarizer.calls).toHaveLength(1);
    expect(out.status).toBe('succeeded');
    expect(out.reason).toBe('compact-failed-offload-kept (llm-server)');
    expect(out.prefix.checkpoints).toEqual([]);
    expect(out.artifacts).toHaveLength(5);
    expect(Object.values(out.prefix.treatments).every((t) => t.kind === 'offloaded')).toBe(true);
    expect(out.llmCalls).toBe(3);
    expect(out.events.map((e) => e.type)).toEqual(['offloaded', 'compression-error', 'compressed']);
    expect(out.events[1].line).toBe('Summarizer failed (server) after 3 attempt(s); the offloaded context stays');
  });

  it('seed 003: an LLM failure with nothing else saved is failed, and the previous context stays', async () => {
    const history = session(agentSession(30, { talk: 300, big: 3, small: 3 }));
    const out = await compactOffloadCompact(input(history, Math.ceil(tokensOf(history) / 1.2), new SectionSummarizer({ failWith: new LlmError('timeout', 'timed out', 3) })));
    expect(out).toMatchObject({ status: 'failed', reason: 'llm-timeout', prefix: EMPTY_PREFIX, artifacts: [] });
    expect(out.tokensAfter).toBe(out.tokensBefore);
    expect(out.events.map((e) => e.type)).toEqual(['compression-error']);
  });

  it('seed 003 /compact: a manual run compacts unconditionally, without the offload step', async () => {
    const history = session(agentSession(20, { talk: 50, big: 200 }));
    const summarizer = new SectionSummarizer();
    const out = await compactOffloadCompact(input(history, tokensOf(history) * 10, summarizer, EMPTY_PREFIX, 'manual'));
    expect(out.status).toBe('succeeded');
    expect(out.steps).toEqual(['compact']);
    expect(out.artifacts).toEqual([]);
    expect(summarizer.calls).toHaveLength(1);
  });

  it('seed 003: a summary longer than its target is accepted as it is, not truncated', async () => {
    const history = session(agentSession(40, { talk: 300, big: 3, small: 3 }));
    const out = await compactOffloadCompact(
      input(history, Math.ceil(tokensOf(history) / 1.2), new SectionSummarizer({ wordsPerSection: 400 })),
      { ...OFFLOAD_COMPACT_DEFAULTS, targetTokens: 100 },
    );
    expect(out.status).toBe('succeeded');
    expect(out.prefix.checkpoints[0].tokens).toBeGreaterThan(1_000);
    expect(out.prefix.checkpoints[0].text.split(/\s+/).length).toBeGreaterThan(8 * 300);
  });

  it('a later compaction re-summarizes the previous summary: one summary, every summarized message points at it', async () => {
    const all = agentSession(60, { talk: 300, big: 60, small: 3, bigEvery: 6 });
    const first = session(all.slice(0, 40));
    const budget = Math.ceil(tokensOf(first) / 1.2);
    const a = await compactOffloadCompact(input(first, budget, new SectionSummarizer()));
    expect(a.prefix.checkpoints).toHaveLength(1);
    const history = session(all);
    const summarizer = new SectionSummarizer();
    const b = await compactOffloadCompact(input(history, budget, summarizer, a.prefix));
    expect(b.status).toBe('succeeded');
    expect(b.prefix.checkpoints).toHaveLength(1);
    const [c] = b.prefix.checkpoints;
    expect(c).toMatchObject({ fromSeq: 2, agedFromId: a.prefix.checkpoints[0].id, level: 0 });
    expect(c.id).toBe(contentId('ckpt', c.fromSeq, c.toSeq, c.text));
    expect(renderTranscript(summarizer.calls[0].messages)).toContain(a.prefix.checkpoints[0].text);
    for (const t of Object.values(b.prefix.treatments)) if (t.kind === 'summarized') expect(t.checkpointId).toBe(c.id);
    expect(providerValidityProblems(contextOf(history, b.prefix).map((m) => m.message))).toEqual([]);
  });

  it('Guarantee 3: pinned messages (with their exchange), the system prompt and exempt tools are neither offloaded nor summarized', async () => {
    const history = session(agentSession(30, { talk: 300, big: 60, small: 3, bigEvery: 3, pinEvery: 10 }));
    const out = await compactOffloadCompact(input(history, Math.ceil(tokensOf(history) / 1.2), new SectionSummarizer()), { ...OFFLOAD_COMPACT_DEFAULTS, exemptToolNames: ['read_file'] });
    expect(out.status).toBe('succeeded');
    const context = contextOf(history, out.prefix);
    for (const m of history) {
      const exempt = m.message.blocks.some((b) => b.type === 'tool_use' && b.name === 'read_file');
      if (m.message.pinned || m.message.role === 'system' || exempt) expect(context).toContainEqual(m);
    }
    expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
  });

  it('seed 003 parameters are settable by COMPACTOR_COMPACT_* environment variables, below the session overrides', () => {
    expect(OFFLOAD_COMPACT_ENV).toEqual({
      COMPACTOR_COMPACT_TRIGGER_THRESHOLD: { path: 'triggerThreshold', type: 'number' },
      COMPACTOR_COMPACT_TARGET_TOKENS: { path: 'targetTokens', type: 'number' },
      COMPACTOR_COMPACT_PRESERVE_COUNT: { path: 'preserveCount', type: 'number' },
      COMPACTOR_COMPACT_MODEL: { path: 'model', type: 'string' },
      COMPACTOR_COMPACT_RETRY_COUNT: { path: 'retryCount', type: 'number' },
    });
    for (const { path } of Object.values(OFFLOAD_COMPACT_ENV)) expect(path in OFFLOAD_COMPACT_DEFAULTS).toBe(true);
    expect(OFFLOAD_COMPACT_DEFAULTS).toMatchObject({ triggerFraction: 0.8, triggerThreshold: 15_000, targetTokens: 8_000, preserveCount: 5, retryCount: 3, model: '' });
    const env = offloadCompactEnvLayer({ COMPACTOR_COMPACT_TARGET_TOKENS: '6000', COMPACTOR_COMPACT_MODEL: 'claude-haiku-4-5', COMPACTOR_COMPACT_PRESERVE_COUNT: ' 8 ', PATH: '/bin', COMPACTOR_COMPACT_RETRY_COUNT: '' });
    expect(env).toEqual({ source: 'COMPACTOR_COMPACT_*', values: { targetTokens: 6000, model: 'claude-haiku-4-5', preserveCount: 8 } });
    const p = resolveParams<OffloadCompactParams>(OFFLOAD_COMPACT_DEFAULTS, env, { source: 'policy.overrides', values: { preserveCount: 3 } });
    expect(p).toMatchObject({ targetTokens: 6000, model: 'claude-haiku-4-5', preserveCount: 3, triggerThreshold: 15_000 });
    expect(() => offloadCompactEnvLayer({ COMPACTOR_COMPACT_TARGET_TOKENS: 'lots', COMPACTOR_COMPACT_RETRY_COUNT: '-1' })).toThrow(ValidationFailed);
    try {
      offloadCompactEnvLayer({ COMPACTOR_COMPACT_TARGET_TOKENS: 'lots' });
    } catch (e) {
      expect((e as ValidationFailed).problems).toEqual([{ field: 'COMPACTOR_COMPACT_TARGET_TOKENS', message: "must be a non-negative integer (got 'lots')" }]);
    }
    expect(OFFLOAD_COMPACT).toMatchObject({ name: 'offload-compact', source: 'seed 003', defaults: OFFLOAD_COMPACT_DEFAULTS });
  });

  it('on a real SWE-agent session: valid context, stored artifacts byte-exact', async () => {
    const raw = (JSON.parse(readFileSync(join(__dirname, '../../../../testdata/swe-agent-trajectories/marshmallow-1867__function_calling_replace_from_source.traj'), 'utf8')) as { history: unknown[] }).history;
    const parsed = parseOpenAIMessages(raw, 'history');
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const history = session(parsed.value);
    const out = await compactOffloadCompact(input(history, Math.ceil(tokensOf(history) / 0.9), new SectionSummarizer()), { ...OFFLOAD_COMPACT_DEFAULTS, minSavingTokens: 500 });
    expect(out.status).toBe('succeeded');
    expect(out.artifacts.length).toBeGreaterThan(0);
    for (const a of out.artifacts) {
      const block = history.find((m) => m.seq === a.seq)!.message.blocks.find((b): b is ToolResultBlock => b.type === 'tool_result')!;
      expect(a.content).toBe(block.content);
    }
    expect(providerValidityProblems(makeProviderValid(contextOf(history, out.prefix).map((m) => m.message)).messages)).toEqual([]);
  });

  it('properties over growing sessions: G2 valid, G5 never more tokens, G3 latest/pinned/system kept, G8 deterministic, artifacts referenced and byte-exact', async () => {
    const arb = fc.record({
      openaiShape: fc.boolean(),
      steps: fc.integer({ min: 0, max: 40 }),
      split: fc.option(fc.double({ min: 0.3, max: 1, noNaN: true }), { nil: undefined }),
      talk: fc.oneof(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 200, max: 400 })),
      big: fc.oneof(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 40, max: 80 })),
      bigEvery: fc.integer({ min: 1, max: 8 }),
      pinEvery: fc.option(fc.integer({ min: 2, max: 12 }), { nil: undefined }),
      fill: fc.double({ min: 0.5, max: 4, noNaN: true }),
      preserveCount: fc.integer({ min: 0, max: 8 }),
      triggerThreshold: fc.constantFrom(0, 2_000, 15_000, 1_000_000),
      fail: fc.boolean(),
      manual: fc.boolean(),
    });
    const seen = { succeeded: 0, compacted: 0, offloaded: 0, failed: 0, threaded: 0, offloadThenCompact: 0 };
    await fc.assert(
      fc.asyncProperty(arb, async (a) => {
        const all = agentSession(a.steps, { openaiShape: a.openaiShape, talk: a.talk, big: a.big, bigEvery: a.bigEvery, pinEvery: a.pinEvery });
        const params: OffloadCompactParams = { ...OFFLOAD_COMPACT_DEFAULTS, preserveCount: a.preserveCount, triggerThreshold: a.triggerThreshold, minSavingTokens: 200 };
        const budget = Math.max(500, Math.ceil(tokensOf(session(all)) / a.fill));
        // A first run on an earlier part of the session, then a run on all of it from that prefix.
        let prefix = EMPTY_PREFIX;
        if (a.split !== undefined) {
          const early = session(all.slice(0, Math.max(1, Math.floor(all.length * a.split))));
          const first = await compactOffloadCompact(input(early, budget, new SectionSummarizer()), params);
          if (first.status === 'succeeded') prefix = first.prefix;
        }
        if (prefix !== EMPTY_PREFIX) seen.threaded += 1;
        const history = session(all);
        const run = () => compactOffloadCompact(input(history, budget, new SectionSummarizer(a.fail ? { failWith: new LlmError('server', 'x', 3) } : {}), prefix, a.manual ? 'manual' : 'threshold'), params);
        const out = await run();
        expect(await run()).toEqual(out);
        expect(out.tokensAfter).toBeLessThanOrEqual(out.tokensBefore);
        const context = contextOf(history, out.prefix);
        expect(tokensOf(context)).toBe(out.tokensAfter);
        expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
        if (out.status !== 'succeeded') {
          expect(out.prefix).toBe(prefix);
          expect(out.artifacts).toEqual([]);
          if (out.status === 'failed') seen.failed += 1;
          return;
        }
        seen.succeeded += 1;
        if (out.steps.includes('compact') && out.prefix.checkpoints !== prefix.checkpoints) seen.compacted += 1;
        if (out.artifacts.length) seen.offloaded += 1;
        // Offloaded and then summarized in the same run: those artifacts must not be stored.
        if (prefix === EMPTY_PREFIX && out.steps.includes('restore') && out.events.some((e) => e.type === 'checkpoint-created')) seen.offloadThenCompact += 1;
        // G3: the latest preserveCount messages, pinned messages and the system prompt are there unchanged.
        const nonSystem = history.filter((m) => m.message.role !== 'system');
        for (const m of nonSystem.slice(nonSystem.length - a.preserveCount)) if (a.preserveCount > 0) expect(context).toContainEqual(m);
        for (const m of history) if (m.message.pinned || m.message.role === 'system') expect(context).toContainEqual(m);
        // Every artifact the prefix refers to is stored now or was already; stored ones are the originals, byte-exact.
        const known = new Set([...out.artifacts.map((x) => x.id), ...referencedArtifactIds(prefix.treatments)]);
        for (const id of referencedArtifactIds(out.prefix.treatments)) expect(known.has(id)).toBe(true);
        const referenced = referencedArtifactIds(out.prefix.treatments);
        for (const art of out.artifacts) {
          expect(referenced.has(art.id)).toBe(true);
          const block = history.find((m) => m.seq === art.seq)!.message.blocks.find((b): b is ToolResultBlock => b.type === 'tool_result' && b.toolUseId === art.toolUseId)!;
          expect(art.content).toBe(artifactContent(block.content));
          expect(art.id).toBe(contentId('art', art.seq, art.toolUseId!, art.content));
        }
        // No stale references: every summarized message names a checkpoint in force.
        const ids = new Set(out.prefix.checkpoints.map((c) => c.id));
        for (const t of Object.values(out.prefix.treatments)) if (t.kind === 'summarized') expect(ids.has(t.checkpointId)).toBe(true);
        expect(out.prefix.checkpoints.length).toBeLessThanOrEqual(1);
      }),
      { numRuns: 120, seed: 3003 },
    );
    for (const n of Object.values(seen)) expect(n).toBeGreaterThan(3);
  });
});
