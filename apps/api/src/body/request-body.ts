import { ValidationFailed } from '@compactor/compaction';
import { Unauthorized } from '../errors/http-errors';
import express, { NextFunction, Request, RequestHandler, Response } from 'express';
import type { IncomingMessage } from 'node:http';
import { ApiKeyAuthenticator, bearerKey } from '../auth/api-key-authenticator';
import type { RateLimits } from '../limits/rate-limits';
import { ProxyError, ProxyProvider, rateLimitedProxyError, sendProviderError, sendProxyError } from '../proxy/provider-errors';
import type { ProxyAuth } from '../proxy/proxy-auth';
import { collectAfterLargeBody } from './large-body-gc';
import { isLargeJsonBody, isLargeUncompressedBody, isStreamedJsonBody, LargeJsonParser, readBody, readStreamedBody, replyOutcome } from './large-json-body';
import { MAX_JSON_DEPTH, mayHoldUnstorableText, nestsDeeperThan, unstorableText } from './json-body-limits';

export interface RequestBodyOptions {
  limitMb: number;
  authenticator: ApiKeyAuthenticator;
  proxyAuth: ProxyAuth;
  rateLimits: RateLimits;
}

/** Like type-is's hasBody: a request announces a body by Transfer-Encoding or a non-zero Content-Length. */
function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
}

function proxyProviderOf(url: string | undefined): ProxyProvider | undefined {
  if (url?.startsWith('/v1/proxy/anthropic/')) return 'anthropic';
  if (url?.startsWith('/v1/proxy/openai/')) return 'openai';
  return undefined;
}

function isJson(req: IncomingMessage): boolean {
  const type = req.headers['content-type'];
  return type === undefined || type.toLowerCase().includes('json');
}

const tooDeep = () => new ValidationFailed([{ field: '(body)', message: `nests arrays and objects deeper than the limit of ${MAX_JSON_DEPTH} levels` }]);

const SUSPECT = Symbol('compactor:body-may-hold-unstorable-text');
const BYTES = Symbol('compactor:body-bytes');
type Marked = IncomingMessage & { [SUSPECT]?: boolean; [BYTES]?: number };

/** A body's JSON text is checked before JSON.parse sees it: its depth, and whether its strings need a closer look. */
function verifyJson(req: IncomingMessage, _res: unknown, buf: Buffer): void {
  if (nestsDeeperThan(buf, MAX_JSON_DEPTH)) throw Object.assign(tooDeep(), { status: 400 });
  (req as Marked)[SUSPECT] = mayHoldUnstorableText(buf);
  (req as Marked)[BYTES] = buf.length;
}

function textProblem(value: unknown): ValidationFailed | undefined {
  const found = unstorableText(value);
  return found && new ValidationFailed([found]);
}

/**
 * Reads request bodies only for callers with a valid key (F3: an unauthenticated 32 MB body cost
 * 5.8 s of JSON.parse). A request that announces a body is authenticated first: REST by its bearer
 * key (401 in the API's error format; the route's scope is checked later by the guard), the proxy
 * by `X-Compactor-Key` (401/403 in the provider's error shape); a refused body is never read. Then
 * JSON bodies are checked for depth before parsing, and for text PostgreSQL cannot store as sent
 * (U+0000, unpaired surrogates: 400 naming the field). The proxy's bodies stay bytes. A caller over a rate
 * limit is refused (429) before its body is read too.
 */
