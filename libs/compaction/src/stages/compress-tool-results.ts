import { LlmError, LlmUsage, Summarizer } from '../llm/summarizer';
import { Block, CanonicalMessage, ToolResultBlock, ToolUseBlock } from '../messages/canonical';
import { Protection, ProtectionPolicy, protectionOf } from '../engine/protection';
import { CompactionEvent, SessionMessage } from '../engine/types';
import { Treatment } from '../engine/version';
import { MinSavingParams } from '../engine/run';
import { Stage, StageResult } from './stage';
import { maxOf } from '../engine/extremes';

/**
 * Seed 002's two stages ("Context Compression Mechanism"): layer 1 compresses each tool result
 * over the single-result threshold in chunks; layer 2, when the context exceeds its threshold,
 * compresses every result over a minimum size with its thought and action as context. Only
 * tool_result content changes (a `compressed` treatment, stage `two-layer`); no turn is deleted.
 */
export interface ToolResultCompressionParams extends MinSavingParams {
  /** Seed 002 `--disable-compression`: false turns both layers off. */
  compressionEnabled: boolean;
  /** Seed 002 `model_context_limit`, in tokens; 0 = the session's budget. */
  contextLimit: number;
  singleResultThreshold: number;
  chunkSize: number;
  compressionRatio: number;
  globalCompressionThreshold: number;
  resultCompressionMinSize: number;
  fallbackChars: number;
  protection: ProtectionPolicy;
  chunkInstructions: string;
  mergeInstructions: string;
  resultInstructions: string;
}

/** What the two layers share (the run's working copy of the context) and tell the closing line and stats. */
export interface ToolResultCompressionNotes {
  limit: number;
  threshold: number;
  turns: Map<string, Turn>;
  protection: Protection;
  /** The context's messages by seq, as the layers rewrote them. */
  current: Map<number, SessionMessage>;
  /** The context the run started from, in order. */
  context: SessionMessage[];
  compressedSeqs: Set<number>;
  compressedResults: Set<string>;
  failures: number;
  lastError?: LlmError;
  /** Results layer 1 looked at. */
  large: number;
  layer2: boolean;
}

export const toolResultCompressionNotes = (): ToolResultCompressionNotes => ({
  limit: 0,
  threshold: 0,
  turns: new Map(),
  protection: { whole: new Set(), userText: new Set(), exemptToolUseIds: new Set() },
  current: new Map(),
  context: [],
  compressedSeqs: new Set(),
  compressedResults: new Set(),
  failures: 0,
  large: 0,
  layer2: false,
});

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
  params: ToolResultCompressionParams,
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

/** Seed 002 "Trajectory Output Format": context_compression.stats, here in tokens. */
export function toolResultCompressionStats(notes: ToolResultCompressionNotes, tokensBefore: number, total: number, compressed: number, layer2: boolean) {
  return {
    total_size: total,
    total_size_before: tokensBefore,
    model_limit: notes.limit,
    usage_percent: Number(((100 * total) / Math.max(1, notes.limit)).toFixed(1)),
    turns_count: notes.turns.size,
    compression_threshold: notes.threshold,
    needs_compression: total > notes.threshold,
    results_compressed: compressed,
    layer2_triggered: layer2,
    size_unit: 'tokens',
  };
}

/** Rewrites one result block of a message in `notes.current`, keeping the change only if the message gets fewer tokens. */
function rewrite(notes: ToolResultCompressionNotes, count: (m: CanonicalMessage) => number, seq: number, index: number, text: string): boolean {
  const m = notes.current.get(seq) as SessionMessage;
  const blocks: Block[] = m.message.blocks.map((b, i) => (i === index && b.type === 'tool_result' ? withText(b, text) : b));
  const message: CanonicalMessage = { ...m.message, blocks };
  const tokens = count(message);
  if (tokens >= m.tokens) return false;
  notes.current.set(seq, { seq, message, tokens });
  notes.compressedSeqs.add(seq);
  notes.compressedResults.add(`${seq}:${index}`);
  return true;
}

function candidates(notes: ToolResultCompressionNotes, minChars: number) {
  const out: Array<{ seq: number; index: number; block: ToolResultBlock }> = [];
  for (const m of notes.context) {
    if (m.message.role === 'system' || notes.protection.whole.has(m.seq)) continue;
    notes.current.get(m.seq)?.message.blocks.forEach((b, index) => {
      if (b.type === 'tool_result' && !notes.protection.exemptToolUseIds.has(b.toolUseId) && resultText(b).length > minChars) out.push({ seq: m.seq, index, block: b });
    });
  }
  return out;
}

/** A summarizer call aborted (the job is being cancelled): the run ends failed with the previous context. */
function aborted(error: unknown, input: Parameters<Stage<ToolResultCompressionParams, ToolResultCompressionNotes>>[0]): StageResult {
  if (!(error instanceof LlmError)) throw error;
  const { run, notes } = input;
  run.events.push({ type: 'compression-error', line: `Summarizer call aborted (${error.kind}); the previous context stays` });
  return { end: run.unchanged('failed', `llm-${error.kind}`, toolResultCompressionStats(notes, run.tokensBefore, run.tokensBefore, 0, false)) };
}

