/**
 * Typed domain errors. Domain code throws these; the API maps them to HTTP in one
 * exception filter and the worker never sees an HTTP exception.
 */
export enum ErrorCode {
  ValidationFailed = 'validation_failed',
  NotFound = 'not_found',
  SessionNotFound = 'session_not_found',
  ApiKeyNotFound = 'api_key_not_found',
  Conflict = 'conflict',
  SessionExists = 'session_exists',
  IdempotencyKeyReused = 'idempotency_key_reused',
  Unauthorized = 'unauthorized',
  Forbidden = 'forbidden',
  PayloadTooLarge = 'payload_too_large',
  BudgetTooSmall = 'budget_too_small',
  NotReady = 'not_ready',
  TooManyRequests = 'too_many_requests',
  RateLimited = 'rate_limited',
}

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** A problem with one field of a request; `field` is a path such as `messages[3].content[1].tool_use_id`. */
export interface FieldProblem {
  field: string;
  message: string;
}

export class ValidationFailed extends DomainError {
  constructor(readonly problems: FieldProblem[]) {
    const shown = problems.slice(0, 5).map((p) => `${p.field}: ${p.message}`);
    const more = problems.length > 5 ? ` (and ${problems.length - 5} more)` : '';
    super(ErrorCode.ValidationFailed, `${shown.join('; ')}${more}`, { fields: problems.slice(0, 100) });
  }
}

/** Also what another tenant's session looks like, so nothing leaks its existence. */
export class SessionNotFound extends DomainError {
  constructor(sessionId: string) {
    super(ErrorCode.SessionNotFound, `Session '${sessionId}' not found`);
  }
}

export class SessionExists extends DomainError {
  constructor(sessionId: string) {
    super(ErrorCode.SessionExists, `Session '${sessionId}' already exists`);
  }
}

/** Also what another tenant's job looks like. */
export class JobNotFound extends DomainError {
  constructor(jobId: string) {
    super(ErrorCode.NotFound, `Job '${jobId}' not found`);
  }
}

export class ApiKeyNotFound extends DomainError {
  constructor(id: string) {
    super(ErrorCode.ApiKeyNotFound, `API key '${id}' not found`);
  }
}

export class IdempotencyKeyReused extends DomainError {
  constructor(key: string) {
    super(ErrorCode.IdempotencyKeyReused, `Idempotency-Key '${key}' was already used for a different request`);
  }
}

export class Unauthorized extends DomainError {
  constructor(message = 'A valid API key is required: Authorization: Bearer <key>') {
    super(ErrorCode.Unauthorized, message);
  }
}

export class Forbidden extends DomainError {
  constructor(needed: string) {
    super(ErrorCode.Forbidden, `This API key lacks the '${needed}' scope`);
  }
}

/** A per-key limit was reached (open event streams); the client may try again later. */
export class TooManyRequests extends DomainError {
  constructor(message: string) {
    super(ErrorCode.TooManyRequests, message);
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
    super(ErrorCode.RateLimited, message, { limit, value, retryAfterSeconds });
  }
}

/** A dependency (PostgreSQL, Redis) the service needs is unreachable. */
export class ServiceNotReady extends DomainError {
  constructor(failed: string[], details: Record<string, unknown>) {
    super(ErrorCode.NotReady, `Not ready: ${failed.join(' and ')} ${failed.length > 1 ? 'are' : 'is'} unreachable`, details);
  }
}

/**
 * Guarantee 3/4: even with every protection given way, what can never go (the system prompt,
 * the last user turn, an open tool exchange) exceeds the budget. The read fails with 422
 * rather than returning an oversized context.
 */
export class BudgetTooSmall extends DomainError {
  constructor(
    readonly budget: number,
    readonly irreducibleTokens: number,
    /** What the irreducible part is made of (the system prompt vs the last turn and open exchange), when known. */
    readonly parts: { systemTokens?: number; conversationTokens?: number } = {},
    /** How the budget was arrived at (window, reserve or max_tokens, tool schemas, margin), when known. */
    readonly budgetLine?: string,
  ) {
    const made =
      parts.systemTokens !== undefined && parts.conversationTokens !== undefined
        ? ` (system prompt ${parts.systemTokens.toLocaleString('en-US')}, last user turn and open tool exchange ${parts.conversationTokens.toLocaleString('en-US')})`
        : '';
    super(
      ErrorCode.BudgetTooSmall,
      `The context cannot fit the ${budget}-token budget: the system prompt, the last user turn and the open tool exchange alone take ${irreducibleTokens} tokens${made}` +
        (budgetLine ? `; the budget is ${budgetLine}` : ''),
      { budget, irreducibleTokens, ...parts, ...(budgetLine ? { budgetLine } : {}) },
    );
  }

  /** The same refusal with how the budget was computed (the caller knows the window, reserve and tool schemas). */
  withBudgetLine(budgetLine: string): BudgetTooSmall {
    return new BudgetTooSmall(this.budget, this.irreducibleTokens, this.parts, budgetLine);
  }
}
