import { LlmError, LlmUsage, Summarizer } from '../llm/summarizer';
import { Block, CanonicalMessage, ToolResultBlock, ToolUseBlock } from '../messages/canonical';
import { PresetDefinition } from './preset';
import { ProtectionPolicy, protectionOf } from './protection';
import { CompactionEvent, CompactionInput, CompactionOutcome, SessionMessage } from './types';
import { applyPrefix, Checkpoint, checkpointMessage, Treatment, VersionPrefix } from './version';
import { CompactionRun } from './run';

/**
 * `two-layer` (SPEC.md "Policies", seed 002 "Context Compression Mechanism"). Layer 1: a tool
 * result over 50,000 chars is split into 50,000-char chunks, each summarized to ~10%, combined,
 * and summarized again if still over 50,000 (LLM failure: keep the first 1,000 chars). Layer 2:
 * when the context passes 80% of the limit, every result over 5,000 chars is compressed to ~10%
 * with its thought and action as context (LLM failure: keep that result). Only tool_result
 * content changes; no turn is deleted, thought and action are never modified (seed 002 "Key
 * Design Guarantees"). Sizes of results are in characters, as in the seed; context sizes are in
 * tokens (the session's budget), since that is what the provider limits.
 */
export interface TwoLayerParams {
  /** The scheduler's trigger (`presetTrigger` reads the session's override), 80% like layer 2; `run` checks `globalCompressionThreshold` itself. */
  triggerFraction: number;
  /** Seed 002 `--disable-compression` ("not recommended"): false turns both layers off. */
  compressionEnabled: boolean;
  /** Seed 002 `model_context_limit` / `--context-limit`, in tokens; 0 = the session's budget. */
  contextLimit: number;
  /** Seed 002 `single_result_threshold`: layer 1 treats results over this many chars (a huge value disables layer 1). */
  singleResultThreshold: number;
  /** Seed 002 `chunk_size`: layer 1 processes this many chars at a time. */
  chunkSize: number;
  /** Seed 002 "compression target: 10%" (`len(chunk) // 10`, `len(combined_summary) // 10`, `len(result) // 10`). */
  compressionRatio: number;
  /** Seed 002 `global_compression_threshold`: layer 2 when the context exceeds this fraction of the limit (1.0 effectively disables it). */
  globalCompressionThreshold: number;
  /** Seed 002 `result_compression_min_size`: layer 2 compresses only results over this many chars. */
  resultCompressionMinSize: number;
  /** Seed 002 "Layer 1: use simple truncation as fallback (keep first 1000 characters)". */
  fallbackChars: number;
  /** What is never compressed (system prompts, pinned messages, exempt tools); seed 002 compresses every turn's result, so no latest messages by default. */
  protection: ProtectionPolicy;
  /** A compaction saving less than max(minSavingFraction × budget, minSavingTokens) is skipped (Guarantee 5). */
  minSavingFraction: number;
  minSavingTokens: number;
  chunkInstructions: string;
  mergeInstructions: string;
  resultInstructions: string;
}

export const TWO_LAYER_CHUNK_INSTRUCTIONS =
  'This is one chunk of a very large tool result in an AI agent session. Compress it to about 10% of its length. ' +
  'Keep the facts the agent may need: identifiers, file paths, numbers, error messages, URLs, names and key values. Plain text, no preamble.';
export const TWO_LAYER_MERGE_INSTRUCTIONS =
  'These are summaries of consecutive chunks of one large tool result. Combine and compress them to about 10% of their length, ' +
  'keeping identifiers, file paths, numbers, error messages, URLs, names and key values. Plain text, no preamble.';
export const TWO_LAYER_RESULT_INSTRUCTIONS =
  "Compress the RESULT of this AI agent's tool call to about 10% of its length. The THOUGHT and ACTION that produced it are given " +
  'as context: keep what the agent needs from the result for that thought (facts, identifiers, file paths, numbers, errors). ' +
  'Do not repeat the thought or the action. Plain text, no preamble.';

export const TWO_LAYER_DEFAULTS: TwoLayerParams = {
  triggerFraction: 0.8,
  compressionEnabled: true,
  contextLimit: 0,
  singleResultThreshold: 50_000,
  chunkSize: 50_000,
  compressionRatio: 0.1,
  globalCompressionThreshold: 0.8,
  resultCompressionMinSize: 5_000,
  fallbackChars: 1_000,
  protection: { latestMessages: 0, latestUserTexts: 0, allUserTexts: false, exemptToolNames: [] },
  minSavingFraction: 0.05,
  minSavingTokens: 1_000,
  chunkInstructions: TWO_LAYER_CHUNK_INSTRUCTIONS,
  mergeInstructions: TWO_LAYER_MERGE_INSTRUCTIONS,
  resultInstructions: TWO_LAYER_RESULT_INSTRUCTIONS,
};

