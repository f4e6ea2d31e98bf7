import type { Response } from 'express';

export type ProxyProvider = 'anthropic' | 'openai';

export const PROVIDER_NAMES: Record<ProxyProvider, string> = { anthropic: 'Anthropic', openai: 'OpenAI' };

function anthropicType(status: number): string {
  switch (status) {
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 504:
      return 'timeout_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

/**
 * An error the proxy itself answers, in the provider's own error shape, so the provider's SDK
 * raises its usual error class with this message: Anthropic `{type:'error',error:{type,message}}`,
 * OpenAI `{error:{message,type,code,param}}`.
 */
export function providerErrorBody(provider: ProxyProvider, status: number, message: string, code: string): unknown {
  if (provider === 'anthropic') return { type: 'error', error: { type: anthropicType(status), message } };
  return { error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', code, param: null } };
}

export function sendProviderError(res: Response, provider: ProxyProvider, status: number, message: string, code: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify(providerErrorBody(provider, status, message, code));
  res.status(status).set({ 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }).end(body);
}

/** A failure the proxy answers itself (never one the upstream sent: those pass through as they are). */
export class ProxyError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ProxyError';
  }
}
