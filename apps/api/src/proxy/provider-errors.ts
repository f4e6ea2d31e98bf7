import { anthropicErrorType, openaiErrorType } from '@compactor/compaction';
import type { RateLimited } from '../errors/http-errors';
import type { Response } from 'express';

export type ProxyProvider = 'anthropic' | 'openai';

export const PROVIDER_NAMES: Record<ProxyProvider, string> = { anthropic: 'Anthropic', openai: 'OpenAI' };

/**
 * An error the proxy itself answers, in the provider's own error shape, so the provider's SDK
 * raises its usual error class with this message: Anthropic `{type:'error',error:{type,message}}`,
 * OpenAI `{error:{message,type,code,param}}`.
 */
export function providerErrorBody(provider: ProxyProvider, status: number, message: string, code: string, openaiType?: string): unknown {
  if (provider === 'anthropic') return { type: 'error', error: { type: anthropicErrorType(status), message } };
  return { error: { message, type: openaiType ?? openaiErrorType(status).type, code, param: null } };
}

/** Extra parts of an error answer: response headers (Retry-After), and OpenAI's error `type` when it is not derived from the status. */
export interface ProviderErrorExtras {
  headers?: Record<string, string>;
  openaiType?: string;
}

export function sendProviderError(res: Response, provider: ProxyProvider, status: number, message: string, code: string, extras: ProviderErrorExtras = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify(providerErrorBody(provider, status, message, code, extras.openaiType));
  res
    .status(status)
    .set({ ...extras.headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) })
    .end(body);
}

/** A failure the proxy answers itself (never one the upstream sent: those pass through as they are). */
export class ProxyError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extras: ProviderErrorExtras = {},
  ) {
    super(message);
    this.name = 'ProxyError';
  }
}

export function sendProxyError(res: Response, provider: ProxyProvider, error: ProxyError): void {
  sendProviderError(res, provider, error.status, error.message, error.code, error.extras);
}

/**
 * A rate limit's 429 as the providers answer theirs, so an SDK raises its rate-limit error and honours Retry-After:
 * Anthropic `rate_limit_error`; OpenAI code `rate_limit_exceeded` with type `requests` or `tokens`.
 */
export function rateLimitedProxyError(refused: RateLimited): ProxyError {
  return new ProxyError(429, 'rate_limit_exceeded', `Compactor proxy: ${refused.message}`, {
    headers: { 'retry-after': String(refused.retryAfterSeconds) },
    openaiType: refused.limit === 'appendedTokensPerMinute' ? 'tokens' : 'requests',
  });
}
