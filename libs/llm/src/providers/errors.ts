import type { LlmErrorKind } from '@compactor/compaction';

/** A configuration problem (missing key, bad value): names the variable, never its value. */
export class SummarizerConfigError extends Error {
  constructor(
    message: string,
    /** The environment variable at fault, e.g. `OPENAI_API_KEY`. */
    readonly variable?: string,
  ) {
    super(message);
    this.name = 'SummarizerConfigError';
  }
}

/** Thrown by a provider adapter when a 200 answer has no usable text (turned into `LlmError('malformed')`). */
export class MalformedAnswerError extends Error {
  constructor(readonly detail: string) {
    super(`malformed answer: ${detail}`);
    this.name = 'MalformedAnswerError';
  }
}

/**
 * A non-2xx answer seen by our own fetch wrapper (Ollama): thrown before the SDK reads the
 * body, so no upstream text is parsed, logged or kept. `classify` reads `status` and `headers`.
 */
export class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    readonly headers: Headers,
  ) {
    super(`HTTP ${status}`);
    this.name = 'HttpStatusError';
  }
}

/** One failed attempt, classified. `reason` is short, fixed text (never an upstream message). */
export interface AttemptFailure {
  kind: LlmErrorKind;
  retryable: boolean;
  reason: string;
  status?: number;
  retryAfterMs?: number;
}

const STATUS_REASONS: Record<number, string> = {
  400: 'bad request',
  401: 'authentication failed',
  402: 'payment required',
  403: 'permission denied',
  404: 'not found (model or endpoint)',
  408: 'request timeout',
  409: 'conflict',
  413: 'request too large',
  422: 'unprocessable request',
  429: 'rate limited',
  500: 'server error',
  502: 'bad gateway',
  503: 'service unavailable',
  504: 'gateway timeout',
  529: 'overloaded',
};

/** Only short identifiers (`invalid_api_key`, `rate_limit_error`) from an upstream error body are kept. */
const IDENTIFIER = /^[A-Za-z][A-Za-z0-9_.-]{1,47}$/;

function prop(value: unknown, key: string): unknown {
  return value && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
}

/** The upstream's error code or type (`invalid_api_key`, `overloaded_error`), when it is a plain identifier. */
export function upstreamCode(error: unknown): string | undefined {
  const body = prop(error, 'error');
  const candidates = [prop(error, 'code'), prop(error, 'type'), prop(body, 'code'), prop(body, 'type'), prop(prop(body, 'error'), 'type'), prop(prop(body, 'error'), 'code')];
  for (const c of candidates) {
    if (typeof c === 'string' && IDENTIFIER.test(c) && c !== 'error') return c;
  }
  return undefined;
}

/** HTTP status of an SDK error: `status` (openai, anthropic) or `status_code` (ollama). */
export function statusOf(error: unknown): number | undefined {
  for (const key of ['status', 'status_code']) {
    const value = prop(error, key);
    if (typeof value === 'number' && Number.isInteger(value) && value >= 100 && value <= 599) return value;
  }
  return undefined;
}

/** Classifies an HTTP error status. 408/429/5xx are retried; other 4xx are not. */
export function failureForStatus(status: number, code?: string, retryAfterMs?: number): AttemptFailure {
  const base = STATUS_REASONS[status] ?? (status >= 500 ? 'server error' : 'request rejected');
  const reason = `HTTP ${status} ${base}${code ? ` (${code})` : ''}`;
  if (status === 401 || status === 403) return { kind: 'auth', retryable: false, reason, status };
  if (status === 408) return { kind: 'timeout', retryable: true, reason, status, retryAfterMs };
  if (status === 429) return { kind: 'rate-limited', retryable: true, reason, status, retryAfterMs };
  if (status >= 500) return { kind: 'server', retryable: true, reason, status, retryAfterMs };
  return { kind: 'bad-request', retryable: false, reason, status };
}

const NETWORK_CODES = /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/;

/** A connection-level failure (refused, reset, DNS, socket closed): the error or one of its causes says so. */
export function networkCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth++) {
    const code = prop(current, 'code');
    if (typeof code === 'string' && NETWORK_CODES.test(code)) return code;
    current = prop(current, 'cause');
  }
  return undefined;
}

/**
 * The class name of an error. Checked by name, not `instanceof`: errors thrown by Node's fetch
 * (undici) come from another realm under Jest, and the SDKs' classes are not shared.
 */
export function errorClassName(error: unknown): string {
  if (!error || typeof error !== 'object') return typeof error;
  const ctor = (error as { constructor?: { name?: unknown } }).constructor?.name;
  const name = prop(error, 'name');
  return typeof ctor === 'string' && ctor !== 'Error' && ctor !== 'Object' ? ctor : typeof name === 'string' ? name : 'Error';
}

export function isConnectionError(error: unknown): boolean {
  if (networkCode(error) !== undefined) return true;
  const name = errorClassName(error);
  if (name === 'APIConnectionError') return true;
  const message = prop(error, 'message');
  return name === 'TypeError' && typeof message === 'string' && /fetch failed|network|socket|terminated/i.test(message);
}

export function isTimeoutError(error: unknown): boolean {
  const name = errorClassName(error);
  return name === 'APIConnectionTimeoutError' || name === 'TimeoutError' || prop(error, 'name') === 'TimeoutError';
}

/** A body that was not JSON (`response.json()` failed). */
export function isJsonSyntaxError(error: unknown): boolean {
  return errorClassName(error) === 'SyntaxError' || prop(error, 'name') === 'SyntaxError';
}

/** Replaces every occurrence of a secret (and anything shaped like an API key) in a message. */
export function redactSecrets(message: string, secrets: Array<string | undefined>): string {
  let out = message;
  for (const secret of secrets) {
    if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]');
  }
  return out.replace(/\b(sk|pk|rk)-[A-Za-z0-9_-]{8,}/g, '$1-[redacted]');
}
