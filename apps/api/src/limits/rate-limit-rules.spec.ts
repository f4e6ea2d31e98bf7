import { ApiErrorCode } from '../errors/http-errors';
import { appendFits, rateLimited, rateLimitHeaders, retryAfterSeconds } from './rate-limit-rules';

describe('rate limit rules', () => {
  it('asks to retry in whole seconds, rounded up, at least one', () => {
    expect(retryAfterSeconds(59_001)).toBe(60);
    expect(retryAfterSeconds(1_000)).toBe(1);
    expect(retryAfterSeconds(1)).toBe(1);
    expect(retryAfterSeconds(0)).toBe(1);
  });

  it('names the limit, its value and the wait in the refusal', () => {
    const refused = rateLimited({ limit: 'requestsPerMinutePerKey', value: 1200, msBeforeNext: 41_500 });
    expect(refused.code).toBe(ApiErrorCode.RateLimited);
    expect(refused.details).toEqual({ limit: 'requestsPerMinutePerKey', value: 1200, retryAfterSeconds: 42 });
    expect(refused.message).toBe('Rate limit reached: requestsPerMinutePerKey allows 1,200 requests per minute for this API key; retry in 42 s');
  });

  it('lets an append through while the minute holds it, and a first one larger than the whole limit', () => {
    expect(appendFits(1_000, 400, 1_000)).toBe(true);
    expect(appendFits(1_001, 400, 1_000)).toBe(false);
    expect(appendFits(5_000, 5_000, 1_000)).toBe(true); // the window's first: it fills the window
    expect(appendFits(5_001, 5_000, 1_000)).toBe(false);
  });

  it('shows the window with the least room left', () => {
    expect(rateLimitHeaders([])).toEqual({});
    const key = { limit: 'requestsPerMinutePerKey' as const, value: 10, consumed: 3, msBeforeNext: 1 };
    const tenant = { limit: 'requestsPerMinute' as const, value: 100, consumed: 95, msBeforeNext: 1 };
    expect(rateLimitHeaders([key, tenant])).toEqual({ 'X-RateLimit-Limit': '100', 'X-RateLimit-Remaining': '5' });
    expect(rateLimitHeaders([{ ...key, consumed: 12 }])).toEqual({ 'X-RateLimit-Limit': '10', 'X-RateLimit-Remaining': '0' });
  });
});
