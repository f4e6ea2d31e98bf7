import { offloadLargeResult, toolNamesOf } from '../engine/offload';
import { ProtectionPolicy } from '../engine/protection';
import { Treatment } from '../engine/version';
import { Stage } from './stage';
import { maxOf } from '../engine/extremes';

/** The per-result step at ingest: a tool result above `offloadAboveTokens` goes to an artifact whatever its age (the history keeps it whole). */
export interface OffloadLargeResultsParams {
  protection: ProtectionPolicy;
  offloadAboveTokens: number;
}

/** Very large results of untreated messages to artifacts (an `ingest` run does only this). */
export const offloadLargeResults: Stage<OffloadLargeResultsParams> = ({ prefix, context, params, run }) => {
  const { input } = run;
  const treatments: Record<number, Treatment> = { ...prefix.treatments };
  const names = toolNamesOf(context);
  const artifacts: NonNullable<ReturnType<typeof offloadLargeResult>>['artifacts'] = [];
  const offloadedSeqs: number[] = [];
  const ingested = context.map((m) => {
    if (m.message.role === 'system' || prefix.treatments[m.seq] || m.message.tags?.includes('checkpoint')) return m;
    const r = offloadLargeResult(m, { offloadAboveTokens: params.offloadAboveTokens, protection: params.protection }, input.countMessage, names);
    if (!r) return m;
    artifacts.push(...r.artifacts);
    offloadedSeqs.push(m.seq);
    treatments[m.seq] = { kind: 'offloaded', artifactIds: r.artifacts.map((a) => a.id), message: r.message.message, tokens: r.message.tokens };
    return r.message;
  });
  if (offloadedSeqs.length > 0) {
    run.steps.push('offload');
    run.events.push({ type: 'offloaded', line: `Offloaded ${offloadedSeqs.length} large tool output(s) to artifacts (messages ${offloadedSeqs.join(', ')})` });
  }
  return { prefix: { ...prefix, coversThroughSeq: maxOf(prefix.coversThroughSeq, offloadedSeqs), treatments }, context: ingested, artifacts };
};
