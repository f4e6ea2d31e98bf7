import { CanonicalMessage } from '../messages/canonical';
import { ProtectionPolicy } from '../engine/protection';
import {
  compressLargeResults,
  compressResultsInContext,
  ToolResultCompressionNotes,
  toolResultCompressionClosing,
  toolResultCompressionNotes,
  ToolResultCompressionParams,
  toolResultCompressionStats,
} from '../stages/compress-tool-results';
import { DefinedPreset, definePreset } from './define';

export { compressLargeResult, type LargeResultCompression } from '../stages/compress-tool-results';

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
export interface TwoLayerParams extends ToolResultCompressionParams {
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

const resultChars = (m: CanonicalMessage) =>
  m.blocks.reduce((n, b) => n + (b.type === 'tool_result' ? (typeof b.content === 'string' ? b.content.length : JSON.stringify(b.content).length) : 0), 0);

export const TWO_LAYER: DefinedPreset<TwoLayerParams, ToolResultCompressionNotes, 'two-layer'> = definePreset<TwoLayerParams, ToolResultCompressionNotes, 'two-layer'>({
  name: 'two-layer',
  source: 'seed 002',
  defaults: TWO_LAYER_DEFAULTS,
  trigger: { fraction: 0.8, base: 'budget' },
  pipeline: {
    stages: [compressLargeResults, compressResultsInContext],
    protection: (params) => params.protection,
    notes: toolResultCompressionNotes,
    // Seed 002 reports every event of a run that changed nothing, with its stats.
    unchangedEvents: 'all',
    noSaving: 'strict',
    settleStats: (s) => toolResultCompressionStats(s.notes, s.tokensBefore, s.tokensBefore, 0, s.notes.layer2),
    closing: (s) => [toolResultCompressionClosing(s.notes, s.tokensBefore, s.tokensAfter)],
    stats: (s) => toolResultCompressionStats(s.notes, s.tokensBefore, s.tokensAfter, s.notes.compressedResults.size, s.notes.layer2),
  },
  // Layer 1 needs the LLM, so it has no deterministic ingest step: an `ingest` job runs the stages, whose layer 1 treats each new large result.
  needsIngestRun: (message, _tokens, params) => params.compressionEnabled !== false && resultChars(message) > params.singleResultThreshold,
});

/**
 * One `two-layer` compaction: layer 1, then layer 2 when the context exceeds
 * `globalCompressionThreshold` of the limit. Never returns more tokens than it was given (Guarantee 5).
 */
export const compactTwoLayer = TWO_LAYER.run;