const fmt = (n: number) => n.toLocaleString('en-US');
const sumTokens = (xs: SessionMessage[]) => xs.reduce((n, m) => n + m.tokens, 0);
const userText = (text: string): CanonicalMessage => ({ role: 'user', blocks: [{ type: 'text', text }] });
const zeroUsage = (): LlmUsage => ({ inputTokens: 0, outputTokens: 0, costUsd: 0 });

/** A result's text (its text parts joined), and how to write a new text back (other parts kept after it). */
function resultText(b: ToolResultBlock): string {
  return typeof b.content === 'string' ? b.content : b.content.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
}
function withText(b: ToolResultBlock, text: string): ToolResultBlock {
  const others = typeof b.content === 'string' ? [] : b.content.filter((p) => p.type !== 'text');
  const copy: ToolResultBlock = { ...b, content: others.length === 0 ? text : [{ type: 'text', text }, ...others] };
  delete copy.contentOmitted;
  return copy;
}

export interface LargeResultCompression {
  text: string;
  /** `summarized` by the LLM, or `truncated` (seed 002's layer-1 fallback after an LLM failure). */
  method: 'summarized' | 'truncated';
  chunks: number;
  /** Whether the combined chunk summaries needed the second-level compression. */
  merged: boolean;
  usage: LlmUsage;
  llmCalls: number;
  error?: LlmError;
  events: CompactionEvent[];
}

/**
 * Seed 002 layer 1 (`ContextManager.process_tool_result`): a result over `singleResultThreshold`
 * chars is split into `chunkSize`-char chunks, each summarized (kind `chunk`) to ~10%, the
 * summaries combined, and the combination summarized again (kind `merge`) when still over the
 * threshold. On an LLM failure the first `fallbackChars` chars are kept. Returns undefined for a
 * result at or under the threshold. An `aborted` call is rethrown: the job is being cancelled.
 */
export async function compressLargeResult(
  text: string,
  summarizer: Summarizer,
  params: TwoLayerParams,
  countText: (text: string) => number,
  signal?: AbortSignal,
): Promise<LargeResultCompression | undefined> {
  if (text.length <= params.singleResultThreshold) return undefined;
  const usage = zeroUsage();
  let llmCalls = 0;
  const size = Math.max(1, Math.floor(params.chunkSize));
  const chunks: string[] = [];
  for (let i = 0; i < text.length; i += size) chunks.push(text.slice(i, i + size));
  const call = async (kind: 'chunk' | 'merge', instructions: string, body: string) => {
    const r = await summarizer.summarize(
      { kind, instructions, messages: [userText(body)], targetTokens: Math.max(1, Math.ceil(countText(body) * params.compressionRatio)) },
      signal,
    );
    usage.inputTokens += r.usage.inputTokens;
    usage.outputTokens += r.usage.outputTokens;
    usage.costUsd += r.usage.costUsd;
    llmCalls += r.attempts;
    return r.text.trim();
  };
  const start = `Tool result too large (${fmt(text.length)} chars), applying streaming compression: ${chunks.length} chunk${chunks.length === 1 ? '' : 's'}`;
  let merged = false;
  try {
    const pieces: string[] = [];
    for (const c of chunks) {
      const piece = await call('chunk', params.chunkInstructions, c);
      if (piece.length === 0) throw new LlmError('malformed', 'empty chunk summary', 0);
      pieces.push(piece);
    }
    let combined = pieces.join('\n\n');
    if (combined.length > params.singleResultThreshold) {
      merged = true;
      combined = await call('merge', params.mergeInstructions, combined);
    }
    if (combined.length === 0) throw new LlmError('malformed', 'empty summary', 0);
    const ratio = ((100 * combined.length) / text.length).toFixed(1);
    return {
      text: combined,
      method: 'summarized',
      chunks: chunks.length,
      merged,
      usage,
      llmCalls,
      events: [{ type: 'compressed', line: `${start}${merged ? ', second-level compression' : ''}; compressed ${fmt(text.length)} → ${fmt(combined.length)} chars (${ratio}%)` }],
    };
  } catch (error) {
    if (!(error instanceof LlmError) || error.kind === 'aborted') throw error;
    llmCalls += error.attempts;
    const kept = text.slice(0, params.fallbackChars);
    return {
      text: `${kept}\n[truncated: the first ${fmt(kept.length)} of ${fmt(text.length)} chars kept; compression failed]`,
      method: 'truncated',
      chunks: chunks.length,
      merged,
      usage,
      llmCalls,
      error,
      events: [{ type: 'compression-error', line: `${start}; summarizer failed (${error.kind}), kept the first ${fmt(kept.length)} chars` }],
    };
  }
}

