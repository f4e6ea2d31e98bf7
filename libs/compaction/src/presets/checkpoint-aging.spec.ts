import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { countTextSync } from '@compactor/tokens';
import { Block, CanonicalMessage } from '../messages/canonical';
import { countableParts } from '../messages/countable';
import { parseOpenAIMessages } from '../messages/openai';
import { makeProviderValid, providerValidityProblems } from '../messages/provider-valid';
import { LlmError, renderTranscript, SummarizeRequest, Summarizer } from '../llm/summarizer';
import { resolveParams } from '../policy/params';
import {
  CHECKPOINT_AGING,
  CHECKPOINT_AGING_DEFAULTS,
  CheckpointAgingParams,
  checkpointFacts,
  compactCheckpointAging,
  fitToTokens,
  ULTRA_LEVEL,
} from './checkpoint-aging';
import { CompactionInput, CountMessage, SessionMessage } from '../engine/types';
import { applyPrefix, Checkpoint, checkpointMessage, EMPTY_PREFIX, VersionPrefix } from '../engine/version';

const countText = (t: string) => countTextSync(t, 'o200k_base');
const count: CountMessage = (m) => 3 + countableParts(m).texts.reduce((n, t) => n + countText(t), 0);
const text = (t: string): Block => ({ type: 'text', text: t });

/**
 * A deterministic stand-in for the LLM that honours `targetTokens`: it writes words of the
 * transcript (cycling when short) until the next word would pass the target. `ignoreTarget`
 * makes it answer far over the target, like a model that does not listen.
 */
class TargetSummarizer implements Summarizer {
  readonly provider = 'test';
  readonly model = 'target';
  readonly deterministic = true;
  calls: SummarizeRequest[] = [];
  constructor(
    readonly contextWindow = 1_000_000,
    private readonly opts: { failWith?: LlmError; failOnCall?: number; ignoreTarget?: boolean; countText?: (t: string) => number } = {},
  ) {}
  async summarize(request: SummarizeRequest) {
    this.calls.push(request);
    if (this.opts.failWith && this.calls.length >= (this.opts.failOnCall ?? 1)) throw this.opts.failWith;
    const words = renderTranscript(request.messages).split(/\s+/).filter((w) => w.length > 0);
    const want = this.opts.ignoreTarget ? request.targetTokens * 3 : request.targetTokens;
    const pool = Array.from({ length: want * 2 }, (_, i) => words[i % words.length]);
    const counter = this.opts.countText ?? countText;
    let lo = 0;
    let hi = pool.length;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (counter(pool.slice(0, mid).join(' ')) <= want) lo = mid;
      else hi = mid - 1;
    }
    const out = pool.slice(0, lo).join(' ');
    return { text: out, usage: { inputTokens: words.length, outputTokens: counter(out), costUsd: 0 }, provider: 'test', model: 'target', attempts: 1 };
  }
}

const file = (label: string, lines: number) => Array.from({ length: lines }, (_, i) => `${label}:${i}: const value_${i} = compute(${i}, "${label}");`).join('\n');

interface SessionOpts {
  openaiShape?: boolean;
  /** Anthropic shape: the user's text rides in the same message as the tool results. */
  mixed?: boolean;
  /** SWE-agent style: tool output as user text tagged `observation`, no tool calls. */
  observations?: boolean;
  size?: number;
  talk?: number;
  thinking?: boolean;
  pinEvery?: number;
}

