import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { countTextSync } from '@compactor/tokens';
import { Block, CanonicalMessage, ToolResultBlock } from '../messages/canonical';
import { countableParts } from '../messages/countable';
import { parseOpenAIMessages } from '../messages/openai';
import { makeProviderValid, providerValidityProblems } from '../messages/provider-valid';
import { LlmError, renderTranscript, SummarizeRequest, Summarizer } from '../llm/summarizer';
import { resolveParams } from '../policy/params';
import { presetTrigger } from '../policy/presets';
import { compactFactor3, FACTOR3, FACTOR3_DEFAULTS, FACTOR3_INSTRUCTIONS, Factor3Params, factor3Protection } from './factor3';
import { CompactionInput, CountMessage, SessionMessage } from '../engine/types';
import { applyPrefix, checkpointMessage, EMPTY_PREFIX, VersionPrefix } from '../engine/version';

const countText = (t: string) => countTextSync(t, 'o200k_base');
const count: CountMessage = (m) => 3 + countableParts(m).texts.reduce((n, t) => n + countText(t), 0);
const text = (t: string): Block => ({ type: 'text', text: t });

/** A deterministic extractive stand-in for the LLM: the first words of the transcript, about targetTokens/2 of them. */
class TruncatingSummarizer implements Summarizer {
  readonly provider = 'test';
  readonly model = 'truncate';
  readonly deterministic = true;
  calls: SummarizeRequest[] = [];
  constructor(
    readonly contextWindow = 1_000_000,
    private readonly failWith?: LlmError,
    private readonly answer?: (request: SummarizeRequest) => string,
  ) {}
  async summarize(request: SummarizeRequest) {
    this.calls.push(request);
    if (this.failWith) throw this.failWith;
    const words = renderTranscript(request.messages).split(/\s+/);
    const out = this.answer ? this.answer(request) : words.slice(0, Math.max(5, Math.floor(request.targetTokens / 2))).join(' ');
    return { text: out, usage: { inputTokens: words.length, outputTokens: 10, costUsd: 0 }, provider: 'test', model: 'truncate', attempts: 1 };
  }
}

const file = (label: string, lines: number) => Array.from({ length: lines }, (_, i) => `${label}:${i}: const value_${i} = compute(${i}, "${label}");`).join('\n');

function agentSession(steps: number, opts: { openaiShape?: boolean; parallel?: boolean; size?: number; talk?: number } = {}): CanonicalMessage[] {
  const out: CanonicalMessage[] = [
    { role: 'system', blocks: [text('You are a coding agent. Work in /repo.')] },
    { role: 'user', blocks: [text('Fix the failing test in src/app.ts.')] },
  ];
  for (let k = 0; k < steps; k += 1) {
    const ids = opts.parallel && k % 3 === 0 ? [`c${k}a`, `c${k}b`] : [`c${k}`];
    const thought = Array.from({ length: opts.talk ?? 0 }, (_, i) => `Reasoning ${k}.${i}: option_${i % 7} in src/f${k}.ts looks wrong.`).join(' ');
    out.push({ role: 'assistant', blocks: [text(`Step ${k}: reading more files. ${thought}`), ...ids.map((id): Block => ({ type: 'tool_use', id, name: k % 2 ? 'bash' : 'read_file', input: { k } }))] });
    const results = ids.map((id): Block => ({ type: 'tool_result', toolUseId: id, content: file(`src/f${k}.ts`, opts.size ?? 40), isError: k % 5 === 4 }));
    if (opts.openaiShape) for (const r of results) out.push({ role: 'tool', blocks: [r] });
    else out.push({ role: 'user', blocks: results });
  }
  out.push({ role: 'assistant', blocks: [text('Now I know where the bug is.')] });
  return out;
}

const toSession = (messages: CanonicalMessage[], from = 1): SessionMessage[] => messages.map((message, i) => ({ seq: from + i, message, tokens: count(message) }));
const input = (history: SessionMessage[], budget: number, summarizer: Summarizer, prefix: VersionPrefix = EMPTY_PREFIX): CompactionInput => ({ history, prefix, budget, summarizer, countMessage: count, countText });
const contextOf = (history: SessionMessage[], prefix: VersionPrefix) => applyPrefix(prefix, history, (c) => count(checkpointMessage(c)));
const tokensOf = (xs: SessionMessage[]) => xs.reduce((n, m) => n + m.tokens, 0);
const P = (over: Partial<Factor3Params> = {}): Factor3Params => ({ ...FACTOR3_DEFAULTS, ...over });
const fmt = (n: number) => n.toLocaleString('en-US');

