import { ValidationFailed } from '../errors';
import { LlmError } from '../llm/summarizer';
import { ParamLayer } from '../policy/params';
import { offloadToolResults, offloadTreatments, referencedArtifactIds, toolNamesOf } from './offload';
import { PresetDefinition } from './preset';
import { exchangeRange, Protection, protectionOf } from './protection';
import { summarizeSpan } from './summarize';
import { CompactionInput, CompactionOutcome, SessionMessage } from './types';
import { applyPrefix, Checkpoint, checkpointMessage, contentId, Treatment, VersionPrefix } from './version';
import { closeOverToolPairs, toolPairLinks } from './tool-pairs';
import { CompactionRun } from './run';

/**
 * `offload-compact` (seed 003, SPEC.md "Policies"): at 80% of the budget, offload tool results
 * to artifacts first; when that frees less than `triggerThreshold` tokens and the context is
 * still over the threshold, compact: the summarizer sees the original (restored) content of
 * everything but the latest `preserveCount` messages and writes the eight-section summary.
 * Parameter names are seed 003's (`CompactOptions`, `COMPACT_TRIGGER_THRESHOLD`).
 */
export interface OffloadCompactParams {
  /** The context fill (fraction of the budget) at which the run offloads, and above which it compacts. */
  triggerFraction: number;
  /** Seed 003 `COMPACT_TRIGGER_THRESHOLD`: compaction runs when offloading freed fewer tokens than this. */
  triggerThreshold: number;
  /** Seed 003 `targetTokens`: the summary's target length. */
  targetTokens: number;
  /** Seed 003 `preserveCount`: the latest N messages are kept as they are (and never offloaded). */
  preserveCount: number;
  /** Seed 003 `model`: the summarizer model; empty = the configured summarizer's own. Read by the worker that builds the summarizer. */
  model: string;
  /** Seed 003 `retryCount`: summarizer attempts. Retries happen inside the provider (the worker passes this on), never here. */
  retryCount: number;
  /** Results at or below this many tokens are not worth offloading. */
  offloadMinTokens: number;
  /** Results of these tools are never offloaded or summarized (Guarantee 3). */
  exemptToolNames: string[];
  /** A run saving less than max(minSavingFraction × budget, minSavingTokens) is skipped (Guarantee 5). */
  minSavingFraction: number;
  minSavingTokens: number;
  /** The summary prompt; `{targetTokens}` is replaced by the target. */
  instructions: string;
}

/** Seed 003's `compact-summary.md`, word for word. */
export const OFFLOAD_COMPACT_INSTRUCTIONS = `Please provide a comprehensive summary of our conversation structured as follows:

## Technical Context
Development environment, tools, frameworks, and configurations in use.

## Project Overview
Main project goals, features, and scope. Key components and their relationships.

## Code Changes
Files created, modified, or analyzed. Specific implementations added.

## Debugging & Issues
Problems encountered, root causes, and solutions implemented.

## Current Status
What was just completed. Current state of the codebase.

## Pending Tasks
Immediate next steps and priorities. Known issues needing attention.

## User Preferences
Coding style, formatting, and workflow preferences observed.

## Key Decisions
Important technical decisions made and their rationale.

Focus on information essential for continuing effectively. Target length: approximately {targetTokens} tokens.`;

export const OFFLOAD_COMPACT_DEFAULTS: OffloadCompactParams = {
  triggerFraction: 0.8,
  triggerThreshold: 15_000,
  targetTokens: 8_000,
  preserveCount: 5,
  model: '',
  retryCount: 3,
  offloadMinTokens: 500,
  exemptToolNames: [],
  minSavingFraction: 0.05,
  minSavingTokens: 1_000,
  instructions: OFFLOAD_COMPACT_INSTRUCTIONS,
};

/** The summary's heading in the context (seed 003's `[Compressed History]` message). */
export const COMPRESSED_HISTORY_HEADER = '[Compressed History]';

export interface OffloadCompactEnvParam {
  path: keyof OffloadCompactParams;
  type: 'number' | 'string';
}