/** An agent session: instructions, then steps of assistant tool calls and their results, with user remarks along the way. */
function agentSession(steps: number, opts: SessionOpts = {}, offset = 0): CanonicalMessage[] {
  const out: CanonicalMessage[] = [];
  for (let k = offset; k < offset + steps; k += 1) {
    const thought = Array.from({ length: opts.talk ?? 4 }, (_, i) => `Reasoning ${k}.${i}: the value of option_${i % 7} in src/f${k}.ts looks wrong.`).join(' ');
    const remark = `User remark ${k}: keep the public API of module_${k % 5} stable.`;
    const pinned = opts.pinEvery !== undefined && k % opts.pinEvery === 3;
    if (opts.observations) {
      out.push({ role: 'assistant', blocks: [text(`Step ${k}: ${thought}\n\`\`\`\nopen src/f${k}.ts\n\`\`\``)] });
      out.push({ role: 'user', tags: ['observation'], blocks: [text(file(`src/f${k}.ts`, opts.size ?? 20))] });
      if (k % 4 === 0) {
        out.push({ role: 'assistant', blocks: [text(`Noted step ${k}.`)] });
        out.push({ role: 'user', blocks: [text(remark)] });
      }
      continue;
    }
    const blocks: Block[] = [];
    if (opts.thinking && k % 3 === 0) blocks.push({ type: 'thinking', thinking: `thinking about step ${k}`, signature: `sig${k}` });
    blocks.push(text(`Step ${k}: ${thought}`), { type: 'tool_use', id: `c${k}`, name: k % 2 ? 'bash' : 'str_replace_editor', input: k % 2 ? { command: `pytest -q tests/t${k}.py` } : { command: 'str_replace', path: `src/f${k}.ts` } });
    out.push({ role: 'assistant', blocks, pinned: pinned || undefined });
    const result: Block = { type: 'tool_result', toolUseId: `c${k}`, content: file(`src/f${k}.ts`, opts.size ?? 20), isError: k % 5 === 4 };
    if (opts.openaiShape) {
      out.push({ role: 'tool', blocks: [result] });
      if (k % 3 === 1) {
        out.push({ role: 'user', blocks: [text(remark)] });
        out.push({ role: 'assistant', blocks: [text(`Understood, remark ${k}.`)] });
      }
    } else if (opts.mixed && k % 3 === 1) out.push({ role: 'user', blocks: [result, text(remark)] });
    else out.push({ role: 'user', blocks: [result] });
  }
  return out;
}

const SYSTEM: CanonicalMessage = { role: 'system', blocks: [text('You are a coding agent. Work in /repo.')] };
const FIRST_USER: CanonicalMessage = { role: 'user', blocks: [text('Fix the failing test in src/app.ts. Never edit the migrations.')] };
const session = (steps: number, opts: SessionOpts = {}) => [SYSTEM, FIRST_USER, ...agentSession(steps, opts), { role: 'assistant' as const, blocks: [text('Now I know where the bug is.')] }];

/** A cheap stand-in tokenizer (4 characters a token) for the property runs: the preset is tokenizer-agnostic, and o200k would dominate their time. */
const quickCountText = (t: string) => Math.ceil(t.length / 4);
const quickCount: CountMessage = (m) => 3 + countableParts(m).texts.reduce((n, t) => n + quickCountText(t), 0);

const toSession = (messages: CanonicalMessage[], from = 1, counter: CountMessage = count): SessionMessage[] =>
  messages.map((message, i) => ({ seq: from + i, message, tokens: counter(message) }));
const inputOf = (history: SessionMessage[], summarizer: Summarizer, prefix: VersionPrefix = EMPTY_PREFIX, extra: Partial<CompactionInput> = {}): CompactionInput => ({
  history,
  prefix,
  budget: 100_000,
  contextWindow: 128_000,
  summarizer,
  countMessage: count,
  countText,
  ...extra,
});
const contextOf = (history: SessionMessage[], prefix: VersionPrefix) => applyPrefix(prefix, history, (c) => count(checkpointMessage(c)));
const tokensOf = (xs: SessionMessage[]) => xs.reduce((n, m) => n + m.tokens, 0);
const params = (over: Partial<CheckpointAgingParams> = {}): CheckpointAgingParams => ({ ...CHECKPOINT_AGING_DEFAULTS, ...over });

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** Guarantee 3 for this preset: every user message's text blocks are in the context, verbatim, unless tagged `observation`. */
function expectUserTextsKept(history: SessionMessage[], context: SessionMessage[]) {
  const bySeq = new Map(context.map((m) => [m.seq, m.message]));
  for (const m of history) {
    if (m.message.role !== 'user' || m.message.tags?.includes('observation')) continue;
    const texts = m.message.blocks.filter((b) => b.type === 'text');
    if (texts.length === 0) continue;
    const kept = bySeq.get(m.seq);
    expect(kept?.role).toBe('user');
    expect(kept?.blocks.filter((b) => b.type === 'text')).toEqual(texts);
  }
}

