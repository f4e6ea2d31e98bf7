import { Block, CanonicalMessage } from '../messages/canonical';
import { toolUseIdOf } from '../messages/util';
import { LlmError } from '../llm/summarizer';
import { EMPTY_GOAL_RECORD, GOAL_STATUS_SIGN, GoalRecord, goalRecordOf } from '../engine/goal-markers';
import { Protection, ProtectionPolicy, protectionOf } from '../engine/protection';
import { summarizeSpan } from '../engine/summarize';
import { CompactionEvent, CompactionInput, SessionMessage } from '../engine/types';
import { Checkpoint, contentId, Treatment } from '../engine/version';
import { CompactionRun, MinSavingParams } from '../engine/run';
import { Stage, StageResult } from './stage';
import { maxOf } from '../engine/extremes';

/**
 * Seed 004's new checkpoint: the oldest unprotected span, by whole tool exchanges (user text
 * stays), summarized with the goal-aware prompt into a checkpoint of about `recentTokens`.
 */
export interface GoalAwareCheckpointParams extends MinSavingParams {
  /** Seed 004: every user message's text stays (`allUserTexts`); the latest messages stay whole. */
  protection: ProtectionPolicy;
  /** Seed 004's `preserveRecent`: the latest messages worth this many tokens are not compressed. */
  preserveRecentTokens: number;
  /** Token targets by level (seed 004's aging table): a new checkpoint, then each aging step. */
  recentTokens: number;
  oldTokens: number;
  ancientTokens: number;
  /** Ultra checkpoints, and the one they all merge into, never exceed this. */
  ultraTokens: number;
  /** Seed 004's goal-aware summarization prompt, as a template (see `goalAwarePrompt`). */
  instructions: string;
  /** Seed 004's plain summarization prompt, for sessions with no goal record. */
  plainInstructions: string;
  /** The prompt of an aging step, as a template: `{{level}}`, `{{target}}`, `{{rules}}`. */
  agingInstructions: string;
}

/** What the new checkpoint's stage tells the aging stage. */
export interface CheckpointNotes {
  fresh?: Checkpoint;
  /** Old checkpoint id → the id of the checkpoint it aged (or merged) into. */
  renamed: Map<string, string>;
}

export const checkpointNotes = (): CheckpointNotes => ({ renamed: new Map() });

const MESSAGES_PLACEHOLDER = '(the conversation is given below, as the messages of this request)';
const sumTokens = (xs: SessionMessage[]) => xs.reduce((n, m) => n + m.tokens, 0);
const fmt = (n: number) => n.toLocaleString('en-US');
const fill = (template: string, values: Record<string, string>) => template.replace(/\{\{(\w+)\}\}/g, (all, key: string) => values[key] ?? all);

/** Seed 004's goal-aware prompt filled from the goal record; the plain prompt when there is no goal at all. */
export function goalAwarePrompt(params: Pick<GoalAwareCheckpointParams, 'instructions' | 'plainInstructions'>, record: GoalRecord): string {
  const hasGoal = record.goal !== undefined || record.checkpoints.length > 0 || record.decisions.some((d) => d.locked);
  if (!hasGoal) return fill(params.plainInstructions, { messages: MESSAGES_PLACEHOLDER });
  const list = (status: keyof typeof GOAL_STATUS_SIGN) =>
    record.checkpoints.filter((c) => c.status === status).map((c) => `${GOAL_STATUS_SIGN[status]} ${c.text}`).join('\n');
  return fill(params.instructions, {
    goal: record.goal ?? '(not stated)',
    // Seed 004's Goal has a priority and a status; a session has one goal, the one being worked on.
    priority: record.priority ?? 'high',
    status: record.status ?? 'active',
    completed: list('completed'),
    inProgress: list('in-progress'),
    pending: list('pending'),
    locked: record.decisions.filter((d) => d.locked).map((d) => `🔒 ${d.text}`).join('\n'),
    messages: MESSAGES_PLACEHOLDER,
  }).trim();
}

