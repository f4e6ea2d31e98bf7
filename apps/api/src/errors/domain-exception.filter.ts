import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus } from '@nestjs/common';
import { DomainError } from '@compactor/compaction';
import { isDatabaseUnavailable } from '@compactor/persistence';
import type { Response } from 'express';
import type { Logger } from 'pino';
import { ErrorResponse } from './error-response.dto';
import { ApiErrorCode, RateLimited } from './http-errors';

/** HTTP status of each domain error code; the switch is exhaustive, so a new code must be mapped. */
export function statusOf(code: ApiErrorCode): number {
  switch (code) {
    case ApiErrorCode.ValidationFailed:
      return HttpStatus.BAD_REQUEST;
    case ApiErrorCode.Unauthorized:
      return HttpStatus.UNAUTHORIZED;
    case ApiErrorCode.Forbidden:
      return HttpStatus.FORBIDDEN;
    case ApiErrorCode.NotFound:
    case ApiErrorCode.SessionNotFound:
    case ApiErrorCode.ApiKeyNotFound:
      return HttpStatus.NOT_FOUND;
    case ApiErrorCode.Conflict:
    case ApiErrorCode.SessionExists:
    case ApiErrorCode.IdempotencyKeyReused:
      return HttpStatus.CONFLICT;
    case ApiErrorCode.PayloadTooLarge:
      return HttpStatus.PAYLOAD_TOO_LARGE;
    case ApiErrorCode.BudgetTooSmall:
      return HttpStatus.UNPROCESSABLE_ENTITY;
    case ApiErrorCode.NotReady:
      return HttpStatus.SERVICE_UNAVAILABLE;
    case ApiErrorCode.TooManyRequests:
    case ApiErrorCode.RateLimited:
      return HttpStatus.TOO_MANY_REQUESTS;
  }
}

const httpCodes: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable_entity',
  429: 'too_many_requests',
};

/** Errors raised by express's body parser carry a `type` and a `status`. */
interface BodyParserError {
  type: string;
  status: number;
  limit?: number;
}

function isBodyParserError(e: unknown): e is BodyParserError {
  return typeof e === 'object' && e !== null && typeof (e as BodyParserError).type === 'string' && 'status' in e;
}

/** Seconds a client is asked to wait while PostgreSQL is away (a restart or failover takes a few). */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

export function toErrorResponse(exception: unknown): { status: number; body: ErrorResponse; headers?: Record<string, string> } {
  // Nest wraps express's body-parser errors in an HttpException; the original is the cause.
  if (exception instanceof HttpException && isBodyParserError(exception.cause)) exception = exception.cause;
  if (exception instanceof DomainError) {
    const { code, message, details } = exception;
    const headers = exception instanceof RateLimited ? { 'Retry-After': String(exception.retryAfterSeconds) } : undefined;
    // The library's errors and the API's own are the only DomainErrors: their codes are ApiErrorCode's.
    return { status: statusOf(code as ApiErrorCode), body: { error: { code, message, ...(details ? { details } : {}) } }, ...(headers ? { headers } : {}) };
  }
  if (isBodyParserError(exception)) {
    if (exception.type === 'entity.too.large') {
      const limit = exception.limit ? ` of ${Math.round(exception.limit / 1024 / 1024)} MB` : '';
      const message = `Request body is larger than the limit${limit}`;
      return { status: 413, body: { error: { code: ApiErrorCode.PayloadTooLarge, message } } };
    }
    if (exception.type === 'entity.parse.failed') {
      return { status: 400, body: { error: { code: 'invalid_json', message: 'Request body is not valid JSON' } } };
    }
    if (exception.status >= 400 && exception.status < 500) {
      return { status: exception.status, body: { error: { code: httpCodes[exception.status] ?? 'bad_request', message: exception.type } } };
    }
  }
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const response = exception.getResponse();
    const message =
      typeof response === 'string'
        ? response
        : String((response as { message?: unknown }).message ?? exception.message);
    return { status, body: { error: { code: httpCodes[status] ?? (status >= 500 ? 'internal_error' : 'bad_request'), message } } };
  }
  // PostgreSQL restarting, failing over or unreachable: the request may be retried as it is.
  if (isDatabaseUnavailable(exception)) {
    return {
      status: HttpStatus.SERVICE_UNAVAILABLE,
      body: { error: { code: 'database_unavailable', message: 'The database is unavailable; retry shortly' } },
      headers: { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS) },
    };
  }
  return { status: 500, body: { error: { code: 'internal_error', message: 'Internal server error' } } };
}

/** The one place where errors become HTTP responses. */
@Catch()
export class DomainExceptionFilter implements ExceptionFilter {
  constructor(private readonly logger: Logger) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    const { status, body, headers } = toErrorResponse(exception);
    if (status === HttpStatus.SERVICE_UNAVAILABLE && headers) this.logger.warn({ err: exception }, 'database unavailable');
    else if (status >= 500 && !(exception instanceof DomainError)) {
      this.logger.error({ err: exception }, 'unhandled error');
    }
    if (res.headersSent) return;
    if (headers) res.set(headers);
    res.status(status).json(body);
  }
}