/** The prefix with every result the layers compressed so far. */
function compressedPrefix({ prefix, notes }: Parameters<Stage<ToolResultCompressionParams, ToolResultCompressionNotes>>[0]) {
  const treatments: Record<number, Treatment> = { ...prefix.treatments };
  for (const seq of notes.compressedSeqs) {
    const m = notes.current.get(seq) as SessionMessage;
    treatments[seq] = { kind: 'compressed', message: m.message, tokens: m.tokens, stage: 'two-layer' };
  }
  return { ...prefix, coversThroughSeq: maxOf(prefix.coversThroughSeq, notes.compressedSeqs), treatments };
}

/** Layer 1 (`ContextManager.process_tool_result`): every result over the single-result threshold not yet treated (a treated one is under it). */
export const compressLargeResults: Stage<ToolResultCompressionParams, ToolResultCompressionNotes> = async (stageInput) => {
  const { context, params, run, notes } = stageInput;
  const { input, steps, events } = run;
  notes.limit = params.contextLimit > 0 ? params.contextLimit : input.budget;
  notes.threshold = Math.floor(notes.limit * params.globalCompressionThreshold);
  notes.turns = turnsOf(context);
  notes.context = context;
  if (!params.compressionEnabled) return { end: run.unchanged('skipped', 'compression-disabled', toolResultCompressionStats(notes, run.tokensBefore, run.tokensBefore, 0, false)) };
  notes.protection = protectionOf(context, params.protection);
  notes.current = new Map<number, SessionMessage>(context.map((m) => [m.seq, m]));
  try {
    const large = candidates(notes, params.singleResultThreshold);
    notes.large = large.length;
    if (large.length > 0) steps.push('layer1');
    for (const c of large) {
      const r = await compressLargeResult(resultText(c.block), input.summarizer, params, input.countText, input.signal);
      if (!r) continue;
      run.account({ usage: r.usage, attempts: r.llmCalls });
      events.push(...r.events);
      if (r.error) {
        notes.failures += 1;
        notes.lastError = r.error;
      }
      rewrite(notes, input.countMessage, c.seq, c.index, r.text);
    }
  } catch (error) {
    return aborted(error, stageInput);
  }
  return { prefix: compressedPrefix(stageInput) };
};

/** Layer 2: the whole context against the threshold ("Check on every add_turn()"); a failed result keeps its original. */
export const compressResultsInContext: Stage<ToolResultCompressionParams, ToolResultCompressionNotes> = async (stageInput) => {
  const { params, run, notes } = stageInput;
  const { input, steps, events } = run;
  const total = sumTokens([...notes.current.values()]);
  const layer2 = total > notes.threshold;
  notes.layer2 = layer2;
  try {
    if (layer2) {
      steps.push('layer2');
      events.push({ type: 'warning', line: `Context size ${fmt(total)} tokens exceeds threshold ${fmt(notes.threshold)}, triggering global compression...` });
      let done = 0;
      for (const c of candidates(notes, params.resultCompressionMinSize)) {
        const text = resultText(c.block);
        const turn = notes.turns.get(c.block.toolUseId) ?? { number: 0, thought: '', action: 'unknown' };
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
          run.account({ usage: r.usage, attempts: r.attempts });
          const out = r.text.trim();
          if (out.length > 0 && out.length < text.length && rewrite(notes, input.countMessage, c.seq, c.index, out)) {
            done += 1;
            events.push({ type: 'compressed', line: `Turn ${turn.number}: Compressed result ${fmt(text.length)} → ${fmt(out.length)} chars` });
          }
        } catch (error) {
          if (!(error instanceof LlmError) || error.kind === 'aborted') throw error;
          // Seed 002 "Layer 2: keep original result, skip compression for that turn".
          run.llmCalls += error.attempts;
          notes.failures += 1;
          notes.lastError = error;
          events.push({ type: 'compression-error', line: `Turn ${turn.number}: compression failed (${error.kind}); the original result is kept` });
        }
      }
      const after = sumTokens([...notes.current.values()]);
      events.push({
        type: 'compressed',
        line: `Global compression complete: ${done} results compressed, total size ${fmt(total)} → ${fmt(after)} tokens (${((100 * after) / Math.max(1, total)).toFixed(1)}%)`,
      });
    }
  } catch (error) {
    return aborted(error, stageInput);
  }
  if (notes.compressedSeqs.size === 0) {
    const stats = toolResultCompressionStats(notes, run.tokensBefore, run.tokensBefore, 0, layer2);
    if (notes.failures > 0 && notes.lastError) return { end: run.unchanged('failed', `llm-${notes.lastError.kind}`, stats) };
    return { end: run.unchanged('skipped', notes.large === 0 && !layer2 ? 'below-threshold' : 'no-saving', stats) };
  }
  return { prefix: compressedPrefix(stageInput) };
};

/** The closing line of a run that compressed results. */
export function toolResultCompressionClosing(notes: ToolResultCompressionNotes, tokensBefore: number, tokensAfter: number): CompactionEvent {
  const n = notes.compressedSeqs.size;
  return {
    type: 'compressed',
    line: `Compressed ${n} tool result message${n === 1 ? '' : 's'}: ${fmt(tokensBefore)} → ${fmt(tokensAfter)} tokens (saved ~${fmt(tokensBefore - tokensAfter)}); no turn deleted`,
  };
}
