import { CanonicalMessage } from '../messages/canonical';
import { FactsLedger } from '../ledger/ledger';
import { checkLedger, entryText } from '../ledger/render';
import { contextTextOf } from '../ledger/context-text';
import { reliabilityOf, ReliabilityModel } from '../reliability/score';
import { checkpointFacts, CheckpointFacts } from './checkpoint-facts';
import { GoalRecord, goalBlockText, renderGoalBlock, TASK_HEADING, TASK_STATEMENT_BUDGET_SHARE, TASK_STATEMENT_MAX_TOKENS } from './goal-markers';
import { taskStatementWithKeys } from './task-statement';
import { CompactionEvent, CompactionOutcome, SessionMessage } from './types';
import { applyPrefix, Checkpoint, checkpointMessage, goalBlockMessage, VersionPrefix } from './version';

// The pure part of the compaction use case (issue #16 item 2): what the worker used to compute
// between the preset's run and the commit, from what it loaded. The worker does the I/O only.

/** The facts ledger of the span a run compacted, checked against the new context (SPEC.md "Reliability score"). */
export interface CompactedLedgerCheck {
  /** What the checkpoint rows and the dry run store: counts and up to 60 missing entries. */
  ledger: { total: number; survived: number; missing: Array<{ kind: string; text: string; seq: number }> };
  survival: { total: number; survived: number; share: number };
}

/**
 * The facts ledger of the span a run compacted (entries whose latest mention is in a message
 * whose treatment changed; read from the stored, uncompacted history) and the share of it found
 * in the new context, goal block included.
 */
export function compactedLedgerCheck(
  ledger: FactsLedger,
  stored: readonly SessionMessage[],
  history: readonly SessionMessage[],
  before: VersionPrefix,
  after: VersionPrefix,
  goalBlock: { text: string } | undefined,
  count: (m: CanonicalMessage) => number,
): CompactedLedgerCheck {
  const changed = new Set(
    stored
      .filter((m) => m.seq <= after.coversThroughSeq && JSON.stringify(after.treatments[m.seq] ?? null) !== JSON.stringify(m.seq <= before.coversThroughSeq ? (before.treatments[m.seq] ?? null) : null))
      .map((m) => m.seq),
  );
  const entries = ledger.entries().filter((e) => changed.has(e.lastSeq));
  const context = applyPrefix(after, history, (c) => count(checkpointMessage(c))).map((m) => m.message);
  const survival = checkLedger(entries, `${goalBlock?.text ?? ''}\n${contextTextOf(context)}`, stored[stored.length - 1]?.seq);
  return {
    ledger: { total: survival.total, survived: survival.survived, missing: survival.missing.slice(0, 60).map((e) => ({ kind: e.kind, text: entryText(e), seq: e.lastSeq })) },
    survival: { total: survival.total, survived: survival.survived, share: survival.share },
  };
}

/** What a compaction's record says in numbers (the job row's fields the `compressed` event repeats). */
export interface CompactionFigures {
  tokensBefore: number;
  tokensAfter: number;
  llmCalls: number;
  llmCostUsd: number;
}

/**
 * A compaction in numbers (its `compressed` event's data): tokens before and after, what it cost,
 * and how many leading messages of the context it left unchanged, so whether the provider's
 * prompt cache survives it.
 */
export function runFigures(record: CompactionFigures, before: VersionPrefix, after: VersionPrefix, history: readonly SessionMessage[], count: (m: CanonicalMessage) => number) {
  const tokensOf = (c: Checkpoint) => count(checkpointMessage(c));
  const old = applyPrefix(before, history, tokensOf).map((m) => JSON.stringify(m.message));
  const next = applyPrefix(after, history, tokensOf).map((m) => JSON.stringify(m.message));
  let shared = 0;
  while (shared < old.length && shared < next.length && old[shared] === next[shared]) shared++;
  return {
    tokensBefore: record.tokensBefore,
    tokensAfter: record.tokensAfter,
    llmCalls: record.llmCalls,
    costUsd: record.llmCostUsd,
    contextMessagesBefore: old.length,
    sharedPrefixMessages: shared,
    prefixChanged: shared < old.length,
  };
}

export interface FinalizeCompactionInput {
  /** The preset's succeeded outcome. */
  outcome: CompactionOutcome;
  /** The stored history through the run's seq, as appended (the ledger and the task statement read it). */
  stored: readonly SessionMessage[];
  /** The run's input history (stored messages in their context form after the preset's ingest step). */
  history: readonly SessionMessage[];
  /** The head's prefix the run started from. */
  before: VersionPrefix;
  /** The session's facts ledger through the run's seq. */
  ledger: FactsLedger;
  /** The session's goal record (kept up to date on append and by PUT goal). */
  goal: GoalRecord;
  /** SPEC.md's `budget` of the session. */
  budget: number;
  /** The session's model, for the reliability score. */
  model: ReliabilityModel;
  /** Compactions the session's context had been through before this one. */
  compactionsBefore: number;
  figures: CompactionFigures;
  countMessage: (m: CanonicalMessage) => number;
  countText: (text: string) => number;
}

