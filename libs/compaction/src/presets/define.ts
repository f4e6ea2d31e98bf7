import { IngestStep, PresetDefinition } from '../engine/preset';
import { CompactionInput, CompactionOutcome } from '../engine/types';
import { MinSavingParams } from '../engine/run';
import type { PresetTrigger } from '../policy/presets';
import { runStages, StagePipeline } from '../stages/stage';

/** A preset as data: its parameters' defaults, its trigger, its stages and what its run does around them, its step at ingest. */
export interface PresetData<P extends MinSavingParams, N, Name extends string = string> {
  /** The preset's name in policies, the API and the dashboard (PresetName is the union of these). */
  name: Name;
  /** The seed it reproduces (`seed 000`) or `all` for `balanced`. */
  source: string;
  defaults: P;
  trigger: PresetTrigger;
  pipeline: StagePipeline<P, N>;
  ingest?: IngestStep<P>;
  needsIngestRun?: PresetDefinition<P>['needsIngestRun'];
}

/** A preset with its run: its stages over the given parameters (its defaults when none are given). */
export type DefinedPreset<P extends MinSavingParams, N, Name extends string = string> = PresetData<P, N, Name> &
  PresetDefinition<P> & { name: Name; run(input: CompactionInput, params?: P): Promise<CompactionOutcome> };

/** The registry's view of a preset: its run is its stages (`runStages`). */
export function definePreset<P extends MinSavingParams, N, Name extends string = string>(data: PresetData<P, N, Name>): DefinedPreset<P, N, Name> {
  return { ...data, run: (input, params = data.defaults) => runStages(data.pipeline, input, params) };
}
