import { LlmError } from '../llm/summarizer';
import { CanonicalMessage } from '../messages/canonical';
import { exchangeRange, Protection, ProtectionPolicy, protectionOf } from '../engine/protection';
import { summarizableMessages, summarizeSpan } from '../engine/summarize';
import { SessionMessage } from '../engine/types';
import { Checkpoint, checkpointMessage, contentId, Treatment } from '../engine/version';
import { wholePhraseTest } from '../engine/text-scan';
import { MinSavingParams } from '../engine/run';
import { Stage } from './stage';
import { maxOf, minOf } from '../engine/extremes';

/**
 * Seed 000's stage ("Context Compression (Factor 3)" `auto_summarize`): the messages before the
 * latest N that no rule protects, together with the summary in force, become one `[SUMMARY]`
 * checkpoint, with the seed's protection rules.
 */
export interface OneSummaryParams extends MinSavingParams {
  /** The latest messages kept intact (seed 000: `session["messages"][-3:]`). */
  protection: ProtectionPolicy;
  /** Messages tagged with one of these are kept whole (persona, SESSION_LOG, state checkpoints, constraints). */
  protectedTags: string[];
  /** SESSION_LOG content: tool calls whose arguments name this file (and their results), text that starts with it. */
  sessionLogName: string;
  /** A short user message holding one of these phrases (whole words, any case) is a constraint, kept. */
  constraintPhrases: string[];
  constraintMaxChars: number;
  /** The summary's target size; never more than half of what it replaces. */
  summaryTargetTokens: number;
  instructions: string;
}

/** What the stage tells the closing line: how many messages (checkpoints included) the summary replaced. */
export interface OneSummaryNotes {
  summarized: number;
}

/** Seed 000 prefixes the summary message with `[SUMMARY]: ` (`f"[SUMMARY]: {summary}"`). */
export const SUMMARY_PREFIX = '[SUMMARY]: ';

const sumTokens = (xs: SessionMessage[]) => xs.reduce((n, m) => n + m.tokens, 0);
const fmt = (n: number) => n.toLocaleString('en-US');
const pct = (n: number) => `${Number(n.toFixed(1))}%`;

const texts = (m: CanonicalMessage) => m.blocks.flatMap((b) => (b.type === 'text' ? [b.text] : []));

