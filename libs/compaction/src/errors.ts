/**
 * Typed domain errors. Domain code throws these; the API maps them to HTTP in one
 * exception filter and the worker never sees an HTTP exception.
 */
export enum ErrorCode {
  ValidationFailed = 'validation_failed',
  NotFound = 'not_found',
  Conflict = 'conflict',
  Unauthorized = 'unauthorized',
  Forbidden = 'forbidden',
  PayloadTooLarge = 'payload_too_large',
  BudgetTooSmall = 'budget_too_small',
  NotReady = 'not_ready',
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

/** A dependency (PostgreSQL, Redis) the service needs is unreachable. */
export class ServiceNotReady extends DomainError {
  constructor(failed: string[], details: Record<string, unknown>) {
    super(ErrorCode.NotReady, `Not ready: ${failed.join(' and ')} ${failed.length > 1 ? 'are' : 'is'} unreachable`, details);
  }
}