/** Seed 003's environment variables (`SYNAPSE_COMPACT_*`) under Compactor's prefix, each with the parameter it sets. */
export const OFFLOAD_COMPACT_ENV: Readonly<Record<string, OffloadCompactEnvParam>> = {
  COMPACTOR_COMPACT_TRIGGER_THRESHOLD: { path: 'triggerThreshold', type: 'number' },
  COMPACTOR_COMPACT_TARGET_TOKENS: { path: 'targetTokens', type: 'number' },
  COMPACTOR_COMPACT_PRESERVE_COUNT: { path: 'preserveCount', type: 'number' },
  COMPACTOR_COMPACT_MODEL: { path: 'model', type: 'string' },
  COMPACTOR_COMPACT_RETRY_COUNT: { path: 'retryCount', type: 'number' },
};

/**
 * The environment layer of `resolveParams` from an environment object (the config module passes
 * its validated env; this lib never reads `process.env`). A value that is not a non-negative
 * integer where a number is expected is a `ValidationFailed` naming the variable.
 */
export function offloadCompactEnvLayer(env: Readonly<Record<string, string | undefined>>): ParamLayer {
  const values: Record<string, unknown> = {};
  const problems: Array<{ field: string; message: string }> = [];
  for (const [name, { path, type }] of Object.entries(OFFLOAD_COMPACT_ENV)) {
    const raw = env[name];
    if (raw === undefined || raw.trim() === '') continue;
    if (type === 'string') values[path] = raw.trim();
    else if (/^\d+$/.test(raw.trim())) values[path] = Number(raw.trim());
    else problems.push({ field: name, message: `must be a non-negative integer (got '${raw}')` });
  }
  if (problems.length > 0) throw new ValidationFailed(problems);
  return { source: 'COMPACTOR_COMPACT_*', values };
}

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
 * One `offload-compact` run. A `manual` trigger is seed 003's `/compact` (forceCompact):
 * compaction without the offload step. An LLM failure keeps what the offload step achieved when
 * that alone is worth a version (seed 003: the offloaded history was already written), and is
 * otherwise `failed` with the previous prefix.
 */
