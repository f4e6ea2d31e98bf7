import { BadRequestException, NotFoundException } from '@nestjs/common';
import { DomainError } from '@compactor/compaction';
import { ApiErrorCode, RateLimited, ServiceNotReady } from './http-errors';
import { statusOf, toErrorResponse } from './domain-exception.filter';

describe('toErrorResponse', () => {
  it('maps every domain error code to a status', () => {
    const statuses = Object.values(ApiErrorCode).map((code) => statusOf(code));
    expect(statuses).toEqual([400, 404, 404, 404, 409, 409, 409, 401, 403, 413, 422, 503, 429, 429]);
  });

  it('keeps code, message and details of a domain error', () => {
    const error = new DomainError(ApiErrorCode.ValidationFailed, 'messages[0].role: bad', { field: 'messages[0].role' });
    expect(toErrorResponse(error)).toEqual({
      status: 400,
      body: { error: { code: 'validation_failed', message: 'messages[0].role: bad', details: { field: 'messages[0].role' } } },
    });
  });

  it('answers a rate limit with Retry-After and the limit in details', () => {
    expect(toErrorResponse(new RateLimited('requestsPerMinute', 600, 17, 'Rate limit reached'))).toEqual({
      status: 429,
      body: { error: { code: 'rate_limited', message: 'Rate limit reached', details: { limit: 'requestsPerMinute', value: 600, retryAfterSeconds: 17 } } },
      headers: { 'Retry-After': '17' },
    });
  });

  it('names the failed dependency', () => {
    const { status, body } = toErrorResponse(new ServiceNotReady(['postgres', 'redis'], {}));
    expect(status).toBe(503);
    expect(body.error.message).toBe('Not ready: postgres and redis are unreachable');
  });

  it('maps Nest HTTP exceptions', () => {
    expect(toErrorResponse(new NotFoundException('Cannot GET /x')).body).toEqual({
      error: { code: 'not_found', message: 'Cannot GET /x' },
    });
    expect(toErrorResponse(new BadRequestException('nope')).status).toBe(400);
  });

  it('never leaks the message of an unknown error', () => {
    expect(toErrorResponse(new Error('password=hunter2'))).toEqual({
      status: 500,
      body: { error: { code: 'internal_error', message: 'Internal server error' } },
    });
  });
});
