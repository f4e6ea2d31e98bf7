import { CanonicalMessage } from '../messages/canonical';
import { FactsLedger } from '../ledger/ledger';

// Facts of a checkpoint (seed 004's keyDecisions, filesModified, nextSteps), stored with each new checkpoint row.

export interface CheckpointFacts {
  keyDecisions: string[];
  filesModified: string[];
  nextSteps: string[];
}

/**
 * Seed 004's checkpoint fields, from the facts ledger (SPEC.md "Facts ledger") of the span and
 * the checkpoint text, deterministically (no LLM): files modified are the span's paths whose
 * last operation created, edited or deleted them (tool calls, an edit of the file last opened,
 * shell writes, `[ARTIFACT]` markers); key decisions are its decisions (`[DECISION]` markers,
 * sentences with a verb of choosing); next steps its open tasks (`[NEXT]` markers, `Next steps`
 * lines and lists, todo lists).
 */
export function checkpointFacts(text: string, messages: CanonicalMessage[]): CheckpointFacts {
  const summary: CanonicalMessage = { role: 'assistant', blocks: [{ type: 'text', text }] };
  const entries = FactsLedger.of([...messages, summary].map((message, i) => ({ seq: i + 1, message }))).entries();
  return {
    keyDecisions: entries.filter((e) => e.kind === 'decision').map((e) => e.value),
    filesModified: entries.filter((e) => e.kind === 'path' && (e.state === 'created' || e.state === 'edited' || e.state === 'deleted')).map((e) => e.value),
    nextSteps: entries.filter((e) => e.kind === 'task' && e.state !== 'done').map((e) => e.value),
  };
}

