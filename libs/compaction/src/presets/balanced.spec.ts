import fc from 'fast-check';
import { countTextSync } from '@compactor/tokens';
import { Block, CanonicalMessage } from '../messages/canonical';
import { countableParts } from '../messages/countable';
import { providerValidityProblems } from '../messages/provider-valid';
import { LlmError, renderTranscript, SummarizeRequest, Summarizer } from '../llm/summarizer';
import { BALANCED_DEFAULTS, BalancedParams, compactBalanced } from './balanced';
import { CompactionInput } from '../engine/types';
import { CountMessage, SessionMessage } from '../engine/types';
import { applyPrefix, checkpointMessage, EMPTY_PREFIX, VersionPrefix } from '../engine/version';

const countText = (t: string) => countTextSync(t, 'o200k_base');
const count: CountMessage = (m) => 3 + countableParts(m).texts.reduce((n, t) => n + countText(t), 0);
const text = (t: string): Block => ({ type: 'text', text: t });

/** A deterministic extractive stand-in for the LLM (this lib is pure; the real providers are tested in libs/llm). */
class TruncatingSummarizer implements Summarizer {
  readonly provider = 'test';
  readonly model = 'truncate';
  readonly deterministic = true;
  calls: SummarizeRequest[] = [];
  constructor(
    readonly contextWindow = 1_000_000,
    private readonly failWith?: LlmError,
  ) {}
  async summarize(request: SummarizeRequest) {
    this.calls.push(request);
    if (this.failWith) throw this.failWith;
    const words = renderTranscript(request.messages).split(/\s+/);
    const out = words.slice(0, Math.max(5, Math.floor(request.targetTokens / 2))).join(' ');
    return { text: out, usage: { inputTokens: words.length, outputTokens: Math.floor(request.targetTokens / 2), costUsd: 0 }, provider: 'test', model: 'truncate', attempts: 1 };
  }
}

const file = (label: string, lines: number) => Array.from({ length: lines }, (_, i) => `${label}:${i}: const value_${i} = compute(${i}, "${label}");`).join('\n');

function agentSession(steps: number, opts: { openaiShape?: boolean; parallel?: boolean; size?: number; talk?: number } = {}): CanonicalMessage[] {
  const out: CanonicalMessage[] = [
    { role: 'system', blocks: [text('You are a coding agent. Work in /repo.')] },
    { role: 'user', blocks: [text('Fix the failing test in src/app.ts. Never edit the migrations.')] },
  ];
  for (let k = 0; k < steps; k += 1) {
    const ids = opts.parallel && k % 3 === 0 ? [`c${k}a`, `c${k}b`] : [`c${k}`];
    const thought = Array.from({ length: opts.talk ?? 0 }, (_, i) => `Reasoning ${k}.${i}: the value of option_${i % 7} in src/f${k}.ts looks wrong.`).join(' ');
    out.push({ role: 'assistant', blocks: [text(`Step ${k}: reading more files. ${thought}`), ...ids.map((id): Block => ({ type: 'tool_use', id, name: k % 2 ? 'bash' : 'read_file', input: { k } }))] });
    const results = ids.map((id): Block => ({ type: 'tool_result', toolUseId: id, content: file(`src/f${k}.ts`, opts.size ?? 40), isError: k % 5 === 4 }));
    if (opts.openaiShape) for (const r of results) out.push({ role: 'tool', blocks: [r] });
    else out.push({ role: 'user', blocks: results });
  }
  out.push({ role: 'assistant', blocks: [text('Now I know where the bug is.')] });
  return out;
}

const toSession = (messages: CanonicalMessage[], from = 1): SessionMessage[] => messages.map((message, i) => ({ seq: from + i, message, tokens: count(message) }));
const input = (history: SessionMessage[], budget: number, summarizer: Summarizer, prefix: VersionPrefix = EMPTY_PREFIX): CompactionInput => ({
  history,
  prefix,
  budget,
  summarizer,
  countMessage: count,
  countText,
});
const contextOf = (history: SessionMessage[], prefix: VersionPrefix) => applyPrefix(prefix, history, (c) => count(checkpointMessage(c)));
const tokensOf = (xs: SessionMessage[]) => xs.reduce((n, m) => n + m.tokens, 0);