/** Seed 000's "Example: Before/After" conversation, with the database tool calls. */
function salesSession(): CanonicalMessage[] {
  const rows = (n: number, q?: number) => JSON.stringify(Array.from({ length: n }, (_, i) => ({ day: i + 1, quarter: q ?? (i % 4) + 1, revenue: 1000 + i * 13 })));
  return [
    { role: 'system', blocks: [text('You are a sales analyst.')] },
    { role: 'user', blocks: [text('Can you analyze the latest sales data?')] },
    { role: 'assistant', blocks: [text("I'll fetch the sales data from the database."), { type: 'tool_use', id: 'q1', name: 'database_query', input: {} }] },
    { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'q1', content: rows(60), isError: false }] },
    { role: 'assistant', blocks: [text('Here is the analysis: revenue grows steadily, Q3 leads.')] },
    { role: 'user', blocks: [text('What about Q3 specifically?')] },
    { role: 'assistant', blocks: [text('Let me filter for Q3...'), { type: 'tool_use', id: 'q2', name: 'database_query', input: { quarter: 3 } }] },
    { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'q2', content: rows(30, 3), isError: false }] },
    { role: 'assistant', blocks: [text('Q3 shows 15% growth.')] },
    { role: 'user', blocks: [text('Compare to Q2?')] },
    { role: 'assistant', blocks: [text("I'll fetch Q2 data...")] },
  ];
}

