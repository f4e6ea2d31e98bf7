import { LlmUsage, Summarizer } from '../llm/summarizer';
import type { ArtifactOutput, VersionPrefix } from './version';

// The message and counter types live apart so that version.ts can use them without importing this file (which imports version.ts).
export type { CountMessage, SessionMessage } from './session-message';
import type { SessionMessage, CountMessage } from './session-message';

/** Everything one compaction run reads. Built by the worker from the head version, the history and the session's policy. */
export interface CompactionInput {
  /** The full history through the seq the compaction covers (a fixed range, Guarantee 6). */
  history: SessionMessage[];
  /** The head version's prefix. */
  prefix: VersionPrefix;
  /** SPEC.md's `budget` for the session (window − reserve − tool schemas − margin). */
  budget: number;
  /** The model's context window (seed 004's dynamic budget starts from it). */
  contextWindow?: number;
  summarizer: Summarizer;
  countMessage: CountMessage;
  countText: (text: string) => number;
  /** The session's goal, for goal-aware prompts (seed 004). */
  goal?: string;
  /** The session's facts ledger through the last message of `history` (built from `history` when absent). */
  ledger?: import('../ledger/ledger').FactsLedger;
  /** What started the run: `threshold`, `manual`, `watermark`, `ingest`. */
  trigger?: 'threshold' | 'manual' | 'watermark' | 'ingest';
  signal?: AbortSignal;
}

export type CompactionEventType =
  | 'compressed'
  | 'compression-skipped'
  | 'compression-error'
  | 'checkpoint-created'
  | 'checkpoint-aged'
  | 'offloaded'
  | 'watermark-advanced'
  | 'warning'
  | 'fallback-applied'
  | 'budget-too-small'
  | 'facts-ledger';

export interface CompactionEvent {
  type: CompactionEventType;
  /** A human line in the style of seed 000's SESSION_LOG ("Summarized 8 messages → 1 summary (saved ~1,200 tokens)"). */
  line: string;
  /** Structured detail (the `facts-ledger` event's entries); the worker adds the job id. */
  data?: Record<string, unknown>;
}

export interface CompactionOutcome {
  status: 'succeeded' | 'skipped' | 'failed';
  /** Why it was skipped or failed (`history-too-short`, `saving-below-minimum (…)`, `llm-timeout`, …). */
  reason?: string;
  /** The new prefix (the previous one when skipped or failed). */
  prefix: VersionPrefix;
  tokensBefore: number;
  tokensAfter: number;
  steps: string[];
  usage: LlmUsage;
  llmCalls: number;
  events: CompactionEvent[];
  /** Offloaded content to store before the version is committed (empty for most runs). */
  artifacts: ArtifactOutput[];
  /** What the compaction did with the facts ledger of the span it summarized, when it summarized one. */
  ledger?: import('../ledger/account').LedgerTotals;
  /** Stage statistics a preset reports (seed 002: total_size, usage_percent, compression_threshold, needs_compression). */
  stats?: Record<string, number | boolean | string>;
}
