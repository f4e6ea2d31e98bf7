import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Forbidden, Unauthorized } from '../errors/http-errors';
import { ApiKeyRepository } from '@compactor/persistence';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { RateLimits } from '../limits/rate-limits';
import { LOGGER } from '../logging/logger';
import { ApiKeyAuthenticator, bearerKey } from './api-key-authenticator';
import { AuthContext, grants, OPEN_ACCESS, OpenAccess, REQUIRED_SCOPE, Scope } from './scopes';

export type AuthedRequest = Request & { auth: AuthContext };

/**
 * Denies by default: a route is open only when it says so (`@Public()`, or `@ProxyKeyAuthenticated()`
 * for the proxy's own key check); every other route needs `Authorization: Bearer <key>` with its
 * declared scope, and a route that declares none needs `admin`. An authenticated request then counts against
 * its key's and tenant's rate limits (429 rate_limited when over).
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly authenticator: ApiKeyAuthenticator,
    private readonly keys: ApiKeyRepository,
    private readonly rateLimits: RateLimits,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<OpenAccess | undefined>(OPEN_ACCESS, targets)) return true;
    const needed = this.reflector.getAllAndOverride<Scope | undefined>(REQUIRED_SCOPE, targets) ?? 'admin';
    const req = context.switchToHttp().getRequest<AuthedRequest>();
    if (bearerKey(req.headers.authorization) === undefined) throw new Unauthorized();
    const key = await this.authenticator.keyOf(req);
    if (!key) throw new Unauthorized(await this.authenticator.refusal(req));
    const auth: AuthContext = { tenantId: key.tenantId, keyId: key.id, scopes: key.scopes };
    // Every authenticated request counts, refused for its scope or not (once per request: the body gate may have counted it).
    await this.rateLimits.requireRequest(req, context.switchToHttp().getResponse<Response>(), auth);
    if (!grants(key.scopes, needed)) throw new Forbidden(needed);
    // Settings shows when each key was last used; a stamp older than a minute is refreshed off the request's path.
    if (!key.lastUsedAt || Date.now() - key.lastUsedAt.getTime() > 60_000) {
      const now = new Date();
      this.authenticator.touched(req, now);
      void this.keys.touch(key.id, now).catch((error: Error) => this.logger.warn({ keyId: key.id, err: error.message }, 'could not record the API key use'));
    }
    req.auth = auth;
    return true;
  }
}
