/** The LLM failure kinds that say the summarizer could not be reached or was overloaded, not that the request was wrong. */
const OUTAGE_REASONS = new Set(['llm-network', 'llm-server', 'llm-rate-limited', 'llm-timeout']);

/** The longest wait between two runs of a compaction held back by an LLM outage. */
export const LLM_RETRY_MAX_DELAY_MS = 60_000;

/**
 * Whether a failed compaction's reason is an LLM outage (connection refused or reset, 5xx, 429,
 * timeout) that is worth running again later; auth, bad-request and malformed answers are not.
 */
export function isLlmOutage(reason: string | undefined): boolean {
  return reason !== undefined && OUTAGE_REASONS.has(reason);
}

/**
 * The wait before run `run + 1` of a compaction that met an LLM outage on run `run` (1-based):
 * `baseMs` doubled per run, capped at LLM_RETRY_MAX_DELAY_MS, with jitter over its upper half so
 * the compactions an outage held back do not all return at the same instant.
 */
export function llmRetryDelayMs(run: number, baseMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(LLM_RETRY_MAX_DELAY_MS, baseMs * 2 ** Math.min(30, Math.max(0, run - 1)));
  return Math.round(ceiling * (0.5 + 0.5 * Math.min(1, Math.max(0, random()))));
}

/** The longest wait before the sweep lifts an llm-outage hold the summarizer probe cannot confirm (`unknown`). */
export const LLM_HOLD_RETRY_MAX_MS = 6 * 3600 * 1000;

/**
 * How long after an llm-outage hold the sweep lifts it when the probe says `unknown` (the provider answered its
 * list-models endpoint with neither 2xx nor an outage status): `baseMs` (COMPACTION_LLM_HOLD_RETRY_MS) doubled per
 * hold in a row (`holds`, 1-based), capped at 6 h. A probe saying `up` lifts it at once, `down` never.
 */
export function llmHoldRetryMs(holds: number, baseMs: number): number {
  return Math.min(LLM_HOLD_RETRY_MAX_MS, baseMs * 2 ** Math.min(30, Math.max(0, holds - 1)));
}
