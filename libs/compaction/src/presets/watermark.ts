import { DefinedPreset, definePreset } from './define';
import { stripBeforeWatermark, watermarkClosing, WatermarkNotes, watermarkNotes, WatermarkStripParams } from '../stages/watermark-strip';

export * from '../stages/watermark-strip';

/**
 * `watermark` (seed 001, SPEC.md "Policies"): one stage, the strip before the watermark (see
 * stages/watermark-strip.ts). It bounds only this stage (Guarantee 3): the latest-N protection
 * does not apply, while system prompts and (by default) pinned messages are kept.
 */
export interface WatermarkParams extends WatermarkStripParams {
  /** Read by `presetTrigger`: the fill level at which a threshold compaction is scheduled. */
  triggerFraction: number;
  /** A run saving less than max(minSavingFraction × budget, minSavingTokens) is skipped (Guarantee 5). */
  minSavingFraction: number;
  minSavingTokens: number;
}

export const WATERMARK_DEFAULTS: WatermarkParams = {
  checkpointToolNames: ['compress_to_checkpoint'],
  keepPinned: true,
  triggerFraction: 0.8,
  minSavingFraction: 0.05,
  minSavingTokens: 1_000,
};

export const WATERMARK: DefinedPreset<WatermarkParams, WatermarkNotes, 'watermark'> = definePreset<WatermarkParams, WatermarkNotes, 'watermark'>({
  name: 'watermark',
  source: 'seed 001',
  defaults: WATERMARK_DEFAULTS,
  // Seed 001 compacts at the watermark tool, not at a fill level; 0.8 guards the budget all the same.
  trigger: { fraction: 0.8, base: 'budget' },
  pipeline: {
    stages: [stripBeforeWatermark],
    // The watermark bounds only its own stage: no latest-N protection (pinned messages are the stage's `keepPinned`).
    protection: () => ({ latestMessages: 0, latestUserTexts: 0, allUserTexts: false, exemptToolNames: [] }),
    notes: watermarkNotes,
    // Seed 001 reports its warnings with a skipped run.
    unchangedEvents: 'all',
    closing: (s) => [watermarkClosing(s.notes, s.tokensBefore - s.tokensAfter)],
    stats: (s) => ({ watermarkSeq: s.notes.watermark, blocksRemoved: s.notes.blocksRemoved, messagesRemoved: s.notes.dropped }),
  },
});

/** One `watermark` run. */
export const compactWatermark = WATERMARK.run;