describe('checkpoint-aging preset (seed 004, SPEC.md Policies)', () => {
  it('is a preset definition named checkpoint-aging from seed 004, whose parameters resolve and override', () => {
    expect(CHECKPOINT_AGING).toMatchObject({ name: 'checkpoint-aging', source: 'seed 004', defaults: CHECKPOINT_AGING_DEFAULTS });
    expect(CHECKPOINT_AGING_DEFAULTS).toMatchObject({ recentTokens: 1_200, oldTokens: 600, ancientTokens: 300, ultraTokens: 150, triggerFraction: 0.8, preserveRecentTokens: 2_048 });
    expect(CHECKPOINT_AGING_DEFAULTS.protection).toMatchObject({ allUserTexts: true });
    const resolved = resolveParams(CHECKPOINT_AGING_DEFAULTS, { source: 'policy.overrides', values: { ultraTokens: 100, protection: { latestMessages: 2 } } });
    expect(resolved.ultraTokens).toBe(100);
    expect(resolved.protection).toEqual({ ...CHECKPOINT_AGING_DEFAULTS.protection, latestMessages: 2 });
  });

  it('seed 004: a compaction summarizes the oldest unprotected span into one checkpoint of ~1,200 tokens with the goal-aware prompt', async () => {
    const history = toSession([...session(40, { talk: 6 }), { role: 'assistant', blocks: [text('[DECISION] Keep the parser in src/parse.ts - LOCKED\n[CHECKPOINT] Reproduce the bug - COMPLETED')] }]);
    const summarizer = new TargetSummarizer();
    const out = await compactCheckpointAging(inputOf(history, summarizer, EMPTY_PREFIX, { goal: 'Fix the failing test in src/app.ts' }));
    expect(out.status).toBe('succeeded');
    expect(out.prefix.checkpoints).toHaveLength(1);
    const [c] = out.prefix.checkpoints;
    expect(c.level).toBe(0);
    expect(c.tokens).toBeLessThanOrEqual(1_200);
    expect(c.tokens).toBeGreaterThanOrEqual(1_150);
    const request = summarizer.calls[0];
    expect(request.kind).toBe('checkpoint');
    expect(request.targetTokens).toBe(1_200);
    expect(request.goal).toBe('Fix the failing test in src/app.ts');
    expect(request.instructions).toContain('ACTIVE GOAL: Fix the failing test in src/app.ts');
    expect(request.instructions).toContain('COMPLETED CHECKPOINTS:\n✅ Reproduce the bug');
    expect(request.instructions).toContain('LOCKED DECISIONS:\n🔒 Keep the parser in src/parse.ts');
    expect(request.instructions).toContain('Summarize the following conversation, focusing on progress toward the goal:');
    expect(request.instructions).toContain('SUMMARIZE AGGRESSIVELY:\n- Off-topic discussions');
    // Only the assistant's output and tool results are summarized: no user text reaches the summarizer.
    for (const m of request.messages) expect(m.role === 'user' && m.blocks.some((b) => b.type === 'text')).toBe(false);
    expect(out.events.map((e) => e.type)).toEqual(['checkpoint-created', 'compressed']);
    expect(out.events[0].line).toMatch(/^Summarized \d+ messages → 1 checkpoint of 1,\d{3} tokens \(saved ~[\d,]+ tokens\)$/);
    const context = contextOf(history, out.prefix);
    expect(context[0]).toEqual(history[0]);
    expect(context[1].message.tags).toEqual(['checkpoint']);
    expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
    expectUserTextsKept(history, context);
  });

  it("seed 004: with no goal at all, the seed's plain summarization prompt", async () => {
    const history = toSession(session(40));
    const summarizer = new TargetSummarizer();
    const out = await compactCheckpointAging(inputOf(history, summarizer));
    expect(out.status).toBe('succeeded');
    expect(summarizer.calls[0].instructions).toMatch(/^Summarize the following conversation history, preserving key decisions, code changes, and important context:/);
    expect(summarizer.calls[0].instructions).toMatch(/Provide a concise summary that maintains essential information\.$/);
  });

  it('seed 004 aging table: over five compactions a checkpoint goes 1,200 → 600 → 300 → 150, then the ultra ones merge into one of at most 150 tokens', async () => {
    const all = [SYSTEM, FIRST_USER, ...agentSession(150, { talk: 6 })];
    const summarizer = new TargetSummarizer();
    let prefix: VersionPrefix = EMPTY_PREFIX;
    const seen = new Map<string, string>();
    const levels: number[][] = [];
    const sizes: number[][] = [];
    let firstRange = [0, 0];
    let secondRange = [0, 0];
    for (let n = 62; n <= all.length; n += 60) {
      const history = toSession(all.slice(0, n));
      const before = deepFreeze(prefix);
      const snapshot = JSON.stringify(before);
      const out = await compactCheckpointAging(inputOf(history, summarizer, before));
      expect(out.status).toBe('succeeded');
      // Old checkpoints are never changed; aging writes new ones pointing back at them.
      expect(JSON.stringify(before)).toBe(snapshot);
      for (const c of out.prefix.checkpoints) {
        if (seen.has(c.id)) expect(JSON.stringify(c)).toBe(seen.get(c.id));
        else if (c.agedFromId !== undefined) {
          const from = before.checkpoints.find((o) => o.id === c.agedFromId) as Checkpoint;
          expect(from).toBeDefined();
          expect(c.level).toBeGreaterThanOrEqual(Math.min(from.level + 1, ULTRA_LEVEL));
        }
        seen.set(c.id, JSON.stringify(c));
      }
      prefix = out.prefix;
      levels.push(prefix.checkpoints.map((c) => c.level));
      const newest = prefix.checkpoints.at(-1) as Checkpoint;
      if (levels.length === 1) firstRange = [newest.fromSeq, newest.toSeq];
      if (levels.length === 2) secondRange = [newest.fromSeq, newest.toSeq];
      sizes.push(prefix.checkpoints.map((c) => c.tokens));
      const context = contextOf(history, prefix);
      expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
      expectUserTextsKept(history, context);
      if (levels.length === 5) break;
    }
    expect(levels).toEqual([[0], [1, 0], [2, 1, 0], [3, 2, 1, 0], [3, 2, 1, 0]]);
    const near = (got: number, want: number) => {
      expect(got).toBeLessThanOrEqual(want);
      expect(got).toBeGreaterThanOrEqual(want - 10);
    };
    // The first checkpoint's own line: 1,200 → 600 → 300 → 150.
    [sizes[0][0], sizes[1][0], sizes[2][0], sizes[3][0]].forEach((got, i) => near(got, [1_200, 600, 300, 150][i]));
    // Fifth compaction: the ultra one and the one that just turned ultra are one checkpoint of at most 150 tokens.
    near(sizes[4][1], 300);
    near(sizes[4][2], 600);
    near(sizes[4][3], 1_200);
    expect(sizes[4][0]).toBeLessThanOrEqual(150);
    // The merged ultra checkpoint covers what the first two checkpoints covered.
    expect(prefix.checkpoints[0]).toMatchObject({ fromSeq: firstRange[0], toSeq: secondRange[1], level: ULTRA_LEVEL });
    const mergeCall = summarizer.calls.at(-1) as SummarizeRequest;
    expect(mergeCall.kind).toBe('merge');
    expect(mergeCall.targetTokens).toBe(150);
    expect(mergeCall.messages).toHaveLength(2);
    expect(mergeCall.instructions).toContain('ultra level of at most 150 tokens: minimal summary; essential context only');
    // Seed 004 "Dynamic Budget Calculation": the available budget is recalculated after each compaction.
    expect(prefix.checkpoints.reduce((s, c) => s + c.tokens, 0)).toBeLessThanOrEqual(1_200 + 600 + 300 + 150);
  });

  it('seed 004: checkpoint-aged events name each step with its human line', async () => {
    const all = [SYSTEM, FIRST_USER, ...agentSession(130, { talk: 6 })];
    const summarizer = new TargetSummarizer();
    let prefix: VersionPrefix = EMPTY_PREFIX;
    const lines: string[] = [];
    for (let n = 62; n <= all.length; n += 60) {
      const out = await compactCheckpointAging(inputOf(toSession(all.slice(0, n)), summarizer, prefix));
      prefix = out.prefix;
      lines.push(...out.events.filter((e) => e.type === 'checkpoint-aged').map((e) => e.line));
    }
    expect(lines[0]).toMatch(/^Aged checkpoint \d+–\d+ recent → old: 1,\d{3} → \d{3} tokens$/);
    expect(lines.some((l) => / old → ancient: \d{3} → \d{3} tokens$/.test(l))).toBe(true);
  });

  it('seed 004: an ultra merge is at most 150 tokens and every level keeps its target even when the summarizer ignores the target', async () => {
    const all = [SYSTEM, FIRST_USER, ...agentSession(150, { talk: 6 })];
    const summarizer = new TargetSummarizer(1_000_000, { ignoreTarget: true });
    let prefix: VersionPrefix = EMPTY_PREFIX;
    for (let n = 62, k = 0; n <= all.length && k < 5; n += 60, k += 1) {
      const out = await compactCheckpointAging(inputOf(toSession(all.slice(0, n)), summarizer, prefix));
      expect(out.status).toBe('succeeded');
      prefix = out.prefix;
      for (const c of prefix.checkpoints) expect(c.tokens).toBeLessThanOrEqual([1_200, 600, 300, 150][c.level]);
    }
    expect(prefix.checkpoints[0].level).toBe(ULTRA_LEVEL);
    expect(prefix.checkpoints.filter((c) => c.level === ULTRA_LEVEL)).toHaveLength(1);
  });

  it('seed 004 "Never compress user messages": a user message with text and tool results keeps its text; its results go into the checkpoint', async () => {
    const history = toSession(session(40, { mixed: true }));
    const out = await compactCheckpointAging(inputOf(history, new TargetSummarizer()));
    expect(out.status).toBe('succeeded');
    const stripped = Object.entries(out.prefix.treatments).filter(([, t]) => t.kind === 'compressed');
    expect(stripped.length).toBeGreaterThan(3);
    for (const [seq, t] of stripped) {
      const original = history.find((m) => m.seq === Number(seq)) as SessionMessage;
      expect(t.kind === 'compressed' && t.message.blocks).toEqual(original.message.blocks.filter((b) => b.type !== 'tool_result'));
    }
    const context = contextOf(history, out.prefix);
    expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
    expectUserTextsKept(history, context);
    expect(out.events[0].line).toMatch(/the text of \d+ user message\(s\) kept\)$/);
  });

  it('Guarantee 2: when the latest messages start at a user message holding tool results and text, its tool call stays with it', async () => {
    const messages = session(40, { mixed: true });
    // End right after a mixed user message (results + remark), then one more assistant message.
    const cut = messages.findLastIndex((m) => m.role === 'user' && m.blocks.length === 2 && m.blocks[0].type === 'tool_result');
    const history = toSession([...messages.slice(0, cut + 1), { role: 'assistant', blocks: [text('Done.')] }]);
    const p = params({ preserveRecentTokens: 0, protection: { ...CHECKPOINT_AGING_DEFAULTS.protection, latestMessages: 2 } });
    const out = await compactCheckpointAging(inputOf(history, new TargetSummarizer()), p);
    expect(out.status).toBe('succeeded');
    const context = contextOf(history, out.prefix);
    expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
    // The call answered by the kept message is still there, right before it.
    expect(context.at(-3)).toEqual(history.at(-3));
    expect(context.at(-2)).toEqual(history.at(-2));
  });

  it('SPEC: user text tagged `observation` (tool output an agent put in a user message) is summarized', async () => {
    const history = toSession(session(30, { observations: true }));
    const out = await compactCheckpointAging(inputOf(history, new TargetSummarizer()));
    expect(out.status).toBe('succeeded');
    const observations = history.filter((m) => m.message.tags?.includes('observation'));
    const summarized = observations.filter((m) => out.prefix.treatments[m.seq]?.kind === 'summarized');
    expect(summarized.length).toBeGreaterThan(observations.length / 2);
    const context = contextOf(history, out.prefix);
    expectUserTextsKept(history, context);
    expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
  });

  it('seed 004 "Dynamic Budget Calculation": available = context window − system prompt − checkpoints, trigger at 80% of it', async () => {
    const history = toSession(session(40));
    const out = await compactCheckpointAging(inputOf(history, new TargetSummarizer(), EMPTY_PREFIX, { contextWindow: 13_600, budget: 12_000 }));
    const systemTokens = history[0].tokens;
    const checkpointTokens = out.prefix.checkpoints.reduce((n, c) => n + count(checkpointMessage(c)), 0);
    expect(out.stats).toMatchObject({
      context_window: 13_600,
      system_tokens: systemTokens,
      checkpoint_tokens: checkpointTokens,
      available_budget: 13_600 - systemTokens - checkpointTokens,
      compression_trigger: Math.floor(0.8 * (13_600 - systemTokens - checkpointTokens)),
    });
    expect(out.events.at(-1)?.line).toMatch(/available budget 13,\d{3} → 1[23],\d{3} tokens\)$/);
    // Without a context window, the session's budget stands in.
    const noWindow = await compactCheckpointAging(inputOf(history, new TargetSummarizer(), EMPTY_PREFIX, { contextWindow: undefined, budget: 12_000 }));
    expect(noWindow.stats?.context_window).toBe(12_000);
  });

  it("seed 004 preserveRecent: the latest 2,048 tokens' worth of messages are not compressed", async () => {
    const history = toSession(session(40, { size: 5 }));
    const out = await compactCheckpointAging(inputOf(history, new TargetSummarizer()));
    expect(out.status).toBe('succeeded');
    const context = contextOf(history, out.prefix);
    let tail = 0;
    for (let i = history.length - 1; tail < 2_048; i -= 1) {
      expect(context).toContainEqual(history[i]);
      tail += history[i].tokens;
    }
    const few = await compactCheckpointAging(inputOf(history, new TargetSummarizer()), params({ preserveRecentTokens: 0 }));
    expect(few.tokensAfter).toBeLessThan(out.tokensAfter);
  });

  it('Guarantee 3: pinned messages and their tool exchange stay whole', async () => {
    const history = toSession(session(40, { pinEvery: 10 }));
    const out = await compactCheckpointAging(inputOf(history, new TargetSummarizer()));
    expect(out.status).toBe('succeeded');
    const context = contextOf(history, out.prefix);
    const pinned = history.filter((m) => m.message.pinned);
    expect(pinned.length).toBeGreaterThan(2);
    for (const m of pinned) {
      expect(context).toContainEqual(m);
      const result = history.find((r) => r.seq === m.seq + 1) as SessionMessage;
      expect(context).toContainEqual(result);
    }
  });

  it('Guarantee 5: a saving below the minimum is skipped with the previous prefix', async () => {
    const history = toSession(session(12, { size: 3, talk: 1 }));
    const out = await compactCheckpointAging(inputOf(history, new TargetSummarizer()), params({ preserveRecentTokens: 0 }));
    expect(out.status).toBe('skipped');
    expect(out.reason).toMatch(/^saving-below-minimum \([\d,]+ < 5,000 tokens\)$/);
    expect(out.prefix).toBe(EMPTY_PREFIX);
    expect(out.tokensAfter).toBe(out.tokensBefore);
    expect(out.events.map((e) => e.type)).toEqual(['compression-skipped']);
  });

  it('skips with a reason when every older message is protected', async () => {
    const history = toSession([SYSTEM, FIRST_USER, { role: 'assistant', blocks: [text('Hello')] }]);
    const out = await compactCheckpointAging(inputOf(history, new TargetSummarizer()));
    expect(out).toMatchObject({ status: 'skipped', reason: 'nothing-to-compact (every older message is protected)', prefix: EMPTY_PREFIX });
  });

  it('seed 004 "handles compression failures": an LLM failure leaves the previous context, also when it happens while aging', async () => {
    const history = toSession(session(40));
    const failed = await compactCheckpointAging(inputOf(history, new TargetSummarizer(1_000_000, { failWith: new LlmError('timeout', 'slow', 3) })));
    expect(failed).toMatchObject({ status: 'failed', reason: 'llm-timeout', prefix: EMPTY_PREFIX });
    expect(failed.events).toEqual([{ type: 'compression-error', line: 'Summarizer failed (timeout) after 3 attempt(s); the previous context stays' }]);

    const first = await compactCheckpointAging(inputOf(history, new TargetSummarizer()));
    const longer = toSession(session(90));
    const agingFails = await compactCheckpointAging(inputOf(longer, new TargetSummarizer(1_000_000, { failWith: new LlmError('server', '500', 1, 500), failOnCall: 2 }), first.prefix));
    expect(agingFails).toMatchObject({ status: 'failed', reason: 'llm-server' });
    expect(agingFails.prefix).toBe(first.prefix);
  });

  it('chunks a span larger than the summarizer window, then merges the pieces into the checkpoint', async () => {
    const history = toSession(session(60, { size: 30 }));
    const summarizer = new TargetSummarizer(8_000);
    const out = await compactCheckpointAging(inputOf(history, summarizer));
    expect(out.status).toBe('succeeded');
    expect(summarizer.calls.filter((c) => c.kind === 'chunk').length).toBeGreaterThan(1);
    expect(summarizer.calls.at(-1)?.kind).toBe('merge');
    expect(out.prefix.checkpoints[0].tokens).toBeLessThanOrEqual(1_200);
  });

  it('fitToTokens cuts at a word boundary within the limit', () => {
    const long = Array.from({ length: 300 }, (_, i) => `word${i}`).join(' ');
    const cut = fitToTokens(long, 50, countText);
    expect(countText(cut)).toBeLessThanOrEqual(50);
    expect(countText(cut)).toBeGreaterThan(40);
    expect(cut.endsWith(' …')).toBe(true);
    expect(fitToTokens('short text', 50, countText)).toBe('short text');
  });

  it('real SWE-agent session (marshmallow-1867): repeated compactions stay valid and keep every user text', async () => {
    const raw = (JSON.parse(readFileSync(join(__dirname, '../../../../testdata/swe-agent-trajectories/marshmallow-1867__function_calling.traj'), 'utf8')) as { history: unknown[] }).history;
    const parsed = parseOpenAIMessages(raw, 'history');
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const messages = makeProviderValid(parsed.value).messages;
    let prefix: VersionPrefix = EMPTY_PREFIX;
    let compactions = 0;
    for (let n = 10; n <= messages.length; n += 4) {
      const history = toSession(messages.slice(0, n));
      const out = await compactCheckpointAging(inputOf(history, new TargetSummarizer(), prefix, { budget: 4_000 }), params({ preserveRecentTokens: 500, minSavingTokens: 200, protection: { ...CHECKPOINT_AGING_DEFAULTS.protection, latestMessages: 3 } }));
      expect(out.tokensAfter).toBeLessThanOrEqual(out.tokensBefore);
      if (out.status === 'succeeded') {
        prefix = out.prefix;
        compactions += 1;
      }
      const context = contextOf(history, prefix);
      expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
      expectUserTextsKept(history, context);
    }
    expect(compactions).toBeGreaterThanOrEqual(2);
  });
});