/** A new checkpoint row's fields beyond the prefix's: seed 004's extracted facts and the ledger check. */
export type FinalizedCheckpoint = Checkpoint & Partial<CheckpointFacts> & { factsLedger?: CompactedLedgerCheck['ledger']; factsSurvived?: number };

export interface FinalizedCompaction {
  /** The goal block frozen into the new version. */
  goalBlock?: { text: string; tokens: number };
  /** The prefix's checkpoints; new ones carry their facts and the ledger check. */
  checkpoints: FinalizedCheckpoint[];
  ledgerCheck: CompactedLedgerCheck;
  reliability: { score: number; contextConfidence: number };
  /** The outcome's events, the `compressed` one with the run's figures as its data. */
  events: CompactionEvent[];
  /** Every artifact the new prefix refers to. */
  artifactIds: string[];
  /** Checkpoints plus goal block. */
  prefixTokens: number;
  /** The new context's tokens, goal block included (the presets' prefixes carry none). */
  contextTokens: number;
}

/**
 * The pure part of a succeeded compaction before its commit: the goal block, the facts-ledger
 * check of what it compacted, the reliability score, each new checkpoint's seed 004 fields, and
 * the figures of its `compressed` event.
 */
export function finalizeCompaction(input: FinalizeCompactionInput): FinalizedCompaction {
  const { outcome, stored, history, before, countMessage, countText } = input;
  // The goal block is frozen into the new version: the goal and what the goal markers recorded, summarized span included.
  // The record is kept up to date on append (markers) and by PUT goal; a record that is still empty falls back to the history's markers.
  const rendered = renderGoalBlock(input.goal).trim();
  // Without a goal, the session's task is its first request: once the compaction takes that message out of the context,
  // its opening lines join the goal block (protected), so the agent still knows what it was asked (issue #14, high compression).
  const task = input.goal.goal
    ? undefined
    : taskStatementWithKeys(stored, Math.min(TASK_STATEMENT_MAX_TOKENS, Math.floor(TASK_STATEMENT_BUDGET_SHARE * input.budget)), countText, input.ledger.entries());
  const taskGone = task !== undefined && task.seq <= outcome.prefix.coversThroughSeq && outcome.prefix.treatments[task.seq]?.kind === 'summarized';
  const goalText =
    [rendered ? rendered : goalBlockText(stored.map((m) => m.message)), taskGone ? `${TASK_HEADING}\n${task.text}` : undefined].filter(Boolean).join('\n\n') || undefined;
  const goalBlock = goalText ? { text: goalText, tokens: countMessage(goalBlockMessage(goalText)) } : undefined;
  // SPEC.md "Reliability score": the facts ledger of what this run compacted, checked against the new context.
  const pinned = compactedLedgerCheck(input.ledger, stored, history, before, outcome.prefix, goalBlock, countMessage);
  const reliability = reliabilityOf({ model: input.model, compactions: input.compactionsBefore + 1, contextConfidence: pinned.survival.share });
  const earlier = new Set(before.checkpoints.map((c) => c.id));
  const checkpoints = outcome.prefix.checkpoints.map((c): FinalizedCheckpoint => {
    // Checkpoints the head already has are stored rows: only a new one is read for its fields (the repository keeps the old rows as they are).
    if (earlier.has(c.id)) return c;
    // Seed 004: each checkpoint records its key decisions, files modified and next steps, from the span it covers.
    const covered = history.filter((m) => m.seq >= c.fromSeq && m.seq <= c.toSeq).map((m) => m.message);
    return { ...c, ...checkpointFacts(c.text, covered), factsLedger: pinned.ledger, factsSurvived: pinned.survival.share };
  });
  // The `compressed` event says what the run did in numbers: tokens, cost, and how much of the prompt prefix it kept.
  const events = outcome.events.map((e) => (e.type === 'compressed' ? { ...e, data: { ...(e.data ?? {}), ...runFigures(input.figures, before, outcome.prefix, history, countMessage) } } : e));
  return {
    ...(goalBlock ? { goalBlock } : {}),
    checkpoints,
    ledgerCheck: pinned,
    reliability: { score: reliability.score, contextConfidence: pinned.survival.share },
    events,
    artifactIds: Object.values(outcome.prefix.treatments).flatMap((t) => (t.kind === 'offloaded' ? t.artifactIds : [])),
    prefixTokens: outcome.prefix.checkpoints.reduce((n, c) => n + c.tokens, 0) + (goalBlock?.tokens ?? 0),
    contextTokens: outcome.tokensAfter - (outcome.prefix.goalBlock?.tokens ?? 0) + (goalBlock?.tokens ?? 0),
  };
}