describe('balanced preset (SPEC.md Policies: mask first, summarize only if still over the band)', () => {
  it('masks old tool outputs and stops there when that is enough', async () => {
    const history = toSession(agentSession(30));
    const before = tokensOf(history);
    const summarizer = new TruncatingSummarizer();
    const out = await compactBalanced(input(history, Math.ceil(before / 0.9), summarizer));
    expect(out.status).toBe('succeeded');
    expect(out.steps).toEqual(['mask']);
    expect(summarizer.calls).toHaveLength(0);
    // Masking, oldest first, stops at the band's lower edge (summarizeDownTo, 70%): the budget above it keeps newer outputs whole.
    const budget = Math.ceil(before / 0.9);
    expect(out.tokensAfter).toBeLessThanOrEqual(0.7 * budget);
    expect(out.tokensAfter).toBeGreaterThan(0.5 * budget);
    const masked = Object.keys(out.prefix.treatments).map(Number);
    const outputs = history.filter((m) => m.message.blocks.some((b) => b.type === 'tool_result')).map((m) => m.seq);
    // The masked outputs are the oldest ones, and some outputs older than the latest 10 turns stay whole.
    expect(masked).toEqual(outputs.slice(0, masked.length));
    expect(masked.length).toBeLessThan(outputs.length - 10);
    expect(out.events.map((e) => e.type)).toEqual(['compressed']);
  });

  it('"Compact now" masks every output older than the latest turns, not only down to the band', async () => {
    const history = toSession(agentSession(30));
    const before = tokensOf(history);
    const budget = Math.ceil(before / 0.9);
    const auto = await compactBalanced(input(history, budget, new TruncatingSummarizer()));
    const manual = await compactBalanced({ ...input(history, budget, new TruncatingSummarizer()), trigger: 'manual' });
    expect(manual.status).toBe('succeeded');
    expect(manual.tokensAfter).toBeLessThan(0.6 * budget);
    expect(Object.keys(manual.prefix.treatments).length).toBeGreaterThan(Object.keys(auto.prefix.treatments).length);
  });

  it('summarizes the oldest unprotected span into a checkpoint when masking is not enough, keeping the latest 6 messages', async () => {
    const history = toSession(agentSession(40, { size: 1, talk: 12 }));
    const budget = Math.ceil(tokensOf(history) / 0.9);
    const out = await compactBalanced(input(history, budget, new TruncatingSummarizer()));
    expect(out.status).toBe('succeeded');
    expect(out.steps).toEqual(['mask', 'summarize']);
    expect(out.prefix.checkpoints).toHaveLength(1);
    const context = contextOf(history, out.prefix);
    expect(context[0].message.role).toBe('system');
    expect(context[1].message.tags).toEqual(['checkpoint']);
    // The latest 6 messages (widened to their tool exchange) are there, unchanged.
    for (const m of history.slice(-6)) expect(context).toContainEqual(m);
    expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
    expect(out.events.map((e) => e.line).join('\n')).toMatch(/Summarized \d+ messages → 1 checkpoint \(saved ~[\d,]+ tokens\)/);
  });

  it('records a saving below the minimum as skipped, with the previous prefix (no compaction loops)', async () => {
    const history = toSession(agentSession(2, { size: 3 }));
    const out = await compactBalanced(input(history, 1_000_000, new TruncatingSummarizer()));
    expect(out.status).toBe('skipped');
    expect(out.reason).toMatch(/^saving-below-minimum/);
    expect(out.prefix).toBe(EMPTY_PREFIX);
    expect(out.tokensAfter).toBe(out.tokensBefore);
    expect(out.events.map((e) => e.type)).toEqual(['compression-skipped']);
  });

  it('leaves the previous context in place when the summarizer fails', async () => {
    const history = toSession(agentSession(40, { size: 1, talk: 12 }));
    const out = await compactBalanced(input(history, Math.ceil(tokensOf(history) / 0.9), new TruncatingSummarizer(1_000_000, new LlmError('server', 'upstream 500', 3, 500))));
    expect(out).toMatchObject({ status: 'failed', reason: 'llm-server', prefix: EMPTY_PREFIX });
    expect(out.events.map((e) => e.type)).toEqual(['compression-error']);
  });

  it('chunks a span larger than the summarizer window, then merges the pieces', async () => {
    const history = toSession(agentSession(40, { size: 1, talk: 12 }));
    const summarizer = new TruncatingSummarizer(6_000);
    const out = await compactBalanced(input(history, Math.ceil(tokensOf(history) / 0.9), summarizer));
    expect(out.status).toBe('succeeded');
    const kinds = summarizer.calls.map((c) => c.kind);
    expect(kinds.filter((k) => k === 'chunk').length).toBeGreaterThan(1);
    expect(kinds.at(-1)).toBe('merge');
  });

  it('properties over growing sessions in both shapes: G2 valid, G5 never more tokens, G3 latest messages kept, G8 deterministic', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({ openaiShape: fc.boolean(), parallel: fc.boolean(), steps: fc.integer({ min: 3, max: 50 }), size: fc.integer({ min: 1, max: 60 }), talk: fc.integer({ min: 0, max: 12 }), fill: fc.double({ min: 0.5, max: 1.5, noNaN: true }) }),
        async ({ openaiShape, parallel, steps, size, talk, fill }) => {
          const history = toSession(agentSession(steps, { openaiShape, parallel, size, talk }));
          const budget = Math.max(2_000, Math.ceil(tokensOf(history) / fill));
          const params: BalancedParams = { ...BALANCED_DEFAULTS, maskKeepLatestTurns: 3 };
          const a = await compactBalanced(input(history, budget, new TruncatingSummarizer(20_000)), params);
          const b = await compactBalanced(input(history, budget, new TruncatingSummarizer(20_000)), params);
          expect(b).toEqual(a);
          expect(a.tokensAfter).toBeLessThanOrEqual(a.tokensBefore);
          const context = contextOf(history, a.prefix);
          expect(tokensOf(context)).toBe(a.tokensAfter);
          expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
          for (const m of history.slice(-BALANCED_DEFAULTS.protection.latestMessages)) expect(context).toContainEqual(m);
          // The system prompt and the first user instruction are never summarized away unless outside protection; the system prompt always stays.
          expect(context[0]).toEqual(history[0]);
          if (a.status !== 'succeeded') expect(a.prefix).toBe(EMPTY_PREFIX);
        },
      ),
      { numRuns: 60, seed: 4242 },
    );
  });

  it('keeps the context valid and shrinking across repeated compactions while messages keep arriving (checkpoints age)', async () => {
    const all = agentSession(120, { size: 10, talk: 8 });
    let prefix = EMPTY_PREFIX;
    const budget = 20_000;
    let seen = 0;
    for (let n = 20; n <= all.length; n += 20) {
      const history = toSession(all.slice(0, n));
      seen = n;
      if (tokensOf(contextOf(history, prefix)) < 0.8 * budget) continue;
      const out = await compactBalanced(input(history, budget, new TruncatingSummarizer(), prefix));
      expect(out.tokensAfter).toBeLessThanOrEqual(out.tokensBefore);
      if (out.status === 'succeeded') prefix = out.prefix;
      const context = contextOf(history, prefix);
      expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
      expect(prefix.checkpoints.reduce((s, c) => s + c.tokens, 0)).toBeLessThanOrEqual(0.3 * budget * 1.25);
    }
    expect(seen).toBe(all.length - (all.length % 20));
    expect(prefix.checkpoints.length).toBeGreaterThan(0);
    expect(prefix.checkpoints.some((c) => c.level > 0)).toBe(true);
  });
});

