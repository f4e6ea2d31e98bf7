import { RateLimited, RateLimitName } from '../errors/http-errors';

/** Every rate limit counts over a fixed window of one minute, from the window's first request. */
export const RATE_WINDOW_SECONDS = 60;

/** A counter's state after a request was counted. */
export interface WindowState {
  limit: RateLimitName;
  /** The limit in force (points per window). */
  value: number;
  /** What the window counted, this request included. */
  consumed: number;
  /** Milliseconds until the window ends and the count starts again. */
  msBeforeNext: number;
}

/** Whole seconds until the window ends, rounded up, at least 1 (Retry-After). */
export function retryAfterSeconds(msBeforeNext: number): number {
  return Math.max(1, Math.ceil(msBeforeNext / 1000));
}

const UNITS: Record<RateLimitName, string> = {
  requestsPerMinutePerKey: 'requests per minute for this API key',
  requestsPerMinute: "requests per minute for the tenant's keys together",
  appendedTokensPerMinute: 'appended tokens per minute for the tenant',
};

/** The 429 for a window that is full: the limit's name and value, and when to retry. */
export function rateLimited(state: Pick<WindowState, 'limit' | 'value' | 'msBeforeNext'>, extra = ''): RateLimited {
  const retry = retryAfterSeconds(state.msBeforeNext);
  const value = state.value.toLocaleString('en-US');
  return new RateLimited(state.limit, state.value, retry, `Rate limit reached: ${state.limit} allows ${value} ${UNITS[state.limit]}${extra}; retry in ${retry} s`);
}

/**
 * Whether an append of `tokens` that brought its window to `consumed` may be stored. It may when
 * the window still holds it, and also when it is the window's first append although larger than the
 * whole limit (it fills the window; refusing it would refuse it forever, as no window can hold it).
 */
export function appendFits(consumed: number, tokens: number, limit: number): boolean {
  return consumed <= limit || consumed - tokens <= 0;
}

/** `X-RateLimit-Limit` / `X-RateLimit-Remaining` of the window with the least room left. */
export function rateLimitHeaders(states: WindowState[]): Record<string, string> {
  if (states.length === 0) return {};
  const remaining = (s: WindowState) => Math.max(0, s.value - s.consumed);
  const tightest = states.reduce((a, b) => (remaining(b) < remaining(a) ? b : a));
  return { 'X-RateLimit-Limit': String(tightest.value), 'X-RateLimit-Remaining': String(remaining(tightest)) };
}
