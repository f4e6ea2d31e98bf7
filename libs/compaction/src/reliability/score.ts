/**
 * Seed 004's reliability score (SPEC.md "Reliability score (seed 004)"):
 *
 *   score = modelFactor × compressionPenalty × contextConfidence
 *
 * shown as a percentage with a level (🟢 ≥ 85, 🟡 60–84, 🟠 40–59, 🔴 < 40) and, when low,
 * the seed's warning. Pure.
 */
import type { ModelSpec } from '@compactor/tokens';

type SizeTier = ModelSpec['sizeTier'];

/** What the score needs of a model: the catalog spec, or just its size. */
export type ReliabilityModel = ModelSpec | { id?: string; sizeTier: SizeTier; parameterCountB?: number };

/** Seed 004's size buckets, largest first: parameter count in billions → model factor. */
export const MODEL_SIZE_FACTORS: ReadonlyArray<{ minParametersB: number; factor: number }> = Object.freeze([
  { minParametersB: 70, factor: 0.95 },
  { minParametersB: 30, factor: 0.85 },
  { minParametersB: 13, factor: 0.7 },
  { minParametersB: 7, factor: 0.5 },
  { minParametersB: 0, factor: 0.3 },
]);

/**
 * The factor of a catalog tier, for models whose size is unpublished (the hosted ones: every
 * open model in the catalog has its parameter count). Each tier takes the bucket of what the
 * catalog puts in it:
 * - `frontier` (gpt-5, o3, claude-opus/sonnet-4.x, gemini-2.5-pro): ≥ 70B, as SPEC.md says;
 * - `large` (gpt-4o, gpt-4.1, claude-3.x sonnet/opus, gemini-1.5-pro; open models over 40B): ≥ 30B;
 * - `medium` (the -mini, flash and haiku-4.5 class; open models of 10–40B; unknown models): ≥ 13B;
 * - `small` (nano, flash-lite, claude-3-haiku; gemini-1.5-flash-8b is 8B; open models under 10B): ≥ 7B.
 */
export const SIZE_TIER_FACTORS: Readonly<Record<SizeTier, number>> = Object.freeze({
  frontier: 0.95,
  large: 0.85,
  medium: 0.7,
  small: 0.5,
});

export const COMPRESSION_PENALTY_PER_COMPACTION = 0.15;
/** Seed 004: "Never go below 30%". The seed sets no other floor: a context that lost its pinned facts reads low. */
export const COMPRESSION_PENALTY_FLOOR = 0.3;

export type ReliabilityLevel = 'high' | 'medium' | 'low' | 'critical';

export interface ReliabilityLevelInfo {
  level: ReliabilityLevel;
  /** The lowest score (0–100) of the level. */
  min: number;
  emoji: string;
  label: string;
  /** Seed 004's words for the level. */
  description: string;
}

/** Seed 004's levels, highest first. */
export const RELIABILITY_LEVELS: readonly ReliabilityLevelInfo[] = Object.freeze([
  { level: 'high', min: 85, emoji: '🟢', label: 'High', description: 'Excellent reliability' },
  { level: 'medium', min: 60, emoji: '🟡', label: 'Medium', description: 'Good reliability' },
  { level: 'low', min: 40, emoji: '🟠', label: 'Low', description: 'Degraded reliability' },
  { level: 'critical', min: -Infinity, emoji: '🔴', label: 'Critical', description: 'Poor reliability' },
]);

export interface ReliabilityInput {
  model: ReliabilityModel;
  /** Compactions the session's context has been through. */
  compactions: number;
  /** Share of the facts ledger that survived the last compaction (0–1); 1.0 before any. */
  contextConfidence?: number;
}

export interface Reliability {
  /** 0–100, one decimal. */
  score: number;
  level: ReliabilityLevel;
  emoji: string;
  label: string;
  description: string;
  /** Seed 004's UI badge: `🟡 65%` (the whole percent rounded down, so it agrees with the level). */
  badge: string;
  /** Seed 004's warning for low and critical reliability; null otherwise. */
  warning: string | null;
  factors: { modelFactor: number; compressionPenalty: number; contextConfidence: number };
}

