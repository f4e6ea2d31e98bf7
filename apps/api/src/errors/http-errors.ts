/**
 * The errors only the API raises (authentication, scopes, sizes, conflicts, rate limits, not
 * found): each has a code that DomainExceptionFilter maps to an HTTP status. The library's own
 * errors (ValidationFailed, BudgetTooSmall) and their codes stay in @compactor/compaction.
 */
import { DomainError, ErrorCode } from '@compactor/compaction';

/** Every code an API error response carries: the library's and the API's own. */
export const ApiErrorCode = {
  ValidationFailed: ErrorCode.ValidationFailed,
  NotFound: 'not_found',
  SessionNotFound: 'session_not_found',
  ApiKeyNotFound: 'api_key_not_found',
  Conflict: 'conflict',
  SessionExists: 'session_exists',
  IdempotencyKeyReused: 'idempotency_key_reused',
  Unauthorized: 'unauthorized',
  Forbidden: 'forbidden',
  PayloadTooLarge: 'payload_too_large',
  BudgetTooSmall: ErrorCode.BudgetTooSmall,
  NotReady: 'not_ready',
  TooManyRequests: 'too_many_requests',
  RateLimited: 'rate_limited',
} as const;
export type ApiErrorCode = (typeof ApiErrorCode)[keyof typeof ApiErrorCode];

// Every library code is one of the API's too (so the exception filter maps it): a new one fails here until added above.
const _libraryCodesIncluded: ErrorCode extends ApiErrorCode ? true : never = true;

/** Also what another tenant's session looks like, so nothing leaks its existence. */
export class SessionNotFound extends DomainError {
  constructor(sessionId: string) {
    super(ApiErrorCode.SessionNotFound, `Session '${sessionId}' not found`);
  }
}

export class SessionExists extends DomainError {
  constructor(sessionId: string) {
    super(ApiErrorCode.SessionExists, `Session '${sessionId}' already exists`);
  }
}

/** Also what another tenant's job looks like. */
export class JobNotFound extends DomainError {
  constructor(jobId: string) {
    super(ApiErrorCode.NotFound, `Job '${jobId}' not found`);
  }
}

export class ApiKeyNotFound extends DomainError {
  constructor(id: string) {
    super(ApiErrorCode.ApiKeyNotFound, `API key '${id}' not found`);
  }
}

export class IdempotencyKeyReused extends DomainError {
  constructor(key: string) {
    super(ApiErrorCode.IdempotencyKeyReused, `Idempotency-Key '${key}' was already used for a different request`);
  }
}

export class Unauthorized extends DomainError {
  constructor(message = 'A valid API key is required: Authorization: Bearer <key>') {
    super(ApiErrorCode.Unauthorized, message);
  }
}

export class Forbidden extends DomainError {
  constructor(needed: string) {
    super(ApiErrorCode.Forbidden, `This API key lacks the '${needed}' scope`);
  }
}

/** A per-key limit was reached (open event streams); the client may try again later. */
export class TooManyRequests extends DomainError {
  constructor(message: string) {
    super(ApiErrorCode.TooManyRequests, message);
  }
}

/** The limits a request can run into (issue #15 item 5), as a tenant's settings name them. */
export type RateLimitName = 'requestsPerMinutePerKey' | 'requestsPerMinute' | 'appendedTokensPerMinute';

/** A per-key or per-tenant rate limit was reached: retry after `retryAfterSeconds` (the 429's Retry-After). */
export class RateLimited extends DomainError {
  constructor(
    readonly limit: RateLimitName,
    readonly value: number,
    readonly retryAfterSeconds: number,
    message: string,
  ) {
    super(ApiErrorCode.RateLimited, message, { limit, value, retryAfterSeconds });
  }
}

/** A dependency (PostgreSQL, Redis) the service needs is unreachable. */
export class ServiceNotReady extends DomainError {
  constructor(failed: string[], details: Record<string, unknown>) {
    super(ApiErrorCode.NotReady, `Not ready: ${failed.join(' and ')} ${failed.length > 1 ? 'are' : 'is'} unreachable`, details);
  }
}
