import { Injectable } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import { keyRefusal } from '../auth/api-key-authenticator';
import { ApiKeyLookups } from '../auth/api-key-lookups';
import { hashApiKey } from '../auth/api-key-secret';
import { AuthContext, grants } from '../auth/scopes';
import { ProxyError } from './provider-errors';

/**
 * The proxy's authentication: the Compactor key comes in `X-Compactor-Key`, because
 * `Authorization` and `x-api-key` carry the provider's key, which goes to the upstream
 * untouched. Proxying appends to sessions, so the key needs the `ingest` scope.
 */
@Injectable()
export class ProxyAuth {
  /** The body gate checks the key before the body is read, the handler again: one lookup per request (keyed by its headers object). */
  private readonly checks = new WeakMap<IncomingHttpHeaders, Promise<AuthContext>>();

  constructor(private readonly lookups: ApiKeyLookups) {}

  /** The SHA-256 of the `X-Compactor-Key` sent (what keys are stored as), or undefined when none was sent. */
  keyHash(headers: IncomingHttpHeaders): string | undefined {
    const value = headers['x-compactor-key'];
    const key = typeof value === 'string' ? value.trim() : '';
    return key === '' ? undefined : hashApiKey(key);
  }

  authenticate(headers: IncomingHttpHeaders): Promise<AuthContext> {
    let check = this.checks.get(headers);
    if (!check) {
      check = this.check(headers);
      this.checks.set(headers, check);
    }
    return check;
  }

  private async check(headers: IncomingHttpHeaders): Promise<AuthContext> {
    const hash = this.keyHash(headers);
    if (hash === undefined) throw new ProxyError(401, 'compactor_key_missing', 'Compactor proxy: a Compactor API key is required in the X-Compactor-Key header');
    const found = await this.lookups.unrevoked(hash);
    if (!found || found.expired) throw new ProxyError(401, 'compactor_key_invalid', `Compactor proxy: ${keyRefusal(found, 'the X-Compactor-Key')}`);
    if (!grants(found.scopes, 'ingest')) throw new ProxyError(403, 'compactor_key_scope', "Compactor proxy: the X-Compactor-Key lacks the 'ingest' scope");
    return { tenantId: found.tenantId, keyId: found.id, scopes: found.scopes };
  }
}