export async function compactOffloadCompact(input: CompactionInput, params: OffloadCompactParams = OFFLOAD_COMPACT_DEFAULTS): Promise<CompactionOutcome> {
  const checkpointTokens = (c: Checkpoint) => input.countMessage(checkpointMessage(c));
  const context = applyPrefix(input.prefix, input.history, checkpointTokens);
  const tokensBefore = sumTokens(context);
  const run = new CompactionRun(input, tokensBefore, { stats: () => ({ previousTokens: tokensBefore, currentTokens: tokensBefore, freedTokens: 0 }) });
  const { usage, steps, events, unchanged } = run;

  const live = context.filter((m) => m.message.role !== 'system');
  if (live.length <= params.preserveCount) return unchanged('skipped', 'history-too-short');
  const manual = input.trigger === 'manual';
  const threshold = Math.floor(params.triggerFraction * input.budget);
  if (!manual && tokensBefore <= threshold) return unchanged('skipped', `below-threshold (${fmt(tokensBefore)} ≤ ${fmt(threshold)} tokens)`);

  const protection = protectionOf(context, {
    latestMessages: params.preserveCount,
    latestUserTexts: 0,
    allUserTexts: false,
    exemptToolNames: params.exemptToolNames,
  });
  const treatments: Record<number, Treatment> = { ...input.prefix.treatments };
  const historyBySeq = new Map(input.history.map((m) => [m.seq, m]));
  let current = context;
  let coversThroughSeq = input.prefix.coversThroughSeq;
  let checkpoints = input.prefix.checkpoints;
  let newArtifacts: CompactionOutcome['artifacts'] = [];

  // 1. Offload: only untreated messages, so every artifact holds the history's original content.
  if (!manual) {
    steps.push('offload');
    const skip: Protection = { ...protection, whole: new Set([...protection.whole, ...context.filter((m) => treatments[m.seq] !== undefined).map((m) => m.seq)]) };
    const off = offloadToolResults(context, skip, { minTokens: params.offloadMinTokens }, input.countMessage, toolNamesOf(input.history));
    Object.assign(treatments, offloadTreatments(off));
    newArtifacts = off.artifacts;
    coversThroughSeq = Math.max(coversThroughSeq, ...off.offloaded.map((o) => o.seq));
    current = off.messages;
  }
  const afterOffload = sumTokens(current);
  const freedByOffload = tokensBefore - afterOffload;

  // 2. Compact when offloading was not enough (seed 003: freedTokens < 15K and still over the threshold).
  let summarized = 0;
  let compactError: LlmError | undefined;
  if (manual || (freedByOffload < params.triggerThreshold && afterOffload > threshold)) {
    const span = compactableSpan(current, protection);
    if (span.length > 0) {
      // Restore offloaded content: the summarizer reads the original result, not the reference.
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
        const fromSeq = Math.min(...span.map((m) => m.seq), ...checkpoints.map((c) => c.fromSeq));
        const toSeq = Math.max(...span.map((m) => m.seq), ...checkpoints.map((c) => c.toSeq));
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
          summarized = span.length;
          events.push({
            type: 'checkpoint-created',
            line: `Summarized ${span.length} messages → 1 summary (saved ~${fmt(replaced - checkpointTokens(checkpoint))} tokens)`,
          });
        }
      } catch (error) {
        if (!(error instanceof LlmError)) throw error;
        compactError = error;
        run.llmCalls += error.attempts;
      }
    }
  }

  const minSaving = run.minSaving(params);
  if (compactError) {
    const line = `Summarizer failed (${compactError.kind}) after ${compactError.attempts} attempt(s)`;
    // Seed 003: the offloaded history stays when the compaction fails (the summary step changed nothing yet).
    if (freedByOffload >= minSaving) events.push({ type: 'compression-error', line: `${line}; the offloaded context stays` });
    else {
      events.push({ type: 'compression-error', line: `${line}; the previous context stays` });
      return unchanged('failed', `llm-${compactError.kind}`);
    }
  }

  const prefix: VersionPrefix = { ...input.prefix, coversThroughSeq, checkpoints, treatments };
  const after = applyPrefix(prefix, input.history, checkpointTokens);
  const tokensAfter = sumTokens(after);
  if (tokensAfter > tokensBefore) return unchanged('skipped', 'no-saving');
  const tooLittle = run.belowMinimum(tokensBefore - tokensAfter, params);
  if (tooLittle) return tooLittle;

  // Artifacts of messages summarized in this run are referenced by nothing: not stored at all.
  const referenced = referencedArtifactIds(treatments);
  const artifacts = newArtifacts.filter((a) => referenced.has(a.id));
  const released = [...referencedArtifactIds(input.prefix.treatments)].filter((id) => !referenced.has(id)).length;
  const preservedCount = after.filter((m) => m.message.role !== 'system').length;
  if (artifacts.length > 0) {
    events.unshift({ type: 'offloaded', line: `Offloaded ${artifacts.length} tool results to artifacts (freed ~${fmt(freedByOffload)} tokens)` });
  }
  events.push({
    type: 'compressed',
    line:
      `Compacted ${fmt(tokensBefore)} → ${fmt(tokensAfter)} tokens (freed ~${fmt(tokensBefore - tokensAfter)}; ` +
      `${artifacts.length} tool results offloaded, ${summarized} messages summarized, ${preservedCount} messages preserved` +
      `${released > 0 ? `, ${released} artifacts no longer referenced` : ''})`,
  });
  return {
    status: 'succeeded',
    ...(compactError ? { reason: `compact-failed-offload-kept (llm-${compactError.kind})` } : {}),
    prefix,
    tokensBefore,
    tokensAfter,
    steps,
    usage,
    llmCalls: run.llmCalls,
    events,
    artifacts,
    stats: {
      previousTokens: tokensBefore,
      currentTokens: tokensAfter,
      freedTokens: tokensBefore - tokensAfter,
      preservedCount,
      offloadedCount: artifacts.length,
      summarizedCount: summarized,
      unreferencedArtifacts: released,
    },
  };
}

export const OFFLOAD_COMPACT: PresetDefinition<OffloadCompactParams> = {
  name: 'offload-compact',
  trigger: { fraction: 0.8, base: 'budget' },
  source: 'seed 003',
  defaults: OFFLOAD_COMPACT_DEFAULTS,
  run: compactOffloadCompact,
};