/** Seed 000's protection rules for one message, beyond what `protectionOf` covers (system prompts, pinned, the latest N). */
function ruleOf(m: CanonicalMessage, params: OneSummaryParams, constraint: ((text: string) => boolean) | undefined): 'whole' | 'user-text' | undefined {
  if (m.tags?.some((t) => params.protectedTags.includes(t))) return 'whole';
  const log = params.sessionLogName;
  if (log) {
    for (const b of m.blocks) {
      if (b.type === 'tool_use' && (b.argumentsText ?? JSON.stringify(b.input ?? null)).includes(log)) return 'whole';
      if (b.type === 'text' && b.text.trimStart().replace(/^#+\s*/, '').startsWith(log)) return 'whole';
    }
  }
  if (constraint && m.role === 'user' && !m.tags?.includes('observation')) {
    const text = texts(m).join('\n');
    if (text.length > 0 && text.length <= params.constraintMaxChars && constraint(text)) return 'user-text';
  }
  return undefined;
}

/**
 * The protection `factor3` consults: `protectionOf` (system prompts and persona, pinned messages,
 * the latest 3 messages widened to their tool exchange) plus seed 000's other rules, closed
 * over tool exchanges the same way so no tool pair is ever split (Guarantee 2).
 */
export function factor3Protection(context: SessionMessage[], params: OneSummaryParams): Protection {
  const base = protectionOf(context, params.protection);
  const whole = new Set(base.whole);
  const userText = new Set(base.userText);
  // A constraint phrase as whole words, any case ("never", not "Neverland").
  const constraint = params.constraintPhrases.length > 0 ? wholePhraseTest(params.constraintPhrases) : undefined;
  context.forEach((m, i) => {
    const rule = ruleOf(m.message, params, constraint);
    if (!rule) return;
    if (rule === 'whole') whole.add(m.seq);
    else userText.add(m.seq);
    const [first, last] = exchangeRange(context, i);
    for (let k = first; k <= last; k += 1) if (k !== i && !userText.has(context[k].seq)) whole.add(context[k].seq);
  });
  return { ...base, whole, userText };
}

/**
 * Summarizes everything no rule protects, the summary in force included, into one `[SUMMARY]`
 * checkpoint. An LLM failure ends the run `failed` with the previous prefix (the seed prescribes
 * no fallback); a span whose whole size could not save the minimum makes no LLM call.
 */
export const summarizeIntoOne: Stage<OneSummaryParams, OneSummaryNotes> = async ({ prefix, context, params, run, notes }) => {
  const { input, steps, events } = run;
  const checkpointTokens = (c: Checkpoint) => input.countMessage(checkpointMessage(c));
  const protection = factor3Protection(context, params);
  const span = summarizableMessages(context, protection);
  if (span.length === 0) return { end: run.unchanged('skipped', 'nothing-to-summarize') };
  // The summary in force is folded into the new one: seed 000 summarizes `messages[:-3]`, its earlier [SUMMARY] included.
  const older = prefix.checkpoints;
  const olderParts: SessionMessage[] = older.map((c) => ({ seq: c.fromSeq, message: checkpointMessage(c), tokens: checkpointTokens(c) }));
  const replaced = sumTokens(span) + sumTokens(olderParts);
  // Even an empty summary could not save the minimum: no LLM call is worth making.
  const hopeless = run.belowMinimum(replaced, params);
  if (hopeless) return { end: hopeless };

  steps.push('summarize');
  const target = Math.max(50, Math.min(params.summaryTargetTokens, Math.floor(replaced / 2)));
  let summary: string;
  try {
    const s = await summarizeSpan([...olderParts, ...span], input.summarizer, { instructions: params.instructions, targetTokens: target, goal: input.goal, countText: input.countText }, input.signal);
    run.account(s);
    summary = s.checkpoint.text.trim().replace(/^\[SUMMARY\]:?\s*/, '');
  } catch (error) {
    if (!(error instanceof LlmError)) throw error;
    run.llmCalls += error.attempts;
    events.push({ type: 'compression-error', line: `Summarizer failed (${error.kind}) after ${error.attempts} attempt(s); the previous context stays` });
    return { end: run.unchanged('failed', `llm-${error.kind}`) };
  }
  if (summary.length === 0) {
    events.push({ type: 'compression-error', line: 'Summarizer returned an empty summary; the previous context stays' });
    return { end: run.unchanged('failed', 'empty-summary') };
  }

  const text = `${SUMMARY_PREFIX}${summary}`;
  const fromSeq = minOf(span[0].seq, older.map((c) => c.fromSeq));
  const toSeq = maxOf(span[span.length - 1].seq, older.map((c) => c.toSeq));
  const checkpoint: Checkpoint = {
    id: contentId('ckpt', fromSeq, toSeq, text),
    fromSeq,
    toSeq,
    level: 0,
    text,
    tokens: input.countText(text),
    originalTokens: sumTokens(span) + older.reduce((n, c) => n + c.originalTokens, 0),
    ...(older.length > 0 ? { agedFromId: older[older.length - 1].id } : {}),
  };
  const treatments: Record<number, Treatment> = {};
  for (const [seq, t] of Object.entries(prefix.treatments)) treatments[Number(seq)] = t.kind === 'summarized' ? { kind: 'summarized', checkpointId: checkpoint.id } : t;
  for (const m of span) treatments[m.seq] = { kind: 'summarized', checkpointId: checkpoint.id };
  notes.summarized = span.length + older.length;
  return { prefix: { ...prefix, coversThroughSeq: Math.max(prefix.coversThroughSeq, toSeq), checkpoints: [checkpoint], treatments } };
};

/** Seed 000's SESSION_LOG lines ("Log action to SESSION_LOG", "Monitoring"); no clock value (Guarantee 8): the event carries its time. */
export function oneSummaryClosing(summarized: number, tokensBefore: number, tokensAfter: number, budget: number) {
  const saved = tokensBefore - tokensAfter;
  return [
    { type: 'checkpoint-created' as const, line: `Summarized ${summarized} messages → 1 summary (saved ~${fmt(saved)} tokens)` },
    {
      type: 'compressed' as const,
      line:
        `Token usage: Pre-summarization: ${fmt(tokensBefore)} / ${fmt(budget)} (${pct((100 * tokensBefore) / budget)}) · ` +
        `Post-summarization: ${fmt(tokensAfter)} / ${fmt(budget)} (${pct((100 * tokensAfter) / budget)}) · ` +
        `Savings: ${fmt(saved)} tokens (${Math.round((100 * saved) / tokensBefore)}% reduction)`,
    },
  ];
}
