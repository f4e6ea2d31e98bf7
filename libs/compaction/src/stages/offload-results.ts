import { offloadToolResults, offloadTreatments, toolNamesOf } from '../engine/offload';
import { Protection, protectionOf } from '../engine/protection';
import { SessionMessage } from '../engine/types';
import { Stage } from './stage';
import { maxOf } from '../engine/extremes';

/** Seed 003's first stage: tool results to artifacts (a reference plus a digest in the context). */
export interface OffloadResultsParams {
  /** Results at or below this many tokens are not worth offloading. */
  offloadMinTokens: number;
}

/** What the offload stage tells the stages after it and the closing lines. */
export interface OffloadNotes {
  /** The protection computed from the context the run started from (the compaction after it reads the same). */
  protection?: Protection;
  /** Tokens the offload freed. */
  freed: number;
  /** The context's tokens after it. */
  after: number;
}

const sumTokens = (xs: SessionMessage[]) => xs.reduce((n, m) => n + m.tokens, 0);

/**
 * Offloads the tool results of untreated messages, so every artifact holds the history's
 * original content; protected messages (the latest N, exempt tools) stay. A `manual` run
 * (seed 003's `/compact`, forceCompact) does not offload.
 */
export const offloadResults: Stage<OffloadResultsParams, OffloadNotes> = ({ prefix, context, protection: policy, params, run, notes }) => {
  const { input } = run;
  const protection = protectionOf(context, policy);
  notes.protection = protection;
  if (input.trigger === 'manual') {
    notes.freed = 0;
    notes.after = sumTokens(context);
    return { prefix, context };
  }
  run.steps.push('offload');
  const skip: Protection = { ...protection, whole: new Set([...protection.whole, ...context.filter((m) => prefix.treatments[m.seq] !== undefined).map((m) => m.seq)]) };
  const off = offloadToolResults(context, skip, { minTokens: params.offloadMinTokens }, input.countMessage, toolNamesOf(input.history));
  notes.after = sumTokens(off.messages);
  notes.freed = run.tokensBefore - notes.after;
  return {
    prefix: { ...prefix, coversThroughSeq: maxOf(prefix.coversThroughSeq, off.offloaded.map((o) => o.seq)), treatments: { ...prefix.treatments, ...offloadTreatments(off) } },
    context: off.messages,
    artifacts: off.artifacts,
  };
};
