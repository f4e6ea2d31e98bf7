import { LlmError } from '../llm/summarizer';
import { CanonicalMessage } from '../messages/canonical';
import { PresetDefinition } from './preset';
import { exchangeRange, Protection, ProtectionPolicy, protectionOf } from './protection';
import { summarizableMessages, summarizeSpan } from './summarize';
import { postprocessToolResults, TOOL_POSTPROCESS_DEFAULTS, ToolPostprocessParams } from './tool-postprocess';
import { CompactionInput, CompactionOutcome, SessionMessage } from './types';
import { applyPrefix, Checkpoint, checkpointMessage, contentId, Treatment, VersionPrefix } from './version';
import { wholePhraseTest } from './text-scan';
import { CompactionRun } from './run';

/**
 * `factor3` (SPEC.md "Policies", seed 000 "Context Compression (Factor 3)"): at 50% of the
 * budget (the trigger is `presetTrigger`'s), everything but the latest 3 messages is summarized
 * into one `[SUMMARY]` checkpoint with the seed's prompt; the seed's protection rules hold;
 * tool outputs are post-processed at ingest; `verbosity: 'debug'` turns compression off.
 */
export interface Factor3Params {
  /** Seed 000 "Trigger": summarize at 50% of the budget. The scheduler's trigger (`presetTrigger` reads the session's override); `run` compacts whenever it is called. */
  triggerFraction: number;
  /** Seed 000 "Keep latest 2-3 messages intact": the latest 3 (`session["messages"][-3:]`). */
  protection: ProtectionPolicy;
  /**
   * Seed 000 "NEVER summarize": messages tagged with one of these are kept whole — persona
   * definitions, SESSION_LOG content, active state checkpoints, user constraints/requirements.
   */
  protectedTags: string[];
  /** SESSION_LOG content: tool calls whose arguments name this file (and their results), text that starts with it. */
  sessionLogName: string;
  /**
   * User-provided constraints or requirements: a user message (not tagged `observation`) of at
   * most `constraintMaxChars` whose text holds one of these phrases (whole words, any case) is
   * kept. Longer user texts are pasted material rather than a stated constraint.
   */
  constraintPhrases: string[];
  constraintMaxChars: number;
  /** Seed 000 "Debug verbosity: user requested" (`context.verbosity=debug`): `debug` disables compression. */
  verbosity: string;
  /** The summary's target size ("Be concise"); never more than half of what it replaces. */
  summaryTargetTokens: number;
  /** A compaction saving less than max(minSavingFraction × budget, minSavingTokens) is skipped (Guarantee 5). */
  minSavingFraction: number;
  minSavingTokens: number;
  /** Seed 000's summary prompt. */
  instructions: string;
  /** Seed 000 "Selective Tool Post-Processing", at ingest. */
  postprocess: ToolPostprocessParams;
}

/** Seed 000's summary prompt, word for word ("Send to LLM with prompt"). */
export const FACTOR3_INSTRUCTIONS = [
  'Summarize the following conversation, preserving:',
  '- Key decisions made',
  '- Unresolved issues',
  '- Current task state',
  'Be concise.',
].join('\n');

export const FACTOR3_DEFAULTS: Factor3Params = {
  triggerFraction: 0.5,
  protection: { latestMessages: 3, latestUserTexts: 0, allUserTexts: false, exemptToolNames: [] },
  protectedTags: ['persona', 'session-log', 'checkpoint', 'state', 'constraint', 'requirement'],
  sessionLogName: 'SESSION_LOG',
  constraintPhrases: ['must', 'must not', 'never', 'always', 'do not', "don't", 'required', 'requirement', 'requirements', 'constraint', 'constraints', 'only use', 'make sure'],
  constraintMaxChars: 1_000,
  verbosity: 'normal',
  summaryTargetTokens: 1_000,
  minSavingFraction: 0.05,
  minSavingTokens: 1_000,
  instructions: FACTOR3_INSTRUCTIONS,
  postprocess: TOOL_POSTPROCESS_DEFAULTS,
};

/** Seed 000 prefixes the summary message with `[SUMMARY]: ` (`f"[SUMMARY]: {summary}"`). */
export const SUMMARY_PREFIX = '[SUMMARY]: ';

const sumTokens = (xs: SessionMessage[]) => xs.reduce((n, m) => n + m.tokens, 0);
const fmt = (n: number) => n.toLocaleString('en-US');
const pct = (n: number) => `${Number(n.toFixed(1))}%`;

const texts = (m: CanonicalMessage) => m.blocks.flatMap((b) => (b.type === 'text' ? [b.text] : []));

