import http, { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
import { PROVIDER_NAMES, ProxyError, ProxyProvider } from './provider-errors';

/** Hop-by-hop headers (RFC 9110 §7.6.1) and what the proxy sets itself: never forwarded either way. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'content-length', 'expect']);

/**
 * The client's headers as they go to the upstream: the provider's key (`Authorization`,
 * `x-api-key`) and every provider header (`anthropic-version`, `anthropic-beta`, the SDK's
 * `x-stainless-*`) pass through untouched; Compactor's own headers and hop-by-hop ones do not.
 */
export function upstreamHeaders(incoming: IncomingHttpHeaders, overrides: Record<string, string> = {}): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined || HOP_BY_HOP.has(name) || name.startsWith('x-compactor-')) continue;
    out[name] = value;
  }
  return { ...out, ...overrides };
}

/** The upstream's response headers as they go back to the client. */
export function clientHeaders(incoming: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined || (HOP_BY_HOP.has(name) && name !== 'content-length')) continue;
    out[name] = value;
  }
  return out;
}

export interface UpstreamRequest {
  provider: ProxyProvider;
  /** The upstream's base URL (no trailing slash needed) and the provider path with its query. */
  baseUrl: string;
  path: string;
  method: string;
  headers: OutgoingHttpHeaders;
  body?: Buffer;
  timeoutMs: number;
}

export interface UpstreamExchange {
  response: IncomingMessage;
  /** Stops the exchange (the client went away): the upstream connection is closed. */
  abort(): void;
}

const NETWORK_TIMEOUTS = new Set(['ETIMEDOUT', 'ESOCKETTIMEDOUT']);

/** The path without its trailing slashes (a scan: `/\/+$/` is quadratic on a long run of slashes not at the end). */
export function withoutTrailingSlashes(path: string): string {
  let end = path.length;
  while (end > 0 && path.charCodeAt(end - 1) === 47) end -= 1;
  return path.slice(0, end);
}

/** Joins a base URL that may carry a path (`https://openrouter.ai/api`) with a provider path (`/v1/chat/completions?x=1`). */
export function upstreamUrl(baseUrl: string, path: string): URL {
  const base = new URL(baseUrl);
  const [pathname, query] = path.split(/\?(.*)/s);
  const url = new URL(base.toString());
  url.pathname = `${withoutTrailingSlashes(base.pathname)}${pathname.startsWith('/') ? pathname : `/${pathname}`}`;
  url.search = query ? `?${query}` : '';
  return url;
}

/**
 * Forwards requests to the providers over keep-alive connections. A request that cannot reach
 * the upstream fails with 502 (refused, reset, unknown host, TLS) or 504 (no answer within the
 * timeout), naming the upstream; the timeout also bounds the silence between two chunks of a
 * streamed answer.
 */
export class UpstreamClient {
  // Idle connections are closed before a typical server's keep-alive timeout, so a reused one is rarely already gone.
  private readonly httpAgent = new http.Agent({ keepAlive: true, timeout: 4_000 });
  private readonly httpsAgent = new https.Agent({ keepAlive: true, timeout: 4_000 });

  send(request: UpstreamRequest): Promise<UpstreamExchange> {
    return this.attempt(request, true);
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  private attempt(request: UpstreamRequest, mayRetry: boolean): Promise<UpstreamExchange> {
    const url = upstreamUrl(request.baseUrl, request.path);
    // The origin only: a base URL's credentials (if any) or query never reach a message.
    const name = `${PROVIDER_NAMES[request.provider]} upstream at ${url.origin}`;
    const isHttps = url.protocol === 'https:';
    const headers = { ...request.headers, ...(request.body ? { 'content-length': String(request.body.length) } : {}) };
    return new Promise<UpstreamExchange>((resolve, reject) => {
      let settled = false;
      const req = (isHttps ? https : http).request(url, { method: request.method, headers, agent: isHttps ? this.httpsAgent : this.httpAgent });
      req.setTimeout(request.timeoutMs, () => {
        req.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' }));
      });
      req.on('response', (response) => {
        settled = true;
        resolve({ response, abort: () => req.destroy() });
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        if (settled) return; // after the response started, the response stream reports it
        settled = true;
        // A kept-alive connection the server closed meanwhile: once more on a new one (nothing was answered).
        if (mayRetry && req.reusedSocket && error.code === 'ECONNRESET') {
          this.attempt(request, false).then(resolve, reject);
          return;
        }
        if (NETWORK_TIMEOUTS.has(error.code ?? '')) {
          reject(new ProxyError(504, 'upstream_timeout', `Compactor proxy: the ${name} did not answer within ${request.timeoutMs} ms`));
        } else {
          reject(new ProxyError(502, 'upstream_unreachable', `Compactor proxy: could not reach the ${name}: ${error.code ?? error.message}`));
        }
      });
      req.end(request.body);
    });
  }
}