describe('balanced at ingest (SPEC.md Policies: per-result steps at ingest, offload of large results)', () => {
  it('an ingest run offloads a result above offloadAboveTokens, whatever its age, byte-exact, and does nothing else', async () => {
    const messages = agentSession(4, { size: 30 });
    // The newest result is huge: offloaded even though it is in the protected latest messages.
    const big = file('src/huge.ts', 2_000);
    const last = messages.length - 2;
    messages[last] = { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'c3', content: big, isError: false }] };
    const history = toSession(messages);
    const summarizer = new TruncatingSummarizer();
    const out = await compactBalanced({ ...input(history, 200_000, summarizer), trigger: 'ingest' }, BALANCED_DEFAULTS);
    expect(out.status).toBe('succeeded');
    expect(out.steps).toEqual(['offload']);
    expect(summarizer.calls).toHaveLength(0);
    expect(out.artifacts).toHaveLength(1);
    expect(out.artifacts[0].content).toBe(big);
    const seq = history[last].seq;
    const t = out.prefix.treatments[seq];
    expect(t?.kind).toBe('offloaded');
    expect(Object.keys(out.prefix.treatments)).toEqual([String(seq)]);
    const ctx = contextOf(history, out.prefix);
    expect(JSON.stringify(ctx)).toContain(out.artifacts[0].id);
    expect(providerValidityProblems(ctx.map((m) => m.message))).toEqual([]);
    expect(out.tokensAfter).toBeLessThan(out.tokensBefore);
  });

  it('a later threshold run keeps the artifact reference (masking never hides which artifact holds the output)', async () => {
    const messages = agentSession(30, { size: 60 });
    messages[3] = { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'c0', content: file('src/huge.ts', 2_000), isError: false }] };
    const history = toSession(messages);
    const first = await compactBalanced({ ...input(history, 200_000, new TruncatingSummarizer()), trigger: 'ingest' }, BALANCED_DEFAULTS);
    const id = first.artifacts[0].id;
    const second = await compactBalanced(input(history, 12_000, new TruncatingSummarizer(), first.prefix), { ...BALANCED_DEFAULTS, summarizeAbove: 100 });
    expect(second.status).toBe('succeeded');
    expect(second.prefix.treatments[4]).toMatchObject({ kind: 'offloaded', artifactIds: [id] });
    expect(JSON.stringify(contextOf(history, second.prefix))).toContain(id);
  });
});