/** The longest word-boundary prefix of `text` within `max` tokens (with an ellipsis when cut). Deterministic. */
export function fitToTokens(text: string, max: number, countText: (t: string) => number): string {
  if (countText(text) <= max) return text;
  const words = text.split(/(?<=\s)/);
  let lo = 0;
  let hi = words.length;
  const cut = (n: number) => `${words.slice(0, n).join('').trimEnd()} …`;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (countText(cut(mid)) <= max) lo = mid;
    else hi = mid - 1;
  }
  return lo === 0 ? '…' : cut(lo);
}

// ------------------------------------------------------------------------------------------
// The span: whole tool exchanges of unprotected messages; user text stays.

const answersTools = (m: CanonicalMessage) => m.role === 'tool' || m.blocks.some((b) => b.type === 'tool_result');
const hasCalls = (m: CanonicalMessage) => m.role === 'assistant' && m.blocks.some((b) => toolUseIdOf(b) !== undefined);

export interface AgingSpan {
  /** What the summarizer reads, in seq order (a stripped user message contributes its tool results only). */
  part: SessionMessage[];
  /** Seqs that leave the context (replaced by the checkpoint). */
  summarized: number[];
  /** User messages that keep their text while their tool results go into the checkpoint. */
  stripped: Array<{ seq: number; message: CanonicalMessage }>;
}

/**
 * The messages a new checkpoint covers, from the one protection policy: every message before
 * the latest N that is neither a system prompt, protected whole nor protected user text,
 * taken by whole tool exchanges (an assistant message with calls and the messages answering
 * it). A user message whose text is protected but which also carries results of a summarized
 * exchange keeps its other blocks and loses the results (they go into the checkpoint), so
 * no `tool_result` is left without its `tool_use` (Guarantee 2) and the user's text stays
 * verbatim (Guarantee 3). An exchange with any member that must stay whole stays whole.
 */
export function agingSpan(context: SessionMessage[], protection: Protection, countMessage: (m: CanonicalMessage) => number): AgingSpan {
  const beforeLatest = (m: SessionMessage) => protection.latestFromSeq === undefined || m.seq < protection.latestFromSeq;
  const state = (m: SessionMessage): 'sum' | 'strip' | 'keep' => {
    if ((m.message.role === 'system' && !m.message.inConversation) || !beforeLatest(m) || protection.whole.has(m.seq)) return 'keep';
    if (!protection.userText.has(m.seq)) return 'sum';
    return m.message.blocks.some((b) => b.type === 'tool_result') ? 'strip' : 'keep';
  };
  const span: AgingSpan = { part: [], summarized: [], stripped: [] };
  let i = 0;
  while (i < context.length) {
    let end = i;
    if (hasCalls(context[i].message)) while (end + 1 < context.length && answersTools(context[end + 1].message)) end += 1;
    const group = context.slice(i, end + 1);
    const states = group.map(state);
    i = end + 1;
    if (states[0] !== 'sum' || states.some((s) => s === 'keep')) continue;
    group.forEach((m, k) => {
      if (states[k] === 'sum') {
        span.part.push(m);
        span.summarized.push(m.seq);
        return;
      }
      const results = m.message.blocks.filter((b) => b.type === 'tool_result');
      const rest = m.message.blocks.filter((b) => b.type !== 'tool_result');
      const message: CanonicalMessage = { ...m.message, blocks: rest };
      const resultsOnly: CanonicalMessage = { role: m.message.role, blocks: results as Block[] };
      span.part.push({ seq: m.seq, message: resultsOnly, tokens: Math.max(0, m.tokens - countMessage(message)) });
      span.stripped.push({ seq: m.seq, message });
    });
  }
  return span;
}

/** How many of the latest non-system messages hold `tokens` tokens (seed 004's `preserveRecent`). */
export function recentCount(context: SessionMessage[], tokens: number): number {
  let n = 0;
  let sum = 0;
  for (let i = context.length - 1; i >= 0 && sum < tokens; i -= 1) {
    if (context[i].message.role === 'system' && !context[i].message.inConversation) break;
    sum += context[i].tokens;
    n += 1;
  }
  return n;
}

