import { estimateImageTokens, ImageDetail } from './images';
import { ModelSpec } from './types';

/** Opaque provider blocks are estimated from their JSON at one token per 3 characters (o200k averages ~4). */
export const OPAQUE_CHARS_PER_TOKEN = 3;

export interface CountableParts {
  /** Raw counts in `spec.encoding` of the message's texts (from `TokenCountPool.count` or `countTextSync`). */
  textTokens: number[];
  /** Pixel size when known; `detail` as an OpenAI image part gives it. */
  images: Array<{ width?: number; height?: number; detail?: ImageDetail }>;
  /** `JSON.stringify` of each opaque block. */
  opaqueJson: string[];
}

/**
 * One message's tokens for `spec`, an integer ≥ 1:
 * - base tokens = messageOverhead + Σ textTokens, counted in `spec.encoding`;
 * - other tokens = images (by provider formula) + opaque blocks (⌈JSON chars / 3⌉), already
 *   model-token estimates;
 * - exact models: base + other; approx models: ⌈(base × multiplier + other) × (1 + margin)⌉
 *   — the multiplier converts base-encoding tokens only, the margin covers the whole estimate.
 */
export function combineCounts(parts: CountableParts, spec: ModelSpec): number {
  let base = spec.messageOverhead;
  for (const tokens of parts.textTokens) base += tokens;
  let other = 0;
  for (const image of parts.images) other += estimateImageTokens(image.width, image.height, spec, image.detail);
  for (const json of parts.opaqueJson) other += Math.ceil(json.length / OPAQUE_CHARS_PER_TOKEN);
  const total = spec.accuracy === 'exact' ? base + other : (base * spec.multiplier + other) * (1 + spec.margin);
  // Rounding guard: 100 × 1.1 is 110.00000000000001 in floating point.
  return Math.max(1, Math.ceil(total - 1e-9));
}

/** The range a recalibrated multiplier is kept in. */
export const MULTIPLIER_RANGE = { min: 0.5, max: 3 } as const;
/** How far one observation moves the multiplier towards what it implies. */
const SMOOTHING = 0.3;
/** One observation may imply at most halving or doubling (a truncated or odd request is not a trend). */
const MAX_RATIO_STEP = 2;

/**
 * The session's next multiplier after the upstream reported `reportedTokens`
 * (`usage.input_tokens`) for a request we estimated at `estimatedTokens` with `current`
 * (both for the same request, margin included as `combineCounts` gives it). Moves 30% of
 * the way to the multiplier that would have matched, so over a few requests the estimate
 * converges on what the provider counts; clamped to 0.5–3. Invalid inputs leave it unchanged.
 */
export function recalibratedMultiplier(current: number, estimatedTokens: number, reportedTokens: number): number {
  if (!Number.isFinite(current) || current <= 0) return clampMultiplier(1);
  if (!Number.isFinite(estimatedTokens) || !Number.isFinite(reportedTokens) || estimatedTokens < 1 || reportedTokens < 1) {
    return clampMultiplier(current);
  }
  const ratio = Math.min(MAX_RATIO_STEP, Math.max(1 / MAX_RATIO_STEP, reportedTokens / estimatedTokens));
  const target = current * ratio;
  const next = current + SMOOTHING * (target - current);
  return clampMultiplier(Math.round(next * 10_000) / 10_000);
}

function clampMultiplier(value: number): number {
  return Math.min(MULTIPLIER_RANGE.max, Math.max(MULTIPLIER_RANGE.min, value));
}