/** Seed 000's protection rules for one message, beyond what `protectionOf` covers (system prompts, pinned, the latest N). */
function ruleOf(m: CanonicalMessage, params: Factor3Params, constraint: ((text: string) => boolean) | undefined): 'whole' | 'user-text' | undefined {
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
export function factor3Protection(context: SessionMessage[], params: Factor3Params): Protection {
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
 * One `factor3` compaction (seed 000 `auto_summarize`): the messages before the latest 3 that no
 * rule protects, together with the summary in force, become one `[SUMMARY]` checkpoint. Never
 * returns more tokens than it was given; a saving below the minimum is `skipped` (Guarantee 5);
 * an LLM failure is `failed` with the previous prefix (the seed prescribes no fallback).
 */
export async function compactFactor3(input: CompactionInput, params: Factor3Params = FACTOR3_DEFAULTS): Promise<CompactionOutcome> {
  const checkpointTokens = (c: Checkpoint) => input.countMessage(checkpointMessage(c));
  const context = applyPrefix(input.prefix, input.history, checkpointTokens);
  const tokensBefore = sumTokens(context);
  // Seed 000 reports every event of a run that changed nothing (its SESSION_LOG lines), not only errors.
  const run = new CompactionRun(input, tokensBefore, { keepEvents: 'all' });
  const { usage, steps, events, unchanged } = run;

  if (params.verbosity === 'debug') return unchanged('skipped', 'verbosity-debug');

  const protection = factor3Protection(context, params);
  const span = summarizableMessages(context, protection);
  if (span.length === 0) return unchanged('skipped', 'nothing-to-summarize');
  // The summary in force is folded into the new one: seed 000 summarizes `messages[:-3]`, its earlier [SUMMARY] included.
  const older = input.prefix.checkpoints;
  const olderParts: SessionMessage[] = older.map((c) => ({ seq: c.fromSeq, message: checkpointMessage(c), tokens: checkpointTokens(c) }));
  const replaced = sumTokens(span) + sumTokens(olderParts);
  // Even an empty summary could not save the minimum: no LLM call is worth making.
  const hopeless = run.belowMinimum(replaced, params);
  if (hopeless) return hopeless;

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
    return unchanged('failed', `llm-${error.kind}`);
  }
  if (summary.length === 0) {
    events.push({ type: 'compression-error', line: 'Summarizer returned an empty summary; the previous context stays' });
    return unchanged('failed', 'empty-summary');
  }

  const text = `${SUMMARY_PREFIX}${summary}`;
  const fromSeq = Math.min(span[0].seq, ...older.map((c) => c.fromSeq));
  const toSeq = Math.max(span[span.length - 1].seq, ...older.map((c) => c.toSeq));
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
  for (const [seq, t] of Object.entries(input.prefix.treatments)) treatments[Number(seq)] = t.kind === 'summarized' ? { kind: 'summarized', checkpointId: checkpoint.id } : t;
  for (const m of span) treatments[m.seq] = { kind: 'summarized', checkpointId: checkpoint.id };
  const prefix: VersionPrefix = { ...input.prefix, coversThroughSeq: Math.max(input.prefix.coversThroughSeq, toSeq), checkpoints: [checkpoint], treatments };
  const tokensAfter = sumTokens(applyPrefix(prefix, input.history, checkpointTokens));
  if (tokensAfter >= tokensBefore) return unchanged('skipped', 'no-saving');
  const saved = tokensBefore - tokensAfter;
  const tooLittle = run.belowMinimum(saved, params);
  if (tooLittle) return tooLittle;

  // Seed 000's SESSION_LOG lines ("Log action to SESSION_LOG", "Monitoring"); no clock value (Guarantee 8): the event carries its time.
  events.push({ type: 'checkpoint-created', line: `Summarized ${span.length + older.length} messages → 1 summary (saved ~${fmt(saved)} tokens)` });
  events.push({
    type: 'compressed',
    line:
      `Token usage: Pre-summarization: ${fmt(tokensBefore)} / ${fmt(input.budget)} (${pct((100 * tokensBefore) / input.budget)}) · ` +
      `Post-summarization: ${fmt(tokensAfter)} / ${fmt(input.budget)} (${pct((100 * tokensAfter) / input.budget)}) · ` +
      `Savings: ${fmt(saved)} tokens (${Math.round((100 * saved) / tokensBefore)}% reduction)`,
  });
  return { status: 'succeeded', prefix, tokensBefore, tokensAfter, steps, usage, llmCalls: run.llmCalls, events, artifacts: [] };
}

export const FACTOR3: PresetDefinition<Factor3Params> = {
  name: 'factor3',
  source: 'seed 000',
  defaults: FACTOR3_DEFAULTS,
  run: compactFactor3,
  // Seed 000 "Debug verbosity … user requested": nothing is post-processed either.
  ingest: (message, params, count, names) => (params.verbosity === 'debug' ? undefined : postprocessToolResults(message, params.postprocess, count, names)),
};
