import { CompactionRun, MinSavingParams } from '../engine/run';
import { ProtectionPolicy } from '../engine/protection';
import { CompactionEvent, CompactionInput, CompactionOutcome, SessionMessage } from '../engine/types';
import { applyPrefix, ArtifactOutput, Checkpoint, checkpointMessage, VersionPrefix } from '../engine/version';

// SPEC.md "Policies": a policy is an ordered list of stages with parameters. A stage is one
// step of a compaction (offload, mask, summarize, age, strip before a watermark…); a preset
// (libs/compaction/src/presets) is data: its stages, their parameters and its trigger.

/** What a stage reads. */
export interface StageInput<P, N = object> {
  /** The prefix so far: the head's, or what the stages before this one made of it. */
  prefix: VersionPrefix;
  /**
   * The context that prefix gives: covered messages in their treated form, then the tail (the
   * messages after `coversThroughSeq`, live as appended).
   */
  context: SessionMessage[];
  /** SPEC.md's `budget` of the session. */
  budget: number;
  /** The protection policy the preset declares (Guarantee 3). */
  protection: ProtectionPolicy;
  params: P;
  /**
   * The run: its input (history, summarizer, counters, goal, ledger, signal), and where a stage
   * adds its usage (`account`), steps and events. Its `unchanged` ends a run that cannot go on.
   */
  run: CompactionRun;
  /** What the preset's stages tell each other and its closing line (counts, flags), typed per preset. */
  notes: N;
}

/** What a stage gives: a new prefix, with its events and usage added to the run. */
export interface StageOutput {
  prefix: VersionPrefix;
  /** The context of the new prefix when the stage has it at hand (else it is applied again). */
  context?: SessionMessage[];
  /** Offloaded content the stage produced (stored by the worker before the commit). */
  artifacts?: ArtifactOutput[];
  /** Events reported only when the run succeeds, once the minimum saving held, in order. */
  onSuccess?: CompactionEvent[];
}

/** A stage either goes on with a new prefix, or ends the run (skipped or failed, with the previous prefix). */
export type StageResult = StageOutput | { end: CompactionOutcome };

export type Stage<P, N = object> = (input: StageInput<P, N>) => Promise<StageResult> | StageResult;

/** The figures a preset's closing line and stats read. */
export interface RunSummary<P, N> {
  input: CompactionInput;
  params: P;
  notes: N;
  /** The context the run started from. */
  before: SessionMessage[];
  /** The context of the new prefix. */
  after: SessionMessage[];
  prefix: VersionPrefix;
  tokensBefore: number;
  tokensAfter: number;
  /** The artifacts the stages produced. */
  artifacts: ArtifactOutput[];
}

/** How a preset runs its stages: what every run shares, parameterized. */
export interface StagePipeline<P extends MinSavingParams, N> {
  stages: ReadonlyArray<Stage<P, N>>;
  /** The protection policy the stages read. */
  protection: (params: P, context: SessionMessage[], input: CompactionInput) => ProtectionPolicy;
  /** The notes the stages start with. */
  notes: (params: P) => N;
  /** Which events an unchanged outcome reports (`all` for seeds whose log shows every line), and its stats. */
  unchangedEvents?: 'errors' | 'all';
  unchangedStats?: (params: P, context: SessionMessage[], tokensBefore: number, input: CompactionInput) => CompactionOutcome['stats'];
  /** The stats of the skipped outcome when the saving is too small or none (default: the run's). */
  settleStats?: (summary: Omit<RunSummary<P, N>, 'after' | 'tokensAfter'> & { tokensAfter: number }) => CompactionOutcome['stats'];
  /** `strict`: a run that leaves the tokens as they were is `no-saving` (not `saving-below-minimum (0 < …)`). */
  noSaving?: 'grown' | 'strict';
  /** The closing events of a succeeded run (after the stages' own `onSuccess` events). */
  closing: (summary: RunSummary<P, N>) => CompactionEvent[];
  /** The artifacts a succeeded run hands over (default: all the stages produced). */
  artifacts?: (summary: RunSummary<P, N>) => ArtifactOutput[];
  /** Events to put first in a succeeded run (seed 003 reports its offload before the rest). */
  leading?: (summary: RunSummary<P, N>) => CompactionEvent[];
  stats?: (summary: RunSummary<P, N>) => CompactionOutcome['stats'];
  /** The prefix the stages leave, as the preset hands it on (default: as it is). */
  settlePrefix?: (prefix: VersionPrefix) => VersionPrefix;
  /** Extra fields of a succeeded outcome (the facts-ledger totals). */
  extra?: (summary: RunSummary<P, N>) => Partial<CompactionOutcome>;
}