describe('checkpointFacts (seed 004 keyDecisions, filesModified, nextSteps)', () => {
  it('seed 004: files modified come from the span’s edits and writes, decisions and next steps from markers and phrasing', () => {
    const span: CanonicalMessage[] = [
      { role: 'assistant', blocks: [text('[DECISION] Use JWT for authentication - LOCKED'), { type: 'tool_use', id: 'a', name: 'str_replace_editor', input: { command: 'view', path: '/repo/README.md' } }] },
      { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'a', content: 'readme', isError: false }] },
      { role: 'assistant', blocks: [{ type: 'tool_use', id: 'b', name: 'str_replace_editor', input: { command: 'str_replace', path: '/repo/src/auth.ts', old_str: 'a', new_str: 'b' } }] },
      { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'b', content: 'ok', isError: false }] },
      { role: 'assistant', blocks: [{ type: 'tool_use', id: 'c', name: 'open', input: { path: 'src/fields.py' } }, { type: 'tool_use', id: 'd', name: 'edit', input: { replacement_text: 'x', start_line: 1 } }] },
      { role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 'c', content: '', isError: false }] },
      { role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 'd', content: '', isError: false }] },
      { role: 'assistant', blocks: [{ type: 'tool_use', id: 'e', name: 'bash', input: { command: 'cat a.txt > out/log.txt && sed -i s/a/b/ conf.ini 2>/dev/null; ls -la' } }, { type: 'tool_use', id: 'f', name: 'read_file', input: { path: 'src/read-only.ts' } }] },
      { role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 'e', content: '', isError: false }] },
      { role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 'f', content: '', isError: false }] },
      { role: 'assistant', blocks: [text('[ARTIFACT] Created src/auth/jwt.ts\n[NEXT] Add the refresh endpoint\n```\n[NEXT] not this one\n```')] },
    ];
    const summary = [
      'The agent fixed the token expiry. We decided to keep sessions stateless. The tests pass.',
      'Next steps:',
      '- Write the migration guide',
      '- Run the full suite',
      '',
      'Next step: tag the release',
    ].join('\n');
    expect(checkpointFacts(summary, span)).toEqual({
      keyDecisions: ['Use JWT for authentication', 'We decided to keep sessions stateless.'],
      filesModified: ['/repo/src/auth.ts', 'src/fields.py', 'out/log.txt', 'conf.ini', 'src/auth/jwt.ts'],
      nextSteps: ['Add the refresh endpoint', 'Write the migration guide', 'Run the full suite', 'tag the release'],
    });
  });

  it('is deterministic and empty for a span with no facts', () => {
    expect(checkpointFacts('Looked around.', [{ role: 'assistant', blocks: [text('Hmm.')] }])).toEqual({ keyDecisions: [], filesModified: [], nextSteps: [] });
  });
});

