import { PRESET_DEFINITIONS, PresetName } from '../presets';

/**
 * Policy presets (SPEC.md, "Policies"): their names and the trigger each one uses for the
 * threshold reported on append, read from the presets' own files (libs/compaction/src/presets).
 * The trigger base is the budget, or the available budget for checkpoint-aging.
 */
export type { PresetName };
/** Every preset's name, in the presets' list order (a tuple, as z.enum and the OpenAPI enums take it). */
export const PRESET_NAMES = PRESET_DEFINITIONS.map((p) => p.name) as unknown as readonly [PresetName, ...PresetName[]];
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

const TRIGGERS = Object.fromEntries(PRESET_DEFINITIONS.map((p) => [p.name, p.trigger])) as Record<PresetName, PresetTrigger>;

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
