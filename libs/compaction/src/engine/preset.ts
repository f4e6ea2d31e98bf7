import { CompactionInput, CompactionOutcome, CountMessage, SessionMessage } from './types';
import { ArtifactOutput } from './version';

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

/** One preset of SPEC.md's table: its defaults and its compaction run, over the shared engine stages. */
export interface PresetDefinition<P extends object> {
  name: string;
  /** The seed it reproduces (`seed 000`) or `all` for `balanced`. */
  source: string;
  defaults: P;
  run(input: CompactionInput, params: P): Promise<CompactionOutcome>;
  ingest?: IngestStep<P>;
}