/** The goal record a run works with: the caller's (the session's record), else folded from the context's markers over `goal`. */
export function goalRecordFor(input: CompactionInput, context: SessionMessage[]): GoalRecord {
  // The worker may pass the session's goal record along (SPEC.md "goal record"); until the input type names it, read it if present.
  const given = (input as CompactionInput & { goalRecord?: GoalRecord }).goalRecord;
  if (given) return given;
  const base: GoalRecord = input.goal ? { ...EMPTY_GOAL_RECORD, goal: input.goal } : EMPTY_GOAL_RECORD;
  return goalRecordOf(
    context.map((m) => m.message),
    base,
  );
}

/** The protection policy of seed 004: the latest messages worth `preserveRecentTokens` stay too. */
export function goalAwareProtection(params: GoalAwareCheckpointParams, context: SessionMessage[]): ProtectionPolicy {
  return { ...params.protection, latestMessages: Math.max(params.protection.latestMessages, recentCount(context, params.preserveRecentTokens)) };
}

/** An LLM failure: the run ends failed with the previous prefix. */
export function summarizerFailed(error: unknown, run: CompactionRun): StageResult {
  if (!(error instanceof LlmError)) throw error;
  run.llmCalls += error.attempts;
  run.events.push({ type: 'compression-error', line: `Summarizer failed (${error.kind}) after ${error.attempts} attempt(s); the previous context stays` });
  return { end: run.unchanged('failed', `llm-${error.kind}`) };
}

/**
 * The new checkpoint: the oldest unprotected span summarized with the goal-aware prompt, never
 * more than half of what it replaces; stripped user messages keep their text.
 */
export const summarizeIntoCheckpoint: Stage<GoalAwareCheckpointParams, CheckpointNotes> = async ({ prefix, context, protection: policy, params, run, notes }) => {
  const { input, steps } = run;
  const protection: Protection = protectionOf(context, policy);
  const span = agingSpan(context, protection, input.countMessage);
  if (span.summarized.length === 0) return { end: run.unchanged('skipped', 'nothing-to-compact (every older message is protected)') };

  const record = goalRecordFor(input, context);
  const spanTokens = sumTokens(span.part);
  // Seed 004: a new checkpoint of ~1,200 tokens, and never more than half of what it replaces (50–70% compression).
  const target = Math.max(1, Math.min(params.recentTokens, Math.floor(spanTokens / 2)));
  steps.push('summarize');
  let fresh: Checkpoint;
  try {
    const s = await summarizeSpan(span.part, input.summarizer, { instructions: goalAwarePrompt(params, record), targetTokens: target, goal: input.goal, countText: input.countText }, input.signal);
    run.account(s);
    const text = fitToTokens(s.checkpoint.text, target, input.countText);
    const { fromSeq, toSeq } = s.checkpoint;
    fresh = { id: contentId('ckpt', fromSeq, toSeq, 0, text), fromSeq, toSeq, level: 0, text, tokens: input.countText(text), originalTokens: spanTokens };
  } catch (error) {
    return summarizerFailed(error, run);
  }
  if (fresh.tokens >= spanTokens) return { end: run.unchanged('skipped', 'no-saving (the summary is not smaller than the span)') };
  notes.fresh = fresh;

  // The span's messages are summarized into the new checkpoint, stripped user messages keep their text.
  const treatments: Record<number, Treatment> = { ...prefix.treatments };
  for (const seq of span.summarized) treatments[seq] = { kind: 'summarized', checkpointId: fresh.id };
  for (const s of span.stripped) treatments[s.seq] = { kind: 'compressed', message: s.message, tokens: input.countMessage(s.message), stage: 'checkpoint-aging' };
  const coversThroughSeq = maxOf(Math.max(prefix.coversThroughSeq, fresh.toSeq), span.stripped.map((s) => s.seq));
  const checkpoints = [...prefix.checkpoints, fresh].sort((a, b) => a.fromSeq - b.fromSeq || a.toSeq - b.toSeq);
  const kept = span.stripped.length > 0 ? `; the text of ${span.stripped.length} user message(s) kept` : '';
  const created: CompactionEvent = {
    type: 'checkpoint-created',
    line: `Summarized ${span.summarized.length} messages → 1 checkpoint of ${fmt(fresh.tokens)} tokens (saved ~${fmt(spanTokens - fresh.tokens)} tokens${kept})`,
  };
  return { prefix: { ...prefix, coversThroughSeq, checkpoints, treatments }, onSuccess: [created] };
};
