import type { components } from './generated/schema';

/** The API's error body: `{ "error": { "code", "message", "details"? } }` (ErrorResponse in the OpenAPI document). */
export type ErrorBody = components['schemas']['ErrorBody'];

/**
 * A non-2xx answer from the Compactor API. `code` and `message` are the API's own (for example
 * `validation_failed`, `session_not_found`, `rate_limited`); `details` names the bad fields where
 * the API says which. An answer without the API's JSON error body (a proxy in front of it, a 502)
 * gets the code `http_<status>` and its text as the message.
 */
export class CompactorApiError extends Error {
  override readonly name = 'CompactorApiError';
  readonly status: number;
  readonly code: string;
  readonly details?: Record<string, unknown>;
  /** The error body exactly as the API sent it (parsed JSON, or its text). */
  readonly body: unknown;

  constructor(status: number, body: unknown) {
    const error = errorBodyOf(body);
    super(error ? `${status} ${error.code}: ${error.message}` : `HTTP ${status}${typeof body === 'string' && body ? `: ${body.slice(0, 500)}` : ''}`);
    this.status = status;
    this.code = error?.code ?? `http_${status}`;
    this.details = error?.details;
    this.body = body;
  }
}

function errorBodyOf(body: unknown): ErrorBody | undefined {
  if (typeof body !== 'object' || body === null || !('error' in body)) return undefined;
  const error = (body as { error: unknown }).error;
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, message, details } = error as Record<string, unknown>;
  if (typeof code !== 'string' || typeof message !== 'string') return undefined;
  return { code, message, ...(typeof details === 'object' && details !== null ? { details: details as Record<string, unknown> } : {}) };
}
