import { ProtectionPolicy } from '../engine/protection';
import { MaskNotes, maskOldOutputs, MaskOldOutputsParams } from '../stages/mask-old-outputs';
import { offloadLargeResults, OffloadLargeResultsParams } from '../stages/offload-large-results';
import { summarizeOldest, SummarizeOldestNotes, SummarizeOldestParams } from '../stages/summarize-oldest';
import { DefinedPreset, definePreset } from './define';

/** `balanced` (SPEC.md "Policies"): cheap steps first, the LLM last. Every field can be overridden per session. */
export interface BalancedParams extends OffloadLargeResultsParams, MaskOldOutputsParams, SummarizeOldestParams {
  protection: ProtectionPolicy;
  /** A tool result above this many tokens is offloaded to an artifact as soon as it arrives (an `ingest` run), whatever its age. */
  offloadAboveTokens: number;
  /** Mask tool outputs older than the latest K turns. */
  maskKeepLatestTurns: number;
  maskMinTokens: number;
  /** When masking the old outputs is not enough, mask every unprotected output before summarizing. */
  maskAllBeforeSummary: boolean;
  /** Summarize only if the context is still above this fraction of the budget after masking. */
  summarizeAbove: number;
  /** A summary takes the oldest span that brings the context down to this fraction of the budget (the rest stays verbatim). */
  summarizeDownTo: number;
  /** A new checkpoint is at most this fraction of the budget; each aging step halves it. */
  checkpointFraction: number;
  /** All checkpoints together stay under this fraction of the budget (older ones merge). */
  checkpointsMaxFraction: number;
  /** A new checkpoint's Facts section (ledger entries its summary lacks) takes at most this fraction of the budget. */
  ledgerFraction: number;
  /** All Facts sections together stay under this fraction of the budget (the oldest lose their lowest entries first). */
  ledgerMaxFraction: number;
  /** A compaction saving less than max(minSavingFraction × budget, minSavingTokens) is skipped (Guarantee 5). */
  minSavingFraction: number;
  minSavingTokens: number;
  instructions: string;
}

export const BALANCED_INSTRUCTIONS = [
  'Summarize this span of an AI agent session so the agent can continue the task without it.',
  'Keep: the user instructions and constraints; decisions and their reasons; files created, edited or read and what changed;',
  'commands run and their outcome; errors and what fixed them; values that changed (only the latest counts); open tasks and next steps.',
  'Be factual and terse; use the exact identifiers, paths and numbers from the span.',
].join(' ');

export const BALANCED_DEFAULTS: BalancedParams = {
  protection: { latestMessages: 6, latestUserTexts: 3, allUserTexts: false, exemptToolNames: [] },
  offloadAboveTokens: 8_000,
  maskKeepLatestTurns: 10,
  maskMinTokens: 50,
  maskAllBeforeSummary: true,
  // The band (docs/compaction.md): triggered at 90% of the budget, masking brings the context down to 70%;
  // a summary only when masking alone leaves it above 80%.
  summarizeAbove: 0.8,
  summarizeDownTo: 0.7,
  checkpointFraction: 0.1,
  checkpointsMaxFraction: 0.3,
  ledgerFraction: 0.1,
  ledgerMaxFraction: 0.3,
  minSavingFraction: 0.05,
  minSavingTokens: 1_000,
  instructions: BALANCED_INSTRUCTIONS,
};

const fmt = (n: number) => n.toLocaleString('en-US');

type BalancedNotes = MaskNotes & SummarizeOldestNotes;

/**
 * `balanced`: cheap steps first, the LLM last. Very large results go to artifacts; old tool
 * outputs are masked; if the context is still above `summarizeAbove` of the budget, the oldest
 * unprotected span becomes a checkpoint and the older checkpoints age. Never returns more tokens
 * than it was given, and a saving below the minimum is `skipped` (Guarantee 5); an LLM failure
 * is `failed` with the previous prefix in place.
 */
export const BALANCED: DefinedPreset<BalancedParams, BalancedNotes, 'balanced'> = definePreset<BalancedParams, BalancedNotes, 'balanced'>({
  name: 'balanced',
  source: 'all',
  defaults: BALANCED_DEFAULTS,
  // docs/compaction.md "The budget band": compact at 90%, down to 70%.
  trigger: { fraction: 0.9, base: 'budget' },
  pipeline: {
    stages: [offloadLargeResults, maskOldOutputs, summarizeOldest],
    protection: (params) => params.protection,
    notes: () => ({ masked: 0 }),
    // balanced's prefix holds only what its stages wrote: the head's goal block (the worker freezes a new one) and watermark are not
    // carried, so the goal block's tokens count as saved (as before issue #16; the worker adds the new block's tokens on top).
    settlePrefix: ({ coversThroughSeq, checkpoints, treatments }) => ({ coversThroughSeq, checkpoints, treatments }),
    closing: (s) => [
      {
        type: 'compressed',
        line: `Compacted ${fmt(s.tokensBefore)} → ${fmt(s.tokensAfter)} tokens (saved ~${fmt(s.tokensBefore - s.tokensAfter)}; ${s.notes.masked} tool outputs masked, ${s.prefix.checkpoints.length} checkpoint(s))`,
      },
    ],
    // An artifact whose message a checkpoint replaced in this run is referenced by nothing.
    artifacts: (s) => s.artifacts.filter((a) => s.prefix.treatments[a.seq]?.kind === 'offloaded'),
    extra: (s) => (s.notes.ledger ? { ledger: s.notes.ledger } : {}),
  },
  // A result above `offloadAboveTokens` is offloaded by an `ingest` run as soon as it arrives.
  needsIngestRun: (_message, tokens, params) => tokens > params.offloadAboveTokens,
});

/** One `balanced` compaction. */
export const compactBalanced = BALANCED.run;