const sumTokens = (xs: SessionMessage[]) => xs.reduce((n, m) => n + m.tokens, 0);

/**
 * One compaction: the stages in order over the head's prefix, then Guarantee 5 (a run never
 * increases tokens, and one that saves less than the minimum is `skipped`), then the preset's
 * closing line. Pure apart from the summarizer calls the stages make.
 */
export async function runStages<P extends MinSavingParams, N>(pipeline: StagePipeline<P, N>, input: CompactionInput, params: P): Promise<CompactionOutcome> {
  const checkpointTokens = (c: Checkpoint) => input.countMessage(checkpointMessage(c));
  const before = applyPrefix(input.prefix, input.history, checkpointTokens);
  const tokensBefore = sumTokens(before);
  const run = new CompactionRun(input, tokensBefore, {
    keepEvents: pipeline.unchangedEvents ?? 'errors',
    ...(pipeline.unchangedStats ? { stats: () => pipeline.unchangedStats?.(params, before, tokensBefore, input) } : {}),
  });
  const notes = pipeline.notes(params);
  const protection = pipeline.protection(params, before, input);
  let prefix = input.prefix;
  let context = before;
  const artifacts: ArtifactOutput[] = [];
  const onSuccess: CompactionEvent[] = [];
  for (const stage of pipeline.stages) {
    const r = await stage({ prefix, context, budget: input.budget, protection, params, run, notes });
    if ('end' in r) return r.end;
    prefix = r.prefix;
    context = r.context ?? applyPrefix(prefix, input.history, checkpointTokens);
    if (r.artifacts) artifacts.push(...r.artifacts);
    if (r.onSuccess) onSuccess.push(...r.onSuccess);
  }
  if (pipeline.settlePrefix) prefix = pipeline.settlePrefix(prefix);

  const after = applyPrefix(prefix, input.history, checkpointTokens);
  const tokensAfter = sumTokens(after);
  const summary: RunSummary<P, N> = { input, params, notes, before, after, prefix, tokensBefore, tokensAfter, artifacts };
  const settleStats = pipeline.settleStats?.(summary);
  if (pipeline.noSaving === 'strict' ? tokensAfter >= tokensBefore : tokensAfter > tokensBefore) return run.unchanged('skipped', 'no-saving', settleStats);
  const tooLittle = run.belowMinimum(tokensBefore - tokensAfter, params, settleStats);
  if (tooLittle) return tooLittle;

  const events = [...(pipeline.leading?.(summary) ?? []), ...run.events, ...onSuccess, ...pipeline.closing(summary)];
  const outcome: CompactionOutcome = {
    status: 'succeeded',
    prefix,
    tokensBefore,
    tokensAfter,
    steps: run.steps,
    usage: run.usage,
    llmCalls: run.llmCalls,
    events,
    artifacts: pipeline.artifacts ? pipeline.artifacts(summary) : artifacts,
  };
  const stats = pipeline.stats?.(summary);
  if (stats !== undefined) outcome.stats = stats;
  return { ...outcome, ...(pipeline.extra?.(summary) ?? {}) };
}
