import { CompactionInput, CompactionOutcome, CountMessage, SessionMessage } from './types';
import { ArtifactOutput } from './version';
import { CanonicalMessage } from '../messages/canonical';
import type { PresetTrigger } from '../policy/presets';

/**
 * A per-result step that applies at ingest, whatever the message's age (SPEC.md "Policies"):
 * deterministic, no LLM. Returns the message's context form, or undefined to keep it as is.
 * The full result stays in the history and, when offloaded, as an artifact.
 */
export type IngestStep<P> = (message: SessionMessage, params: P, count: CountMessage, names: ReadonlyMap<string, string>) => IngestResult | undefined;

export interface IngestResult {
  message: SessionMessage;
  artifacts: ArtifactOutput[];
  /** For the event line: `web-search condensed`, `offloaded`, … */
  stage: string;
}

/**
 * One preset of SPEC.md's table (libs/compaction/src/presets): its defaults, its trigger, and its
 * compaction run, which runs its stages (libs/compaction/src/stages) in order.
 */
export interface PresetDefinition<P extends object> {
  name: string;
  /** The seed it reproduces (`seed 000`) or `all` for `balanced`. */
  source: string;
  defaults: P;
  /** When the scheduler starts a threshold run (a session's `triggerFraction` override moves it). */
  trigger: PresetTrigger;
  run(input: CompactionInput, params: P): Promise<CompactionOutcome>;
  ingest?: IngestStep<P>;
  /**
   * Whether an appended message calls for an `ingest` run of the preset's per-result steps that
   * store or summarize (reads use Guarantee 4's fallback until it finishes); none when absent.
   */
  needsIngestRun?: (message: CanonicalMessage, tokens: number, params: P) => boolean;
}
