import { LlmError } from '../llm/summarizer';
import { exchangeRange, Protection } from '../engine/protection';
import { summarizeSpan } from '../engine/summarize';
import { SessionMessage } from '../engine/types';
import { Checkpoint, checkpointMessage, contentId, Treatment } from '../engine/version';
import { closeOverToolPairs, toolPairLinks } from '../engine/tool-pairs';
import { MinSavingParams } from '../engine/run';
import { OffloadNotes } from './offload-results';
import { Stage } from './stage';
import { maxOf, minOf } from '../engine/extremes';

/**
 * Seed 003's compaction: when offloading freed too little and the context is still over the
 * threshold (or on `/compact`), the summarizer reads the original (restored) content of
 * everything but the latest messages and writes one summary that replaces every earlier one.
 */
export interface CompactHistoryParams extends MinSavingParams {
  /** The context fill (fraction of the budget) above which the run compacts. */
  triggerFraction: number;
  /** Compaction runs when offloading freed fewer tokens than this. */
  triggerThreshold: number;
  /** The summary's target length. */
  targetTokens: number;
  /** The summary prompt; `{targetTokens}` is replaced by the target. */
  instructions: string;
}

/** What the compaction tells the closing lines. */
export interface CompactHistoryNotes extends OffloadNotes {
  /** Messages the summary replaced. */
  summarized: number;
  /** The summarizer's failure when the offloaded context stays all the same. */
  compactError?: LlmError;
}

/** The summary's heading in the context (seed 003's `[Compressed History]` message). */
export const COMPRESSED_HISTORY_HEADER = '[Compressed History]';

const fmt = (n: number) => n.toLocaleString('en-US');
const sumTokens = (xs: SessionMessage[]) => xs.reduce((n, m) => n + m.tokens, 0);

/**
 * The messages a compaction summarizes: every non-system message before "the latest
 * preserveCount" (widened to whole tool exchanges by protectionOf) that is not protected, minus
 * what shares a tool pair with a message that stays.
 */
function compactableSpan(context: SessionMessage[], protection: Protection): SessionMessage[] {
  // Exempt tools' exchanges stay whole: their results are never summarized (Guarantee 3).
  const exempt = new Set<number>();
  context.forEach((m, i) => {
    if (!m.message.blocks.some((b) => b.type === 'tool_use' && protection.exemptToolUseIds.has(b.id))) return;
    const [first, last] = exchangeRange(context, i);
    for (let k = first; k <= last; k += 1) exempt.add(context[k].seq);
  });
  const candidate = (m: SessionMessage) =>
    (m.message.role !== 'system' || m.message.inConversation === true) &&
    (protection.latestFromSeq === undefined || m.seq < protection.latestFromSeq) &&
    !protection.whole.has(m.seq) &&
    !protection.userText.has(m.seq) &&
    !exempt.has(m.seq);
  // What stays keeps every message it shares a tool pair with, and a call still waiting for its
  // result stays too: removing the rest never leaves half a pair (Guarantee 2).
  const { links, open } = toolPairLinks(context);
  const stays = closeOverToolPairs(links, context.flatMap((m, i) => (candidate(m) && !open.has(i) ? [] : [i])));
  return context.filter((_, i) => !stays.has(i));
}

/**
 * Compacts when offloading was not enough (seed 003: freedTokens < 15K and still over the
 * threshold). An LLM failure keeps what the offload achieved when that alone is worth a version
 * (seed 003: the offloaded history was already written), and otherwise ends the run `failed`.
 */
