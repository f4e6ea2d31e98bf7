import type { components } from '../api/schema';
import { formatFactor } from './session-format';

export type ReliabilityView = components['schemas']['ReliabilityView'];
export type ReliabilityLevel = ReliabilityView['level'];

/** Seed 004's bands: 🟢 ≥ 85, 🟡 60–84, 🟠 40–59, 🔴 < 40 (the API computes the level; the legend repeats it). */
export const RELIABILITY_BANDS: { level: ReliabilityLevel; emoji: string; label: string; range: string }[] = [
  { level: 'high', emoji: '🟢', label: 'High', range: '≥ 85' },
  { level: 'medium', emoji: '🟡', label: 'Medium', range: '60–84' },
  { level: 'low', emoji: '🟠', label: 'Low', range: '40–59' },
  { level: 'critical', emoji: '🔴', label: 'Critical', range: '< 40' },
];

export interface ReliabilityFactorView {
  key: keyof ReliabilityView['factors'];
  label: string;
  value: number;
  text: string;
  explanation: string;
}

export interface ReliabilityBadgeView {
  level: ReliabilityLevel;
  emoji: string;
  label: string;
  /** The score rounded for display, 0–100. */
  score: number;
  /** "🟠 Low · 47": what the badge shows. */
  text: string;
  /** "Reliability 47 of 100, low": what a screen reader hears. */
  accessibleName: string;
  warning: string | null;
  factors: ReliabilityFactorView[];
}

const FACTORS: { key: ReliabilityFactorView['key']; label: string; explanation: string }[] = [
  { key: 'modelFactor', label: 'Model factor', explanation: "From the model's size tier (≥ 70B 0.95 … smaller 0.30)." },
  { key: 'compressionPenalty', label: 'Compression penalty', explanation: 'max(1 − 0.15 × compactions, 0.30).' },
  { key: 'contextConfidence', label: 'Context confidence', explanation: 'Share of the pinned facts (paths, ids, errors, commands, numbers, locked decisions) that survived the last compaction.' },
];

export function reliabilityBadge(reliability: ReliabilityView): ReliabilityBadgeView {
  const score = Math.round(reliability.score);
  const band = RELIABILITY_BANDS.find((b) => b.level === reliability.level);
  const label = reliability.label || band?.label || reliability.level;
  const emoji = reliability.emoji || band?.emoji || '';
  return {
    level: reliability.level,
    emoji,
    label,
    score,
    text: `${emoji} ${label} · ${score}`.trim(),
    accessibleName: `Reliability ${score} of 100, ${label.toLowerCase()}`,
    warning: reliability.warning ?? null,
    factors: FACTORS.map(({ key, label: factorLabel, explanation }) => ({
      key,
      label: factorLabel,
      value: reliability.factors[key],
      text: formatFactor(reliability.factors[key]),
      explanation,
    })),
  };
}
