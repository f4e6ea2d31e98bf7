import { ProtectionPolicy } from '../engine/protection';
import { postprocessToolResults, TOOL_POSTPROCESS_DEFAULTS, ToolPostprocessParams } from '../engine/tool-postprocess';
import { Stage } from '../stages/stage';
import { OneSummaryNotes, OneSummaryParams, oneSummaryClosing, summarizeIntoOne } from '../stages/summarize-into-one';
import { DefinedPreset, definePreset } from './define';

export { factor3Protection, SUMMARY_PREFIX } from '../stages/summarize-into-one';

/**
 * `factor3` (SPEC.md "Policies", seed 000 "Context Compression (Factor 3)"): at 50% of the
 * budget (the trigger is `presetTrigger`'s), everything but the latest 3 messages is summarized
 * into one `[SUMMARY]` checkpoint with the seed's prompt; the seed's protection rules hold;
 * tool outputs are post-processed at ingest; `verbosity: 'debug'` turns compression off.
 */
export interface Factor3Params extends OneSummaryParams {
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

/** Seed 000 "Debug verbosity: user requested" (`context.verbosity=debug`): nothing is compressed. */
const unlessDebug: Stage<Factor3Params, OneSummaryNotes> = ({ prefix, params, run }) => (params.verbosity === 'debug' ? { end: run.unchanged('skipped', 'verbosity-debug') } : { prefix });

export const FACTOR3: DefinedPreset<Factor3Params, OneSummaryNotes, 'factor3'> = definePreset<Factor3Params, OneSummaryNotes, 'factor3'>({
  name: 'factor3',
  source: 'seed 000',
  defaults: FACTOR3_DEFAULTS,
  trigger: { fraction: 0.5, base: 'budget' },
  pipeline: {
    stages: [unlessDebug, summarizeIntoOne],
    protection: (params) => params.protection,
    notes: () => ({ summarized: 0 }),
    // Seed 000 reports every event of a run that changed nothing (its SESSION_LOG lines), not only errors.
    unchangedEvents: 'all',
    noSaving: 'strict',
    closing: (s) => oneSummaryClosing(s.notes.summarized, s.tokensBefore, s.tokensAfter, s.input.budget),
  },
  // Seed 000 "Debug verbosity … user requested": nothing is post-processed either.
  ingest: (message, params, count, names) => (params.verbosity === 'debug' ? undefined : postprocessToolResults(message, params.postprocess, count, names)),
});

/**
 * One `factor3` compaction (seed 000 `auto_summarize`, at 50% of the budget: the trigger is
 * `presetTrigger`'s): never returns more tokens than it was given; a saving below the minimum is
 * `skipped` (Guarantee 5); an LLM failure is `failed` with the previous prefix.
 */
export const compactFactor3 = FACTOR3.run;