export const compactHistory: Stage<CompactHistoryParams, CompactHistoryNotes> = async ({ prefix, context, params, run, notes }) => {
  const { input, steps, events } = run;
  const checkpointTokens = (c: Checkpoint) => input.countMessage(checkpointMessage(c));
  const manual = input.trigger === 'manual';
  const threshold = Math.floor(params.triggerFraction * input.budget);
  const treatments: Record<number, Treatment> = { ...prefix.treatments };
  let coversThroughSeq = prefix.coversThroughSeq;
  let checkpoints = prefix.checkpoints;
  if (manual || (notes.freed < params.triggerThreshold && notes.after > threshold)) {
    const span = compactableSpan(context, notes.protection as Protection);
    if (span.length > 0) {
      // Restore offloaded content: the summarizer reads the original result, not the reference.
      const historyBySeq = new Map(input.history.map((m) => [m.seq, m]));
      let restored = 0;
      const originals = span.map((m) => {
        if (treatments[m.seq]?.kind !== 'offloaded') return m;
        const original = historyBySeq.get(m.seq);
        if (!original) return m;
        restored += 1;
        return original;
      });
      if (restored > 0) steps.push('restore');
      steps.push('compact');
      const older = checkpoints.map((c): SessionMessage => ({ seq: c.fromSeq, message: checkpointMessage(c), tokens: checkpointTokens(c) }));
      const part = [...older, ...originals].sort((a, b) => a.seq - b.seq);
      try {
        const instructions = params.instructions.split('{targetTokens}').join(String(params.targetTokens));
        const s = await summarizeSpan(part, input.summarizer, { instructions, targetTokens: params.targetTokens, goal: input.goal, countText: input.countText }, input.signal);
        run.account(s);
        const text = `${COMPRESSED_HISTORY_HEADER}\n\n${s.checkpoint.text}`;
        const fromSeq = minOf(minOf(Infinity, span.map((m) => m.seq)), checkpoints.map((c) => c.fromSeq));
        const toSeq = maxOf(maxOf(-Infinity, span.map((m) => m.seq)), checkpoints.map((c) => c.toSeq));
        const checkpoint: Checkpoint = {
          id: contentId('ckpt', fromSeq, toSeq, text),
          fromSeq,
          toSeq,
          level: 0,
          text,
          tokens: input.countText(text),
          originalTokens: checkpoints.reduce((n, c) => n + c.originalTokens, 0) + originals.reduce((n, m) => n + m.tokens, 0),
          ...(checkpoints.length > 0 ? { agedFromId: checkpoints[checkpoints.length - 1].id } : {}),
        };
        const replaced = sumTokens(span) + older.reduce((n, m) => n + m.tokens, 0);
        // Seed 003 accepts a summary longer than its target, but never one that grows the context (Guarantee 5).
        if (checkpointTokens(checkpoint) < replaced) {
          // One summary replaces the older ones: every summarized message now points at it (no stale references).
          for (const [seq, t] of Object.entries(treatments)) if (t.kind === 'summarized') treatments[Number(seq)] = { kind: 'summarized', checkpointId: checkpoint.id };
          for (const m of span) treatments[m.seq] = { kind: 'summarized', checkpointId: checkpoint.id };
          checkpoints = [checkpoint];
          coversThroughSeq = Math.max(coversThroughSeq, toSeq);
          notes.summarized = span.length;
          events.push({
            type: 'checkpoint-created',
            line: `Summarized ${span.length} messages → 1 summary (saved ~${fmt(replaced - checkpointTokens(checkpoint))} tokens)`,
          });
        }
      } catch (error) {
        if (!(error instanceof LlmError)) throw error;
        notes.compactError = error;
        run.llmCalls += error.attempts;
      }
    }
  }

  const compactError = notes.compactError;
  if (compactError) {
    const line = `Summarizer failed (${compactError.kind}) after ${compactError.attempts} attempt(s)`;
    // Seed 003: the offloaded history stays when the compaction fails (the summary step changed nothing yet).
    if (notes.freed >= run.minSaving(params)) events.push({ type: 'compression-error', line: `${line}; the offloaded context stays` });
    else {
      events.push({ type: 'compression-error', line: `${line}; the previous context stays` });
      return { end: run.unchanged('failed', `llm-${compactError.kind}`) };
    }
  }
  return { prefix: { ...prefix, coversThroughSeq, checkpoints, treatments } };
};