/** Seed 004's model factor: by parameter count when the catalog knows it, else by the size tier (SIZE_TIER_FACTORS). */
export function modelFactorOf(model: ReliabilityModel): number {
  const b = model.parameterCountB;
  if (typeof b === 'number' && Number.isFinite(b) && b > 0) {
    return (MODEL_SIZE_FACTORS.find((s) => b >= s.minParametersB) ?? MODEL_SIZE_FACTORS[MODEL_SIZE_FACTORS.length - 1]).factor;
  }
  return SIZE_TIER_FACTORS[model.sizeTier] ?? SIZE_TIER_FACTORS.medium;
}

const compactionCount = (n: number) => (Number.isFinite(n) && n > 0 ? Math.floor(n) : 0);

/** `max(1 − 0.15 × compactions, 0.30)`. */
export function compressionPenaltyOf(compactions: number): number {
  // Rounded so that 1 − 0.15 × 2 is 0.7, not 0.7000000000000001.
  const penalty = Math.round((1 - COMPRESSION_PENALTY_PER_COMPACTION * compactionCount(compactions)) * 1e6) / 1e6;
  return Math.max(penalty, COMPRESSION_PENALTY_FLOOR);
}

/** The level of a score (0–100): 🟢 ≥ 85, 🟡 60–84, 🟠 40–59, 🔴 < 40. */
export function reliabilityLevelOf(score: number): ReliabilityLevelInfo {
  return RELIABILITY_LEVELS.find((l) => score >= l.min) ?? RELIABILITY_LEVELS[RELIABILITY_LEVELS.length - 1];
}

const times = (n: number) => (n === 1 ? '1 time' : `${n} times`);

/**
 * Seed 004's "Context Compression Warning", filled in for the session. Below 40% it gives the
 * seed's "Poor Reliability" advice instead (start a new conversation, a larger model, …).
 */
function warningOf(level: ReliabilityLevel, model: ReliabilityModel, compactions: number, factors: Reliability['factors']): string | null {
  if (level !== 'low' && level !== 'critical') return null;
  const name = 'id' in model && model.id ? `Your model (${model.id})` : 'Your model';
  const lines = ['⚠️ Context Compression Warning'];
  lines.push(compactions > 0 ? `${name} has compressed the conversation ${times(compactions)}.` : `${name} has not compressed the conversation yet.`);
  // The seed's sentence is about small models; a large one is low only after many compactions.
  lines.push(
    factors.modelFactor < SIZE_TIER_FACTORS.large
      ? 'Small models may lose context accuracy after multiple compressions.'
      : 'Models may lose context accuracy after multiple compressions.',
  );
  if (factors.contextConfidence < 1) {
    lines.push(`${Math.round(factors.contextConfidence * 100)}% of the pinned facts (paths, identifiers, error codes, commands) survived the last compression.`);
  }
  if (level === 'critical') {
    lines.push('Reliability is below 40%: start a new conversation.');
    lines.push('', 'Recommendations:', '- Start new conversation', '- Use larger model (13B+ recommended)', '- Review and preserve important decisions', '- Create checkpoint before continuing');
  } else {
    lines.push('', 'Recommendations:', '- Continue if making good progress', '- Start new conversation if seeing hallucinations', '- Use larger model for complex long-term tasks');
  }
  return lines.join('\n');
}

/**
 * Seed 004's reliability of a session's context. The score is a percentage with one decimal,
 * and the level is read from that shown number, so a badge never says 85.0 in yellow. A
 * negative or non-numeric compaction count counts as 0; the confidence is clamped to 0–1 and
 * is 1.0 when not given (no compaction yet).
 */
export function reliabilityOf(input: ReliabilityInput): Reliability {
  const compactions = compactionCount(input.compactions);
  const confidence = input.contextConfidence;
  const factors = {
    modelFactor: modelFactorOf(input.model),
    compressionPenalty: compressionPenaltyOf(compactions),
    contextConfidence: typeof confidence === 'number' && Number.isFinite(confidence) ? Math.min(Math.max(confidence, 0), 1) : 1,
  };
  // The product is first rounded to 1e-9 so that 0.95 × 0.7 × 0.9 = 0.59849999… rounds half up to 59.9, as on paper.
  const product = Math.round(factors.modelFactor * factors.compressionPenalty * factors.contextConfidence * 1e9) / 1e9;
  const score = Math.round(product * 1000) / 10;
  const info = reliabilityLevelOf(score);
  return {
    score,
    level: info.level,
    emoji: info.emoji,
    label: info.label,
    description: info.description,
    badge: `${info.emoji} ${Math.floor(score)}%`,
    warning: warningOf(info.level, input.model, compactions, factors),
    factors,
  };
}