describe('balanced summarizes only what the budget needs', () => {
  it('the checkpoint takes the oldest span down to summarizeDownTo; later unprotected messages stay verbatim, pairs intact', async () => {
    const history = toSession(agentSession(40, { size: 60, talk: 30 }));
    const before = tokensOf(history);
    const budget = Math.floor(before / 1.5);
    const params: BalancedParams = { ...BALANCED_DEFAULTS, maskAllBeforeSummary: false, maskKeepLatestTurns: 100, summarizeAbove: 0.6, summarizeDownTo: 0.5 };
    const out = await compactBalanced(input(history, budget, new TruncatingSummarizer()), params);
    expect(out.status).toBe('succeeded');
    const [checkpoint] = out.prefix.checkpoints;
    const summarized = Object.entries(out.prefix.treatments).filter(([, t]) => t.kind === 'summarized').map(([seq]) => Number(seq));
    // Not everything summarizable went: messages after the checkpoint and before the protected tail are kept as they were.
    const lastProtected = history.length - 6;
    expect(Math.max(...summarized)).toBeLessThan(lastProtected - 10);
    expect(checkpoint.toSeq).toBe(Math.max(...summarized));
    const ctx = contextOf(history, out.prefix);
    expect(ctx.some((m) => m.seq > checkpoint.toSeq && m.seq < lastProtected && !out.prefix.treatments[m.seq])).toBe(true);
    expect(providerValidityProblems(ctx.map((m) => m.message))).toEqual([]);
    // Down to summarizeDownTo, give or take how far the summary overshoots its target.
    expect(out.tokensAfter).toBeLessThanOrEqual(Math.floor(0.5 * budget) + Math.max(0, checkpoint.tokens - Math.floor(0.1 * budget)));
    expect(out.tokensAfter).toBeGreaterThan(Math.floor(0.4 * budget));
  });
});

describe('balanced: aging shortens prose, never the top of the ledger (SPEC.md "Facts ledger")', () => {
  /** Echoes the transcript's error lines in a first summary (so its Facts section needs none); an aging call answers one bland line. */
  class ErrorEchoingSummarizer implements Summarizer {
    readonly provider = 'test';
    readonly model = 'echo-errors';
    readonly deterministic = true;
    kinds: string[] = [];
    readonly contextWindow = 1_000_000;
    async summarize(request: SummarizeRequest) {
      this.kinds.push(request.kind);
      const transcript = renderTranscript(request.messages);
      const errors = transcript.split('\n').filter((l) => l.includes('Error'));
      // A first summary as long as its target (aging then has to shorten it): the error lines, then the transcript's opening words.
      const words = transcript.split(/\s+/).slice(0, Math.floor(request.targetTokens * 0.6));
      const out = request.kind === 'merge' ? 'The agent kept reading files.' : [...errors.slice(0, 3), words.join(' ')].join('\n');
      return { text: out, usage: { inputTokens: 100, outputTokens: 20, costUsd: 0 }, provider: 'test', model: 'echo-errors', attempts: 1 };
    }
  }
  // The exception pydicom-1458__gpt4.traj (testdata/swe-agent-trajectories) runs into.
  const ERROR = 'AttributeError: Unable to convert the pixel data as the following required elements are missing from the dataset: PixelRepresentation';

  it('an error the first summary said in its prose moves to the Facts section when aging rewrites that prose', async () => {
    const all = agentSession(120, { size: 10, talk: 8 });
    // The agent's second tool output fails with the error.
    const failing = all.findIndex((m, i) => i > 3 && m.blocks.some((b) => b.type === 'tool_result'));
    all[failing] = { ...all[failing], blocks: all[failing].blocks.map((b) => (b.type === 'tool_result' ? { ...b, content: `Traceback (most recent call last):\n  File "reproduce.py", line 5, in <module>\n${ERROR}`, isError: true } : b)) };
    const summarizer = new ErrorEchoingSummarizer();
    let prefix = EMPTY_PREFIX;
    const budget = 20_000;
    for (let n = 20; n <= all.length; n += 20) {
      const history = toSession(all.slice(0, n));
      if (tokensOf(contextOf(history, prefix)) < 0.8 * budget) continue;
      const out = await compactBalanced(input(history, budget, summarizer, prefix));
      if (out.status === 'succeeded') prefix = out.prefix;
    }
    expect(summarizer.kinds).toContain('merge');
    const oldest = prefix.checkpoints[0];
    expect(oldest.level).toBeGreaterThan(0);
    expect(oldest.text).not.toContain('PixelRepresentation');
    expect(oldest.facts).toContain('PixelRepresentation');
  });
});