describe('factor3 preset (seed 000 "Context Compression (Factor 3)")', () => {
  it('seed 000: the preset is named factor3, triggers at 50% of the budget, and its prompt is the seed\'s word for word', () => {
    expect(FACTOR3).toMatchObject({ name: 'factor3', source: 'seed 000', defaults: FACTOR3_DEFAULTS, run: compactFactor3 });
    expect(presetTrigger({ preset: 'factor3', overrides: {} })).toEqual({ fraction: 0.5, base: 'budget' });
    expect(FACTOR3_DEFAULTS.triggerFraction).toBe(0.5);
    // The trigger can be overridden per session: resolveParams accepts it and presetTrigger uses it.
    const over = resolveParams(FACTOR3_DEFAULTS, { source: 'policy.overrides', values: { triggerFraction: 0.4 } });
    expect(presetTrigger({ preset: 'factor3', overrides: { triggerFraction: over.triggerFraction } }).fraction).toBe(0.4);
    expect(FACTOR3_INSTRUCTIONS).toBe('Summarize the following conversation, preserving:\n- Key decisions made\n- Unresolved issues\n- Current task state\nBe concise.');
    expect(FACTOR3_DEFAULTS.protection.latestMessages).toBe(3);
  });

  it('seed 000: every parameter can be overridden per session through resolveParams (verbosity, latest messages, post-processing names)', () => {
    const p = resolveParams(FACTOR3_DEFAULTS, { source: 'policy.overrides', values: { verbosity: 'debug', protection: { latestMessages: 2 }, postprocess: { toolNames: { database: ['warehouse'] } } } });
    expect(p.verbosity).toBe('debug');
    expect(p.protection).toEqual({ ...FACTOR3_DEFAULTS.protection, latestMessages: 2 });
    expect(p.postprocess.toolNames.database).toEqual(['warehouse']);
    expect(p.postprocess.toolNames.webSearch).toEqual(FACTOR3_DEFAULTS.postprocess.toolNames.webSearch);
  });

  it('seed 000: summarizes everything but the latest 3 messages into one message starting with [SUMMARY], using the seed\'s prompt', async () => {
    const history = toSession(agentSession(30, { talk: 6 }));
    const summarizer = new TruncatingSummarizer();
    const out = await compactFactor3(input(history, 40_000, summarizer));
    expect(out.status).toBe('succeeded');
    expect(out.steps).toEqual(['summarize']);
    expect(summarizer.calls).toHaveLength(1);
    expect(summarizer.calls[0]).toMatchObject({ kind: 'checkpoint', instructions: FACTOR3_INSTRUCTIONS });
    expect(out.prefix.checkpoints).toHaveLength(1);
    const [ckpt] = out.prefix.checkpoints;
    expect(ckpt.text.startsWith('[SUMMARY]: ')).toBe(true);
    expect(ckpt).toMatchObject({ fromSeq: 2, toSeq: history.length - 3, level: 0 });
    const context = contextOf(history, out.prefix);
    // System prompt, the [SUMMARY] checkpoint, then the latest 3 messages exactly as they were.
    expect(context).toHaveLength(5);
    expect(context[0]).toEqual(history[0]);
    expect(context[1].message.tags).toEqual(['checkpoint']);
    expect((context[1].message.blocks[0] as { text: string }).text).toMatch(/^\[CHECKPOINT ckpt_[0-9a-f]{20} · messages 2–\d+\]\n\[SUMMARY\]: /);
    expect(context.slice(2)).toEqual(history.slice(-3));
    expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
    expect(out.tokensAfter).toBe(tokensOf(context));
  });

  it('seed 000: logs "Summarized N messages → 1 summary (saved ~X tokens)" and the token-usage monitoring lines, without a clock value', async () => {
    const history = toSession(agentSession(30, { talk: 6 }));
    const budget = 40_000;
    const out = await compactFactor3(input(history, budget, new TruncatingSummarizer()));
    const saved = out.tokensBefore - out.tokensAfter;
    expect(saved).toBeGreaterThan(1_000);
    const pct = (n: number) => `${Number(((100 * n) / budget).toFixed(1))}%`;
    expect(out.events).toEqual([
      { type: 'checkpoint-created', line: `Summarized ${history.length - 4} messages → 1 summary (saved ~${fmt(saved)} tokens)` },
      {
        type: 'compressed',
        line: `Token usage: Pre-summarization: ${fmt(out.tokensBefore)} / 40,000 (${pct(out.tokensBefore)}) · Post-summarization: ${fmt(out.tokensAfter)} / 40,000 (${pct(out.tokensAfter)}) · Savings: ${fmt(saved)} tokens (${Math.round((100 * saved) / out.tokensBefore)}% reduction)`,
      },
    ]);
    expect(out.events[0].line).toMatch(/^Summarized \d+ messages → 1 summary \(saved ~\d{1,3}(,\d{3})* tokens\)$/);
    expect(out.events.map((e) => e.line).join('\n')).not.toMatch(/\d{4}-\d{2}-\d{2}T/);
  });

  it('seed 000 "Example: Before/After": the sales conversation becomes a summary plus the latest messages', async () => {
    const history = toSession(salesSession());
    const summarizer = new TruncatingSummarizer(1_000_000, undefined, () => 'User requested sales analysis. Fetched full dataset, analyzed Q3 (15% growth), now comparing to Q2.');
    const out = await compactFactor3(input(history, 8_000, summarizer), P({ minSavingTokens: 0, minSavingFraction: 0 }));
    expect(out.status).toBe('succeeded');
    const context = contextOf(history, out.prefix).map((m) => renderTranscript([m.message]));
    expect(context).toEqual([
      'SYSTEM: You are a sales analyst.',
      expect.stringMatching(/^SYSTEM: \[CHECKPOINT ckpt_\w+ · messages 2–8\]\n\[SUMMARY\]: User requested sales analysis\. Fetched full dataset, analyzed Q3 \(15% growth\), now comparing to Q2\.$/),
      'ASSISTANT: Q3 shows 15% growth.',
      'USER: Compare to Q2?',
      "ASSISTANT: I'll fetch Q2 data...",
    ]);
    // The summarizer read the whole older conversation, tool results included (seed 000: "Include: User/assistant message pairs, tool results").
    const transcript = renderTranscript(summarizer.calls[0].messages);
    expect(transcript).toContain('Can you analyze the latest sales data?');
    expect(transcript).toContain('[tool result]');
    expect(transcript).not.toContain('You are a sales analyst.');
    expect(out.events[0].line).toMatch(/^Summarized 7 messages → 1 summary \(saved ~[\d,]+ tokens\)$/);
  });

  it('seed 000 "NEVER summarize": system prompts and persona definitions, SESSION_LOG content, active state checkpoints, user constraints and pinned messages stay', async () => {
    const msgs = agentSession(24, { talk: 6 });
    const persona: CanonicalMessage = { role: 'user', tags: ['persona'], blocks: [text('Persona: you are Ada, a careful Rust reviewer. '.repeat(3))] };
    const constraint: CanonicalMessage = { role: 'user', blocks: [text('Never edit the migrations, and you must keep the public API stable.')] };
    const requirement: CanonicalMessage = { role: 'user', tags: ['requirement'], blocks: [text('Ship by Friday; coverage over 80%.')] };
    const state: CanonicalMessage = { role: 'assistant', tags: ['state'], blocks: [text('STATE: step 3 of 7, branch fix/app-test.')] };
    const pinned: CanonicalMessage = { role: 'user', pinned: true, blocks: [text('Remember: the staging DB is read-only.')] };
    const logCall: CanonicalMessage = { role: 'assistant', blocks: [text('Checking the log.'), { type: 'tool_use', id: 'log1', name: 'read_file', input: { path: 'SESSION_LOG.md' } }] };
    const logResult: CanonicalMessage = { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'log1', content: '## Token Usage\n- Pre-summarization: 4,200 / 8,000 (52.5%)', isError: false }] };
    const logText: CanonicalMessage = { role: 'user', blocks: [text('# SESSION_LOG\n- 10:00 started task')] };
    // Interleave them with the agent's steps, well before the latest 3 messages.
    const all = [...msgs.slice(0, 2), persona, constraint, ...msgs.slice(2, 8), requirement, state, pinned, ...msgs.slice(8, 14), logCall, logResult, logText, ...msgs.slice(14)];
    const history = toSession(all);
    const out = await compactFactor3(input(history, 40_000, new TruncatingSummarizer()));
    expect(out.status).toBe('succeeded');
    const context = contextOf(history, out.prefix);
    for (const kept of [persona, constraint, requirement, state, pinned, logCall, logResult, logText, all[0]]) {
      expect(context.map((m) => m.message)).toContainEqual(kept);
    }
    for (const m of history.slice(-3)) expect(context).toContainEqual(m);
    expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
    // The same protection comes from the one function the stage consults.
    const protection = factor3Protection(history, FACTOR3_DEFAULTS);
    expect(protection.userText.has(4)).toBe(true);
    expect([3, 11, 12, 13].every((seq) => protection.whole.has(seq))).toBe(true);
  });

  it('seed 000: a long pasted user text or one tagged observation is not a stated constraint; constraint phrases match whole words only', () => {
    const history = toSession([
      { role: 'user', blocks: [text('Never push to main.')] },
      { role: 'user', blocks: [text(`Log output: ${'the job must retry. '.repeat(80)}`)] },
      { role: 'user', tags: ['observation'], blocks: [text('You must not see this as a constraint.')] },
      { role: 'user', blocks: [text('The mustard is nevertheless always... no wait.')] },
      { role: 'user', blocks: [text('Tell me about the mustard in Neverland.')] },
      { role: 'assistant', blocks: [text('ok')] },
      { role: 'user', blocks: [text('a')] },
      { role: 'assistant', blocks: [text('b')] },
      { role: 'user', blocks: [text('c')] },
    ]);
    const p = factor3Protection(history, FACTOR3_DEFAULTS);
    expect([...p.userText].sort((a, b) => a - b)).toEqual([1, 4]);
  });

  it('seed 000: the latest 3 messages are widened to their whole tool exchange so no tool pair is split', async () => {
    const msgs = agentSession(20, { openaiShape: true, parallel: true, talk: 4 });
    // End on an exchange of 3 parallel calls: the "latest 3" are its 3 tool messages, and its assistant message comes with them.
    const ids = ['z1', 'z2', 'z3'];
    msgs.push({ role: 'assistant', blocks: [text('Three more reads.'), ...ids.map((id): Block => ({ type: 'tool_use', id, name: 'read_file', input: { id } }))] });
    for (const id of ids) msgs.push({ role: 'tool', blocks: [{ type: 'tool_result', toolUseId: id, content: file(id, 30), isError: false }] });
    const history = toSession(msgs);
    const out = await compactFactor3(input(history, 40_000, new TruncatingSummarizer()));
    expect(out.status).toBe('succeeded');
    const context = contextOf(history, out.prefix);
    expect(context.slice(-4)).toEqual(history.slice(-4));
    expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
  });

  it('seed 000 "Debug verbosity": verbosity=debug disables compression (skipped, reason verbosity-debug, no LLM call) and post-processing', async () => {
    const history = toSession(agentSession(30, { talk: 6 }));
    const summarizer = new TruncatingSummarizer();
    const out = await compactFactor3(input(history, 40_000, summarizer), P({ verbosity: 'debug' }));
    expect(out).toMatchObject({ status: 'skipped', reason: 'verbosity-debug', prefix: EMPTY_PREFIX, llmCalls: 0 });
    expect(out.tokensAfter).toBe(out.tokensBefore);
    expect(summarizer.calls).toHaveLength(0);
    expect(out.events).toEqual([{ type: 'compression-skipped', line: 'Compaction skipped: verbosity-debug' }]);
    const big: SessionMessage = toSession([{ role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'w', content: file('big', 900), isError: false }] }])[0];
    const names = new Map([['w', 'read_file']]);
    expect(FACTOR3.ingest?.(big, P({ verbosity: 'debug' }), count, names)).toBeUndefined();
    expect(FACTOR3.ingest?.(big, P(), count, names)?.stage).toBe('file-read outlined');
  });

  it('seed 000: the ingest step is the selective tool post-processing and keeps the result\'s tool id and error flag', () => {
    const m = toSession([{ role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 'db', content: JSON.stringify(Array.from({ length: 500 }, (_, i) => ({ id: i, v: i * 2 }))), isError: false }] }])[0];
    const out = FACTOR3.ingest?.(m, FACTOR3_DEFAULTS, count, new Map([['db', 'database_query']]));
    const block = out?.message.message.blocks[0] as ToolResultBlock;
    expect(block).toMatchObject({ type: 'tool_result', toolUseId: 'db', isError: false });
    expect(String(block.content).split('\n')[0]).toBe('[database result: 500 rows; columns: id, v; 5 sample rows kept]');
  });

  it('seed 000: with 3 messages or fewer after the system prompt there is nothing to summarize (skipped, no LLM call)', async () => {
    const history = toSession([{ role: 'system', blocks: [text('sys')] }, { role: 'user', blocks: [text('hi')] }, { role: 'assistant', blocks: [text('hello')] }, { role: 'user', blocks: [text('go')] }]);
    const summarizer = new TruncatingSummarizer();
    const out = await compactFactor3(input(history, 1_000, summarizer), P({ minSavingTokens: 0 }));
    expect(out).toMatchObject({ status: 'skipped', reason: 'nothing-to-summarize', prefix: EMPTY_PREFIX });
    expect(summarizer.calls).toHaveLength(0);
  });

  it('Guarantee 5: when even an empty summary could not save the minimum, it is skipped without an LLM call', async () => {
    const history = toSession(agentSession(3, { size: 2 }));
    const summarizer = new TruncatingSummarizer();
    const out = await compactFactor3(input(history, 100_000, summarizer));
    expect(out.status).toBe('skipped');
    expect(out.reason).toMatch(/^saving-below-minimum \([\d,]+ < 5,000 tokens\)$/);
    expect(summarizer.calls).toHaveLength(0);
    expect(out.prefix).toBe(EMPTY_PREFIX);
  });

  it('Guarantee 5: a summary that saves less than the minimum, or nothing, is skipped with the previous prefix', async () => {
    const history = toSession(agentSession(30, { talk: 6 }));
    // A verbose summarizer: it echoes the whole transcript back.
    const echo = new TruncatingSummarizer(1_000_000, undefined, (r) => renderTranscript(r.messages));
    const out = await compactFactor3(input(history, 40_000, echo));
    expect(out).toMatchObject({ status: 'skipped', reason: 'no-saving', prefix: EMPTY_PREFIX });
    expect(out.tokensAfter).toBe(out.tokensBefore);
    const small = new TruncatingSummarizer(1_000_000, undefined, (r) => renderTranscript(r.messages).slice(0, Math.floor(renderTranscript(r.messages).length * 0.9)));
    const below = await compactFactor3(input(history, 40_000, small), P({ minSavingTokens: 20_000 }));
    expect(below.status).toBe('skipped');
    expect(below.reason).toMatch(/^saving-below-minimum \([\d,]+ < 20,000 tokens\)$/);
  });

  it('seed 000 failure handling: an LLM failure is failed with the previous context in place (no fallback in the seed)', async () => {
    const history = toSession(agentSession(30, { talk: 6 }));
    const out = await compactFactor3(input(history, 40_000, new TruncatingSummarizer(1_000_000, new LlmError('timeout', 'no answer', 3))));
    expect(out).toMatchObject({ status: 'failed', reason: 'llm-timeout', prefix: EMPTY_PREFIX, llmCalls: 3 });
    expect(out.tokensAfter).toBe(out.tokensBefore);
    expect(out.events).toEqual([{ type: 'compression-error', line: 'Summarizer failed (timeout) after 3 attempt(s); the previous context stays' }]);
    const empty = await compactFactor3(input(history, 40_000, new TruncatingSummarizer(1_000_000, undefined, () => '  ')));
    expect(empty).toMatchObject({ status: 'failed', reason: 'empty-summary', prefix: EMPTY_PREFIX });
  });

  it('seed 000: a summary that already starts with [SUMMARY] is not prefixed twice', async () => {
    const history = toSession(agentSession(30, { talk: 6 }));
    const out = await compactFactor3(input(history, 40_000, new TruncatingSummarizer(1_000_000, undefined, () => '[SUMMARY]: fixed the import; tests pending.')));
    expect(out.prefix.checkpoints[0].text).toBe('[SUMMARY]: fixed the import; tests pending.');
  });

  it('seed 000: the next compaction folds the previous [SUMMARY] into one new summary (messages[:-3] includes it)', async () => {
    const all = agentSession(60, { talk: 6 });
    const first = toSession(all.slice(0, 40));
    const a = await compactFactor3(input(first, 40_000, new TruncatingSummarizer()));
    expect(a.status).toBe('succeeded');
    const history = toSession(all);
    const summarizer = new TruncatingSummarizer();
    const b = await compactFactor3(input(history, 40_000, summarizer, a.prefix));
    expect(b.status).toBe('succeeded');
    expect(b.prefix.checkpoints).toHaveLength(1);
    const [ckpt] = b.prefix.checkpoints;
    expect(ckpt).toMatchObject({ fromSeq: 2, toSeq: history.length - 3, agedFromId: a.prefix.checkpoints[0].id });
    expect(ckpt.originalTokens).toBe(a.prefix.checkpoints[0].originalTokens + tokensOf(history.slice(a.prefix.checkpoints[0].toSeq, history.length - 3)));
    expect(renderTranscript(summarizer.calls[0].messages)).toContain(a.prefix.checkpoints[0].text);
    expect(Object.values(b.prefix.treatments).every((t) => t.kind === 'summarized' && t.checkpointId === ckpt.id)).toBe(true);
    const context = contextOf(history, b.prefix);
    expect(context).toHaveLength(5);
    expect(b.events[0].line).toMatch(new RegExp(`^Summarized ${history.length - 3 - a.prefix.checkpoints[0].toSeq + 1} messages → 1 summary`));
  });

  it('a span larger than the summarizer window is summarized in chunks, then merged, into one [SUMMARY]', async () => {
    const history = toSession(agentSession(40, { talk: 10 }));
    const summarizer = new TruncatingSummarizer(8_000);
    const out = await compactFactor3(input(history, 60_000, summarizer));
    expect(out.status).toBe('succeeded');
    expect(summarizer.calls.filter((c) => c.kind === 'chunk').length).toBeGreaterThan(1);
    expect(summarizer.calls.at(-1)?.kind).toBe('merge');
    expect(summarizer.calls.every((c) => c.instructions === FACTOR3_INSTRUCTIONS)).toBe(true);
    expect(out.prefix.checkpoints).toHaveLength(1);
    expect(out.prefix.checkpoints[0].text.startsWith('[SUMMARY]: ')).toBe(true);
  });

  it('a real SWE-agent trajectory: the context stays provider-valid, the system prompt and latest 3 messages stay', async () => {
    const raw = JSON.parse(readFileSync(join(__dirname, '../../../../testdata/swe-agent-trajectories/marshmallow-1867__function_calling.traj'), 'utf8')) as { history: unknown[] };
    const parsed = parseOpenAIMessages(raw.history, 'history');
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const history = toSession(makeProviderValid(parsed.value).messages);
    const out = await compactFactor3(input(history, Math.ceil(tokensOf(history) / 0.6), new TruncatingSummarizer()), P({ minSavingTokens: 500 }));
    expect(out.status).toBe('succeeded');
    const context = contextOf(history, out.prefix);
    expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
    expect(context[0]).toEqual(history[0]);
    for (const m of history.slice(-3)) expect(context).toContainEqual(m);
    expect(out.tokensAfter).toBeLessThan(out.tokensBefore);
  });

  it('properties over generated sessions: G2 valid after applyPrefix, G5 never more tokens (skip below minimum), G3 protected messages unchanged, G8 deterministic', async () => {
    const tally = { succeeded: 0, folded: 0, skipped: 0 };
    const extraArb = fc.array(fc.record({ at: fc.nat(), kind: fc.constantFrom('pinned', 'constraint', 'persona', 'state', 'chat', 'tagged-call') }), { maxLength: 4 });
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          openaiShape: fc.boolean(),
          parallel: fc.boolean(),
          steps: fc.integer({ min: 0, max: 30 }),
          size: fc.integer({ min: 1, max: 40 }),
          talk: fc.integer({ min: 0, max: 8 }),
          fill: fc.double({ min: 0.3, max: 1.5, noNaN: true }),
          extras: extraArb,
          again: fc.boolean(),
        }),
        async ({ openaiShape, parallel, steps, size, talk, fill, extras, again }) => {
          const msgs = agentSession(steps, { openaiShape, parallel, size, talk });
          // Insert protected or chat messages before assistant turns (never inside a tool exchange).
          for (const e of extras) {
            const slots = msgs.map((m, i) => (m.role === 'assistant' ? i : -1)).filter((i) => i > 0);
            const at = slots[e.at % slots.length];
            if (e.kind === 'tagged-call') {
              // A protected assistant turn with tool calls: its results must stay with it (Guarantee 2).
              if (msgs[at].blocks.some((b) => b.type === 'tool_use')) msgs[at] = { ...msgs[at], tags: ['session-log'] };
              continue;
            }
            const m: CanonicalMessage =
              e.kind === 'pinned'
                ? { role: 'user', pinned: true, blocks: [text('Pinned note: keep the API.')] }
                : e.kind === 'constraint'
                  ? { role: 'user', blocks: [text('Do not touch the migrations.')] }
                  : e.kind === 'chat'
                    ? { role: 'user', blocks: [text('How is it going?')] }
                    : { role: 'user', tags: [e.kind], blocks: [text(`${e.kind} content`)] };
            msgs.splice(at, 0, m);
          }
          const history = toSession(msgs);
          const budget = Math.max(2_000, Math.ceil(tokensOf(history) / fill));
          const params = P({ minSavingTokens: 300 });
          const go = (prefix: VersionPrefix) => compactFactor3(input(history, budget, new TruncatingSummarizer(12_000), prefix), params);
          let prefix: VersionPrefix = EMPTY_PREFIX;
          if (again) {
            // A second compaction over an earlier one's prefix (on a shorter history).
            const earlier = history.slice(0, Math.max(1, Math.floor(history.length * 0.6)));
            const first = await compactFactor3(input(earlier, budget, new TruncatingSummarizer(12_000)), params);
            prefix = first.prefix;
          }
          const a = await go(prefix);
          const b = await go(prefix);
          expect(b).toEqual(a);
          expect(a.tokensAfter).toBeLessThanOrEqual(a.tokensBefore);
          if (a.status === 'succeeded') expect(a.tokensBefore - a.tokensAfter).toBeGreaterThanOrEqual(Math.max(Math.floor(0.05 * budget), 300));
          else expect(a.prefix).toBe(prefix);
          const context = contextOf(history, a.prefix);
          expect(tokensOf(context)).toBe(a.tokensAfter);
          expect(providerValidityProblems(context.map((m) => m.message))).toEqual([]);
          const before = contextOf(history, prefix);
          const protection = factor3Protection(before, params);
          for (const m of before) {
            if (m.message.tags?.includes('checkpoint')) continue;
            if (protection.whole.has(m.seq) || protection.userText.has(m.seq)) expect(context).toContainEqual(m);
          }
          for (const m of history.slice(-3)) expect(context).toContainEqual(m);
          expect(a.prefix.checkpoints.length).toBeLessThanOrEqual(1);
          if (a.status === 'succeeded') expect(a.prefix.checkpoints[0].text.startsWith('[SUMMARY]: ')).toBe(true);
          tally[a.status === 'succeeded' ? 'succeeded' : 'skipped'] += 1;
          if (a.status === 'succeeded' && prefix.checkpoints.length > 0) tally.folded += 1;
        },
      ),
      { numRuns: 50, seed: 3000 },
    );
    // The generated sessions exercise both outcomes and the folding of an earlier summary.
    expect(tally.succeeded).toBeGreaterThan(5);
    expect(tally.folded).toBeGreaterThan(2);
    expect(tally.skipped).toBeGreaterThan(2);
  });
});