/** The thought (assistant text) and action (tool call) that produced a result: layer 2's context for the LLM. */
interface Turn {
  number: number;
  thought: string;
  action: string;
}

function turnsOf(context: SessionMessage[]): Map<string, Turn> {
  const turns = new Map<string, Turn>();
  let n = 0;
  for (const m of context) {
    if (m.message.role !== 'assistant') continue;
    const thought = m.message.blocks
      .flatMap((b) => (b.type === 'text' ? [b.text] : []))
      .join('\n')
      .trim();
    for (const b of m.message.blocks) {
      if (b.type !== 'tool_use') continue;
      n += 1;
      turns.set(b.id, { number: n, thought, action: actionOf(b) });
    }
  }
  return turns;
}

const actionOf = (b: ToolUseBlock) => `${b.name} ${b.argumentsText ?? JSON.stringify(b.input ?? {})}`;

/**
 * One `two-layer` compaction: layer 1 for every result over the threshold not yet treated, then,
 * when the context exceeds `globalCompressionThreshold` of the limit, layer 2 for every result
 * over `resultCompressionMinSize`. Each changed message becomes a `compressed` treatment (stage
 * `two-layer`); nothing is removed. Never returns more tokens than it was given (Guarantee 5).
 */
export async function compactTwoLayer(input: CompactionInput, params: TwoLayerParams = TWO_LAYER_DEFAULTS): Promise<CompactionOutcome> {
  const checkpointTokens = (c: Checkpoint) => input.countMessage(checkpointMessage(c));
  const context = applyPrefix(input.prefix, input.history, checkpointTokens);
  const tokensBefore = sumTokens(context);
  const limit = params.contextLimit > 0 ? params.contextLimit : input.budget;
  const threshold = Math.floor(limit * params.globalCompressionThreshold);
  const turns = turnsOf(context);
  // Seed 002 reports every event of a run that changed nothing, with its stats.
  const run = new CompactionRun(input, tokensBefore, { keepEvents: 'all' });
  const { usage, steps, events } = run;
  const account = (u: LlmUsage, calls: number) => run.account({ usage: u, attempts: calls });
  // Seed 002 "Trajectory Output Format": context_compression.stats, here in tokens.
  const statsOf = (total: number, compressed: number, layer2: boolean) => ({
    total_size: total,
    total_size_before: tokensBefore,
    model_limit: limit,
    usage_percent: Number(((100 * total) / Math.max(1, limit)).toFixed(1)),
    turns_count: turns.size,
    compression_threshold: threshold,
    needs_compression: total > threshold,
    results_compressed: compressed,
    layer2_triggered: layer2,
    size_unit: 'tokens',
  });
  const unchanged = (status: 'skipped' | 'failed', reason: string, layer2 = false) => run.unchanged(status, reason, statsOf(tokensBefore, 0, layer2));
  if (!params.compressionEnabled) return unchanged('skipped', 'compression-disabled');

  const protection = protectionOf(context, params.protection);
  const current = new Map<number, SessionMessage>(context.map((m) => [m.seq, m]));
  const compressedSeqs = new Set<number>();
  const compressedResults = new Set<string>();
  /** Rewrites one result block of a message in `current`, keeping the change only if the message gets fewer tokens. */
  const rewrite = (seq: number, index: number, text: string): boolean => {
    const m = current.get(seq) as SessionMessage;
    const blocks: Block[] = m.message.blocks.map((b, i) => (i === index && b.type === 'tool_result' ? withText(b, text) : b));
    const message: CanonicalMessage = { ...m.message, blocks };
    const tokens = input.countMessage(message);
    if (tokens >= m.tokens) return false;
    current.set(seq, { seq, message, tokens });
    compressedSeqs.add(seq);
    compressedResults.add(`${seq}:${index}`);
    return true;
  };
  const candidates = (minChars: number) => {
    const out: Array<{ seq: number; index: number; block: ToolResultBlock }> = [];
    for (const m of context) {
      if (m.message.role === 'system' || protection.whole.has(m.seq)) continue;
      current.get(m.seq)?.message.blocks.forEach((b, index) => {
        if (b.type === 'tool_result' && !protection.exemptToolUseIds.has(b.toolUseId) && resultText(b).length > minChars) out.push({ seq: m.seq, index, block: b });
      });
    }
    return out;
  };

  let failures = 0;
  let lastError: LlmError | undefined;
  try {
    // Layer 1: results over the single-result threshold not yet treated (a treated one is under it).
    const large = candidates(params.singleResultThreshold);
    if (large.length > 0) steps.push('layer1');
    for (const c of large) {
      const r = await compressLargeResult(resultText(c.block), input.summarizer, params, input.countText, input.signal);
      if (!r) continue;
      account(r.usage, r.llmCalls);
      events.push(...r.events);
      if (r.error) {
        failures += 1;
        lastError = r.error;
      }
      rewrite(c.seq, c.index, r.text);
    }

    // Layer 2: the whole context against the threshold ("Check on every add_turn()").
    const total = sumTokens([...current.values()]);
    const layer2 = total > threshold;
    if (layer2) {
      steps.push('layer2');
      events.push({ type: 'warning', line: `Context size ${fmt(total)} tokens exceeds threshold ${fmt(threshold)}, triggering global compression...` });
      let done = 0;
      for (const c of candidates(params.resultCompressionMinSize)) {
        const text = resultText(c.block);
        const turn = turns.get(c.block.toolUseId) ?? { number: 0, thought: '', action: 'unknown' };
        try {
          const r = await input.summarizer.summarize(
            {
              kind: 'tool-result',
              instructions: params.resultInstructions,
              messages: [userText(`THOUGHT:\n${turn.thought}\n\nACTION:\n${turn.action}\n\nRESULT:\n${text}`)],
              targetTokens: Math.max(1, Math.ceil(input.countText(text) * params.compressionRatio)),
              goal: input.goal,
            },
            input.signal,
          );
          account(r.usage, r.attempts);
          const out = r.text.trim();
          if (out.length > 0 && out.length < text.length && rewrite(c.seq, c.index, out)) {
            done += 1;
            events.push({ type: 'compressed', line: `Turn ${turn.number}: Compressed result ${fmt(text.length)} → ${fmt(out.length)} chars` });
          }
        } catch (error) {
          if (!(error instanceof LlmError) || error.kind === 'aborted') throw error;
          // Seed 002 "Layer 2: keep original result, skip compression for that turn".
          run.llmCalls += error.attempts;
          failures += 1;
          lastError = error;
          events.push({ type: 'compression-error', line: `Turn ${turn.number}: compression failed (${error.kind}); the original result is kept` });
        }
      }
      const after = sumTokens([...current.values()]);
      events.push({
        type: 'compressed',
        line: `Global compression complete: ${done} results compressed, total size ${fmt(total)} → ${fmt(after)} tokens (${((100 * after) / Math.max(1, total)).toFixed(1)}%)`,
      });
    }

    if (compressedSeqs.size === 0) {
      if (failures > 0 && lastError) return unchanged('failed', `llm-${lastError.kind}`, layer2);
      return unchanged('skipped', large.length === 0 && !layer2 ? 'below-threshold' : 'no-saving', layer2);
    }
    const treatments: Record<number, Treatment> = { ...input.prefix.treatments };
    for (const seq of compressedSeqs) {
      const m = current.get(seq) as SessionMessage;
      treatments[seq] = { kind: 'compressed', message: m.message, tokens: m.tokens, stage: 'two-layer' };
    }
    const prefix: VersionPrefix = { ...input.prefix, coversThroughSeq: Math.max(input.prefix.coversThroughSeq, ...compressedSeqs), treatments };
    const tokensAfter = sumTokens(applyPrefix(prefix, input.history, checkpointTokens));
    if (tokensAfter >= tokensBefore) return unchanged('skipped', 'no-saving', layer2);
    const tooLittle = run.belowMinimum(tokensBefore - tokensAfter, params, statsOf(tokensBefore, 0, layer2));
    if (tooLittle) return tooLittle;
    events.push({
      type: 'compressed',
      line: `Compressed ${compressedSeqs.size} tool result message${compressedSeqs.size === 1 ? '' : 's'}: ${fmt(tokensBefore)} → ${fmt(tokensAfter)} tokens (saved ~${fmt(tokensBefore - tokensAfter)}); no turn deleted`,
    });
    return { status: 'succeeded', prefix, tokensBefore, tokensAfter, steps, usage, llmCalls: run.llmCalls, events, artifacts: [], stats: statsOf(tokensAfter, compressedResults.size, layer2) };
  } catch (error) {
    if (!(error instanceof LlmError)) throw error;
    events.push({ type: 'compression-error', line: `Summarizer call aborted (${error.kind}); the previous context stays` });
    return unchanged('failed', `llm-${error.kind}`);
  }
}

export const TWO_LAYER: PresetDefinition<TwoLayerParams> = {
  name: 'two-layer',
  trigger: { fraction: 0.8, base: 'budget' },
  source: 'seed 002',
  defaults: TWO_LAYER_DEFAULTS,
  // Layer 1 needs the LLM, so it has no deterministic ingest step: an `ingest` job runs `run`, whose layer 1 treats each new large result.
  run: compactTwoLayer,
};
