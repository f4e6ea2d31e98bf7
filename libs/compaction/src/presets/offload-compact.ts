import { ValidationFailed } from '../errors';
import { ParamLayer } from '../policy/params';
import { referencedArtifactIds } from '../engine/offload';
import { SessionMessage } from '../engine/types';
import { ArtifactOutput } from '../engine/version';
import { compactHistory, CompactHistoryNotes, CompactHistoryParams } from '../stages/compact-history';
import { offloadResults, OffloadResultsParams } from '../stages/offload-results';
import { RunSummary, Stage } from '../stages/stage';
import { DefinedPreset, definePreset } from './define';

export { COMPRESSED_HISTORY_HEADER } from '../stages/compact-history';

/**
 * `offload-compact` (seed 003, SPEC.md "Policies"): at 80% of the budget, offload tool results
 * to artifacts first; when that frees less than `triggerThreshold` tokens and the context is
 * still over the threshold, compact: the summarizer sees the original (restored) content of
 * everything but the latest `preserveCount` messages and writes the eight-section summary.
 * Parameter names are seed 003's (`CompactOptions`, `COMPACT_TRIGGER_THRESHOLD`).
 */
export interface OffloadCompactParams extends OffloadResultsParams, CompactHistoryParams {
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

/** Seed 003's edge cases before anything runs: a history of at most `preserveCount` messages, and a context under the threshold (unless `/compact`). */
const worthCompacting: Stage<OffloadCompactParams, CompactHistoryNotes> = ({ prefix, context, params, run }) => {
  const live = context.filter((m: SessionMessage) => m.message.role !== 'system');
  if (live.length <= params.preserveCount) return { end: run.unchanged('skipped', 'history-too-short') };
  const threshold = Math.floor(params.triggerFraction * run.input.budget);
  if (run.input.trigger !== 'manual' && run.tokensBefore <= threshold) return { end: run.unchanged('skipped', `below-threshold (${fmt(run.tokensBefore)} ≤ ${fmt(threshold)} tokens)`) };
  return { prefix, context };
};

type Summary = RunSummary<OffloadCompactParams, CompactHistoryNotes>;
/** Artifacts of messages summarized in this run are referenced by nothing: not stored at all. */
const keptArtifacts = (s: Summary): ArtifactOutput[] => {
  const referenced = referencedArtifactIds(s.prefix.treatments);
  return s.artifacts.filter((a) => referenced.has(a.id));
};
const releasedCount = (s: Summary) => {
  const referenced = referencedArtifactIds(s.prefix.treatments);
  return [...referencedArtifactIds(s.input.prefix.treatments)].filter((id) => !referenced.has(id)).length;
};
const preservedCount = (s: Summary) => s.after.filter((m) => m.message.role !== 'system').length;

export const OFFLOAD_COMPACT: DefinedPreset<OffloadCompactParams, CompactHistoryNotes, 'offload-compact'> = definePreset<OffloadCompactParams, CompactHistoryNotes, 'offload-compact'>({
  name: 'offload-compact',
  source: 'seed 003',
  defaults: OFFLOAD_COMPACT_DEFAULTS,
  trigger: { fraction: 0.8, base: 'budget' },
  pipeline: {
    // Offload first; compact when that freed too little.
    stages: [worthCompacting, offloadResults, compactHistory],
    protection: (params) => ({ latestMessages: params.preserveCount, latestUserTexts: 0, allUserTexts: false, exemptToolNames: params.exemptToolNames }),
    notes: () => ({ freed: 0, after: 0, summarized: 0 }),
    unchangedStats: (_params, _context, tokensBefore) => ({ previousTokens: tokensBefore, currentTokens: tokensBefore, freedTokens: 0 }),
    artifacts: keptArtifacts,
    leading: (s) => {
      const n = keptArtifacts(s).length;
      return n > 0 ? [{ type: 'offloaded', line: `Offloaded ${n} tool results to artifacts (freed ~${fmt(s.notes.freed)} tokens)` }] : [];
    },
    closing: (s) => {
      const released = releasedCount(s);
      return [
        {
          type: 'compressed',
          line:
            `Compacted ${fmt(s.tokensBefore)} → ${fmt(s.tokensAfter)} tokens (freed ~${fmt(s.tokensBefore - s.tokensAfter)}; ` +
            `${keptArtifacts(s).length} tool results offloaded, ${s.notes.summarized} messages summarized, ${preservedCount(s)} messages preserved` +
            `${released > 0 ? `, ${released} artifacts no longer referenced` : ''})`,
        },
      ];
    },
    stats: (s) => ({
      previousTokens: s.tokensBefore,
      currentTokens: s.tokensAfter,
      freedTokens: s.tokensBefore - s.tokensAfter,
      preservedCount: preservedCount(s),
      offloadedCount: keptArtifacts(s).length,
      summarizedCount: s.notes.summarized,
      unreferencedArtifacts: releasedCount(s),
    }),
    extra: (s) => (s.notes.compactError ? { reason: `compact-failed-offload-kept (llm-${s.notes.compactError.kind})` } : {}),
  },
});

/**
 * One `offload-compact` run. A `manual` trigger is seed 003's `/compact` (forceCompact):
 * compaction without the offload step.
 */
export const compactOffloadCompact = OFFLOAD_COMPACT.run;
