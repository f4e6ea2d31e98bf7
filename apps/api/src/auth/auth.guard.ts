import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Forbidden, Unauthorized } from '@compactor/compaction';
import { ApiKeyRepository } from '@compactor/persistence';
import type { Request } from 'express';
import type { Logger } from 'pino';
import { LOGGER } from '../logging/logger';
import { hashApiKey } from './api-key-secret';
import { AuthContext, grants, REQUIRED_SCOPE, Scope } from './scopes';

export type AuthedRequest = Request & { auth: AuthContext };

/** Every route with a required scope needs `Authorization: Bearer <key>` with that scope. */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly keys: ApiKeyRepository,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const needed = this.reflector.getAllAndOverride<Scope | undefined>(REQUIRED_SCOPE, [context.getHandler(), context.getClass()]);
    if (!needed) return true;
    const req = context.switchToHttp().getRequest<AuthedRequest>();
    const header = req.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) throw new Unauthorized();
    const key = await this.keys.findActiveByHash(hashApiKey(match[1]));
    if (!key) throw new Unauthorized('The API key is unknown or revoked');
    if (!grants(key.scopes, needed)) throw new Forbidden(needed);
    // Settings shows when each key was last used; a stamp older than a minute is refreshed off the request's path.
    if (!key.lastUsedAt || Date.now() - key.lastUsedAt.getTime() > 60_000) void this.keys.touch(key.id).catch((error: Error) => this.logger.warn({ keyId: key.id, err: error.message }, 'could not record the API key use'));
    req.auth = { tenantId: key.tenantId, keyId: key.id, scopes: key.scopes };
    return true;
  }
}
