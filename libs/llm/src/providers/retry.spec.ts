import { failureForStatus, redactSecrets, upstreamCode } from './errors';
import { backoffDelayMs, DEFAULT_RETRY, defaultSleep, parseRetryAfterMs } from './retry';

// The pure parts of the retry policy (seed 003): what is retried, how long to wait, what an error may say.

describe('failureForStatus', () => {
  it.each([
    [400, 'bad-request', false],
    [401, 'auth', false],
    [403, 'auth', false],
    [404, 'bad-request', false],
    [408, 'timeout', true],
    [413, 'bad-request', false],
    [422, 'bad-request', false],
    [429, 'rate-limited', true],
    [500, 'server', true],
    [502, 'server', true],
    [503, 'server', true],
    [529, 'server', true],
  ] as const)('%i → %s (retryable: %s)', (status, kind, retryable) => {
    expect(failureForStatus(status)).toMatchObject({ kind, retryable, status });
  });

  it('keeps Retry-After only where a retry follows', () => {
    expect(failureForStatus(429, undefined, 1500).retryAfterMs).toBe(1500);
    expect(failureForStatus(503, undefined, 1500).retryAfterMs).toBe(1500);
    expect(failureForStatus(400, undefined, 1500).retryAfterMs).toBeUndefined();
  });
});

describe('backoffDelayMs (full jitter)', () => {
  it('draws from [0, min(8 s, 500 ms × 2^(n-1)))', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffDelayMs(n, () => 0.999999, DEFAULT_RETRY))).toEqual([499, 999, 1999, 3999, 7999, 7999, 7999]);
    expect(backoffDelayMs(3, () => 0, DEFAULT_RETRY)).toBe(0);
    expect(backoffDelayMs(2, () => 0.5, DEFAULT_RETRY)).toBe(500);
  });
});

describe('parseRetryAfterMs', () => {
  const now = () => Date.parse('2026-01-01T00:00:00Z');

  it('reads seconds, retry-after-ms and HTTP dates', () => {
    expect(parseRetryAfterMs(new Headers({ 'retry-after': '2' }))).toBe(2000);
    expect(parseRetryAfterMs(new Headers({ 'retry-after': '0.25' }))).toBe(250);
    expect(parseRetryAfterMs(new Headers({ 'retry-after-ms': '1234.2', 'retry-after': '9' }))).toBe(1235);
    expect(parseRetryAfterMs(new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:07 GMT' }), now)).toBe(7000);
    expect(parseRetryAfterMs(new Headers({ 'retry-after': 'Wed, 31 Dec 2025 23:59:00 GMT' }), now)).toBe(0);
    expect(parseRetryAfterMs({ 'Retry-After': '3' })).toBe(3000);
  });

  it('ignores absent and unreadable values', () => {
    expect(parseRetryAfterMs(new Headers())).toBeUndefined();
    expect(parseRetryAfterMs(new Headers({ 'retry-after': 'soon' }))).toBeUndefined();
    expect(parseRetryAfterMs(new Headers({ 'retry-after': '-1' }))).toBeUndefined();
    expect(parseRetryAfterMs(undefined)).toBeUndefined();
  });
});

describe('defaultSleep', () => {
  it('rejects at once when the signal is already aborted, and ends early on abort', async () => {
    const aborted = AbortSignal.abort(new Error('stop'));
    await expect(defaultSleep(60_000, aborted)).rejects.toThrow('stop');
    const controller = new AbortController();
    const pending = defaultSleep(60_000, controller.signal);
    controller.abort(new Error('later'));
    await expect(pending).rejects.toThrow('later');
  });
});

describe('secrets in messages', () => {
  it('redacts the given secrets and anything shaped like an API key', () => {
    expect(redactSecrets('key my-org-secret-value and sk-proj-abcdefghijkl', ['my-org-secret-value'])).toBe('key [redacted] and sk-[redacted]');
  });

  it('keeps only short identifiers from upstream error bodies, never their messages', () => {
    expect(upstreamCode({ error: { type: 'error', error: { type: 'rate_limit_error', message: 'slow down, key sk-abc' } } })).toBe('rate_limit_error');
    expect(upstreamCode({ code: 'invalid_api_key' })).toBe('invalid_api_key');
    expect(upstreamCode({ code: 'Incorrect API key provided: sk-abc' })).toBeUndefined();
  });
});
