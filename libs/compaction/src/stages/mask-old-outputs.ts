import { maskObservations } from '../engine/masking';
import { Protection, protectionOf } from '../engine/protection';
import { SessionMessage } from '../engine/types';
import { Treatment } from '../engine/version';
import { Stage } from './stage';
import { maxOf } from '../engine/extremes';

/** Observation masking: tool outputs older than the latest turns become one-line placeholders (each keeps its ledger keys). */
export interface MaskOldOutputsParams {
  /** Mask tool outputs older than the latest K turns. */
  maskKeepLatestTurns: number;
  maskMinTokens: number;
  /** When masking the old outputs is not enough, mask every unprotected output before summarizing. */
  maskAllBeforeSummary: boolean;
  /** The context's fill (fraction of the budget) above which the deeper masking starts… */
  summarizeAbove: number;
  /** …and the one it masks down to. */
  summarizeDownTo: number;
}

/** What masking tells the summary stage after it and the closing line. */
export interface MaskNotes {
  /** The protection of the context masking started from (the summary stage reads the same). */
  protection?: Protection;
  /** Messages masked by this run. */
  masked: number;
}

const sumTokens = (xs: SessionMessage[]) => xs.reduce((n, m) => n + m.tokens, 0);

/**
 * Masks tool outputs older than the latest `maskKeepLatestTurns` turns; when the context is still
 * over `summarizeAbove`, masks more of the newer outputs, oldest first, before paying for a
 * summary (cheap steps first; the conversation text stays): halves the turns kept until the
 * context is down to `summarizeDownTo`, or every unprotected output is masked. An `ingest` run
 * does not mask (masking waits for the threshold).
 */
export const maskOldOutputs: Stage<MaskOldOutputsParams, MaskNotes> = ({ prefix, context, protection: policy, params, run, notes }) => {
  const { input, steps } = run;
  const protection = protectionOf(context, policy);
  notes.protection = protection;
  if (input.trigger === 'ingest') return { prefix, context };
  // An automatic run masks the oldest outputs only until the context is down to `summarizeDownTo`: the rest of the
  // budget keeps newer outputs whole (the budget band, docs/compaction.md). "Compact now" masks every old output.
  const downToTokens = input.trigger === 'manual' ? undefined : Math.floor(params.summarizeDownTo * input.budget);
  let masked: { messages: SessionMessage[]; masked: number[] } = maskObservations(context, protection, { keepLatestTurns: params.maskKeepLatestTurns, minTokens: params.maskMinTokens, downToTokens }, input.countMessage);
  steps.push('mask');
  if (params.maskAllBeforeSummary && sumTokens(masked.messages) > params.summarizeAbove * input.budget) {
    let keep = params.maskKeepLatestTurns;
    while (keep > 0 && sumTokens(masked.messages) > params.summarizeDownTo * input.budget) {
      keep = keep <= 2 ? 0 : Math.floor(keep / 2);
      const deeper = maskObservations(masked.messages, protection, { keepLatestTurns: keep, minTokens: params.maskMinTokens, downToTokens }, input.countMessage);
      if (deeper.masked.length === 0) continue;
      masked = { messages: deeper.messages, masked: [...masked.masked, ...deeper.masked] };
      if (!steps.includes('mask-more')) steps.push('mask-more');
    }
  }
  const treatments: Record<number, Treatment> = { ...prefix.treatments };
  const maskedSet = new Set(masked.masked);
  for (const m of masked.messages) {
    if (!maskedSet.has(m.seq)) continue;
    const before = treatments[m.seq];
    // A message with an artifact reference keeps naming its artifact when its other outputs are masked.
    treatments[m.seq] = before?.kind === 'offloaded' ? { ...before, message: m.message, tokens: m.tokens } : { kind: 'masked', message: m.message, tokens: m.tokens };
  }
  notes.masked = masked.masked.length;
  return { prefix: { ...prefix, coversThroughSeq: maxOf(prefix.coversThroughSeq, masked.masked), treatments }, context: masked.messages };
};
