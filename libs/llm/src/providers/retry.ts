/**
 * Retry timing for the remote summarizers (seed 003: 3 attempts with backoff).
 *
 * Delay before retry n (n = 1 after the first failure): full jitter,
 * `random() × min(maxDelayMs, baseDelayMs × 2^(n-1))`. A `Retry-After` (or `retry-after-ms`)
 * header from the upstream replaces that delay, capped at `maxRetryAfterMs`.
 */

export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export interface RetryOptions {
  /** Attempts in total, first call included (default 3, seed 003). */
  maxAttempts?: number;
  /** Base of the exponential backoff (default 500 ms). */
  baseDelayMs?: number;
  /** Cap of the exponential backoff (default 8 s). */
  maxDelayMs?: number;
  /** Cap of an upstream's `Retry-After` (default 30 s). */
  maxRetryAfterMs?: number;
}

export const DEFAULT_RETRY: Required<RetryOptions> = Object.freeze({
  maxAttempts: 3,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
  maxRetryAfterMs: 30_000,
});

/** The default sleep: a timer that an abort signal ends early (rejecting). */
export const defaultSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, Math.max(0, ms));
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** Full-jitter exponential backoff for the retry after failed attempt `attempt` (1-based). */
export function backoffDelayMs(attempt: number, random: () => number, options: Required<RetryOptions>): number {
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.floor(r * ceiling);
}

interface HeaderSource {
  get(name: string): string | null | undefined;
}

function headerValue(headers: unknown, name: string): string | undefined {
  if (!headers || typeof headers !== 'object') return undefined;
  if (typeof (headers as HeaderSource).get === 'function') {
    const value = (headers as HeaderSource).get(name);
    return value ?? undefined;
  }
  const record = headers as Record<string, unknown>;
  for (const [key, value] of Object.entries(record)) {
    if (key.toLowerCase() === name && typeof value === 'string') return value;
  }
  return undefined;
}

/**
 * The wait an upstream asked for, in ms: `retry-after-ms` (OpenAI), else `Retry-After` in
 * seconds or as an HTTP date. Undefined when absent or unreadable.
 */
export function parseRetryAfterMs(headers: unknown, now: () => number = Date.now): number | undefined {
  const ms = headerValue(headers, 'retry-after-ms');
  if (ms !== undefined && ms.trim() !== '') {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return Math.ceil(value);
  }
  const raw = headerValue(headers, 'retry-after')?.trim();
  if (!raw) return undefined;
  if (/^\d+(\.\d+)?$/.test(raw)) return Math.ceil(Number(raw) * 1000);
  // An HTTP date names its day and month; bare numbers such as `-1` would parse as years.
  if (!/[a-z]{3}/i.test(raw)) return undefined;
  const date = Date.parse(raw);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now());
}
