/**
 * Policy presets (SPEC.md, "Policies"). This file names the presets and the trigger each
 * one uses for the threshold reported on append; their stages arrive with the compaction
 * engine. The trigger base is the budget, or the available budget for checkpoint-aging.
 */
export const PRESET_NAMES = ['balanced', 'factor3', 'watermark', 'two-layer', 'offload-compact', 'checkpoint-aging'] as const;
export type PresetName = (typeof PRESET_NAMES)[number];
export const DEFAULT_PRESET: PresetName = 'balanced';

export interface PolicyInput {
  preset: PresetName;
  /** Per-session overrides of the preset's parameters. */
  overrides: Record<string, unknown>;
}

export interface PresetTrigger {
  /** Fraction of the base at which a compaction is scheduled. */
  fraction: number;
  base: 'budget' | 'available';
}

const TRIGGERS: Record<PresetName, PresetTrigger> = {
  // docs/compaction.md "The budget band": compact at 85%, down to 65% (measured against 80% → 50% and 90% → 70%).
  balanced: { fraction: 0.85, base: 'budget' },
  factor3: { fraction: 0.5, base: 'budget' },
  // Seed 001 compacts at the watermark tool, not at a fill level; 0.8 guards the budget all the same.
  watermark: { fraction: 0.8, base: 'budget' },
  'two-layer': { fraction: 0.8, base: 'budget' },
  'offload-compact': { fraction: 0.8, base: 'budget' },
  'checkpoint-aging': { fraction: 0.8, base: 'available' },
};

export function isPresetName(value: unknown): value is PresetName {
  return typeof value === 'string' && (PRESET_NAMES as readonly string[]).includes(value);
}

export function presetTrigger(policy: PolicyInput): PresetTrigger {
  const trigger = TRIGGERS[policy.preset];
  const override = policy.overrides.triggerFraction;
  return typeof override === 'number' && override > 0 && override <= 1 ? { ...trigger, fraction: override } : trigger;
}

/** Seed 004: an automatic snapshot when the context crosses 80% of its budget; `overrides.snapshotFraction` changes it (0 turns it off). */
export const DEFAULT_SNAPSHOT_FRACTION = 0.8;
export function snapshotFraction(policy: PolicyInput): number {
  const override = policy.overrides.snapshotFraction;
  return typeof override === 'number' && override >= 0 && override <= 1 ? override : DEFAULT_SNAPSHOT_FRACTION;
}