export function requestBodyMiddleware(options: RequestBodyOptions): RequestHandler {
  const limit = `${options.limitMb}mb`;
  const json = express.json({ limit, verify: verifyJson });
  const raw = express.raw({ limit, type: () => true });
  const limitBytes = options.limitMb * 1024 * 1024;

  // A large body of a known length, not compressed: read straight into one buffer of its size (express.raw collects chunks, then copies them all into one more).
  const readRaw = (req: Request, res: Response, done: (error?: unknown) => void) => {
    if (!isLargeUncompressedBody(req)) return raw(req, res, done);
    readBody(req, limitBytes, (error, body) => {
      if (error || !body) return done(error);
      req.body = body;
      (req as Request & { _body?: boolean })._body = true;
      done();
    });
  };

  const readProxyBody = (provider: ProxyProvider, req: Request, res: Response, next: NextFunction) =>
    readRaw(req, res, (error?: unknown) => {
      if (error) return sendProviderError(res, provider, ...proxyReadError(error, options.limitMb));
      const body: unknown = req.body;
      if (!Buffer.isBuffer(body) || !isJson(req)) return next();
      if (nestsDeeperThan(body, MAX_JSON_DEPTH)) return sendProviderError(res, provider, 400, `Compactor proxy: ${tooDeep().message}`, 'invalid_request');
      if (mayHoldUnstorableText(body)) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(body.toString('utf8'));
        } catch {
          return next(); // malformed: the handler answers it
        }
        const problem = textProblem(parsed);
        if (problem) return sendProviderError(res, provider, 400, `Compactor proxy: ${problem.message}`, 'invalid_request');
      }
      next();
    });

  const parser = new LargeJsonParser();
  // A body of 1 MB or more, or chunked or compressed (its size known only at its end): read here, parsed on the worker.
  const readLargeJson = (req: Request, next: NextFunction) =>
    (isLargeJsonBody(req) ? readBody : readStreamedBody)(req, limitBytes, (error, body) => {
      if (error || !body) return next(error);
      parser.parse(body).then((reply) => {
        const outcome = replyOutcome(reply);
        if ('error' in outcome) return next(outcome.error);
        req.body = outcome.value;
        (req as Request & { _body?: boolean })._body = true;
        next();
      }, next);
    });

  const readJson = (req: Request, res: Response, next: NextFunction) =>
    isLargeJsonBody(req) || isStreamedJsonBody(req) ? readLargeJson(req, next) : json(req, res, (error?: unknown) => {
      // A verify error comes back decorated by body-parser (the body attached): a fresh one goes on.
      if (error instanceof ValidationFailed) return next(new ValidationFailed(error.problems));
      if (error) return next(error);
      const problem = (req as Marked)[SUSPECT] ? textProblem(req.body) : undefined;
      collectAfterLargeBody((req as Marked)[BYTES] ?? 0);
      next(problem);
    });

  return (req, res, next) => {
    if (!hasBody(req)) return next();
    const provider = proxyProviderOf(req.url);
    if (provider) {
      options.proxyAuth
        .authenticate(req.headers)
        .then((auth) => options.rateLimits.admitRequest(req, res, auth))
        .then(
          ({ refused }) => (refused ? sendProxyError(res, provider, rateLimitedProxyError(refused)) : readProxyBody(provider, req, res, next)),
          (error: unknown) => (error instanceof ProxyError ? sendProxyError(res, provider, error) : next(error)),
        );
      return;
    }
    options.authenticator.keyOf(req).then((key) => {
      if (!key) {
        if (bearerKey(req.headers.authorization) === undefined) return next(new Unauthorized());
        return options.authenticator.refusal(req).then((message) => next(new Unauthorized(message)), next);
      }
      // Over a rate limit: refused before the body is read (the guard asks again and gets the same answer).
      return options.rateLimits.admitRequest(req, res, { tenantId: key.tenantId, keyId: key.id }).then(({ refused }) => {
        if (refused) return next(refused);
        readJson(req, res, next);
      }, next);
    }, next);
  };
}

/** A body the proxy could not read, in the provider's terms. */
function proxyReadError(error: unknown, limitMb: number): [number, string, string] {
  const e = error as { type?: string; status?: number };
  if (e.type === 'entity.too.large') return [413, `Compactor proxy: the request body is larger than the limit of ${limitMb} MB`, 'request_too_large'];
  const status = typeof e.status === 'number' && e.status >= 400 && e.status < 500 ? e.status : 400;
  return [status, 'Compactor proxy: the request body could not be read', 'invalid_request'];
}