describe('checkpoint-aging properties (Guarantees 2, 3, 5, 8 and aging)', () => {
  const sessionArb = fc.record({
    openaiShape: fc.boolean(),
    mixed: fc.boolean(),
    observations: fc.boolean(),
    thinking: fc.boolean(),
    pinEvery: fc.option(fc.integer({ min: 4, max: 15 }), { nil: undefined }),
    steps: fc.integer({ min: 20, max: 90 }),
    size: fc.integer({ min: 1, max: 25 }),
    talk: fc.integer({ min: 0, max: 6 }),
    every: fc.integer({ min: 15, max: 40 }),
    latest: fc.integer({ min: 0, max: 8 }),
    preserve: fc.constantFrom(0, 500, 2_048),
  });

  it('over growing sessions compacted again and again: valid, user texts kept, never more tokens, deterministic; levels only rise and old checkpoints never change', async () => {
    await fc.assert(
      fc.asyncProperty(sessionArb, async (o) => {
        const all = [SYSTEM, FIRST_USER, ...agentSession(o.steps, o)];
        const counted = toSession(all, 1, quickCount);
        const quick = { budget: 6_000, countMessage: quickCount, countText: quickCountText };
        const summarizer = () => new TargetSummarizer(30_000, { countText: quickCountText });
        const p = params({ preserveRecentTokens: o.preserve, minSavingTokens: 300, protection: { ...CHECKPOINT_AGING_DEFAULTS.protection, latestMessages: o.latest } });
        let prefix: VersionPrefix = EMPTY_PREFIX;
        for (let n = o.every; n <= all.length + o.every - 1; n += o.every) {
          // A compaction covers a history whose tool calls are answered (a pending call is not in the context).
          let end = Math.min(n, all.length);
          while (all[end - 1].blocks.some((b) => b.type === 'tool_use')) end -= 1;
          const history = counted.slice(0, end);
          const before = deepFreeze(prefix);
          const snapshot = JSON.stringify(before);
          const a = await compactCheckpointAging(inputOf(history, summarizer(), before, quick), p);
          const b = await compactCheckpointAging(inputOf(history, summarizer(), before, quick), p);
          // G8: same input, same outcome.
          expect(b).toEqual(a);
          expect(JSON.stringify(before)).toBe(snapshot);
          // G5.
          expect(a.tokensAfter).toBeLessThanOrEqual(a.tokensBefore);
          if (a.status !== 'succeeded') expect(a.prefix).toBe(before);
          else expect(a.tokensBefore - a.tokensAfter).toBeGreaterThanOrEqual(300);
          const context = applyPrefix(a.prefix, history, (c) => quickCount(checkpointMessage(c)));
          expect(tokensOf(context)).toBe(a.tokensAfter);
          // G2.
          expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
          // G3: system prompt, user texts, pinned messages, the latest messages.
          expect(context[0]).toEqual(history[0]);
          expectUserTextsKept(history, context);
          for (const m of history) if (m.message.pinned) expect(context).toContainEqual(m);
          for (const m of history.slice(history.length - o.latest)) expect(context).toContainEqual(m);
          // Aging: every old checkpoint is either still there unchanged, or covered by one of a higher (or ultra) level.
          for (const old of before.checkpoints) {
            const now = a.prefix.checkpoints.find((c) => c.fromSeq <= old.fromSeq && c.toSeq >= old.toSeq) as Checkpoint;
            expect(now).toBeDefined();
            if (now.id === old.id) expect(now).toEqual(old);
            else expect(now.level).toBeGreaterThanOrEqual(Math.min(old.level + 1, ULTRA_LEVEL));
          }
          for (const c of a.prefix.checkpoints) expect(c.tokens).toBeLessThanOrEqual([1_200, 600, 300, 150][Math.min(c.level, ULTRA_LEVEL)]);
          expect(a.prefix.checkpoints.filter((c) => c.level >= ULTRA_LEVEL).length).toBeLessThanOrEqual(1);
          prefix = a.prefix;
        }
      }),
      { numRuns: 25, seed: 40404 },
    );
  });
});
