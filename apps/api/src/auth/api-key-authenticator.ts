import { Injectable } from '@nestjs/common';
import { ApiKeyRecord, ApiKeyRepository, UnrevokedApiKey } from '@compactor/persistence';
import { ApiKeyLookups } from './api-key-lookups';
import type { IncomingMessage } from 'node:http';
import { hashApiKey } from './api-key-secret';

/** The key of an `Authorization: Bearer <key>` header, or undefined when the header is absent or another scheme. */
export function bearerKey(header: string | string[] | undefined): string | undefined {
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match ? match[1] : undefined;
}

/** Why a sent key is refused (401), for the guard, the body gate and the proxy alike. */
export function keyRefusal(found: Pick<UnrevokedApiKey, 'expired' | 'expiresAt'> | null, subject = 'The API key'): string {
  if (found?.expired && found.expiresAt) return `${subject} expired at ${found.expiresAt.toISOString()}; create a new key`;
  return `${subject} is unknown or revoked`;
}

/**
 * Finds the active (unrevoked, unexpired) key a REST request's bearer token names. Both the body
 * gate (before the body is read) and the guard (after routing) ask; the lookup runs once per
 * request, through ApiKeyLookups (a key found active is remembered for API_KEY_CACHE_MS; its expiry
 * is checked on every request, so a key is refused from the instant it expires).
 */
@Injectable()
export class ApiKeyAuthenticator {
  private readonly lookups = new WeakMap<IncomingMessage, Promise<UnrevokedApiKey | null>>();

  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly remembered: ApiKeyLookups,
  ) {}

  /** The active key of the request, or null when it sent none or an unknown, revoked or expired one. */
  async keyOf(req: IncomingMessage): Promise<ApiKeyRecord | null> {
    const found = await this.lookup(req);
    return found && !found.expired ? found : null;
  }

  /** Why the request's key is refused (call when keyOf answered null for a request that sent one). */
  async refusal(req: IncomingMessage): Promise<string> {
    return keyRefusal(await this.lookup(req));
  }

  /** A fresh lookup, for long-lived requests (event streams) that re-check their key: false once it is revoked, deleted or expired. */
  stillActive(req: IncomingMessage): Promise<boolean> {
    const key = bearerKey(req.headers.authorization);
    return key === undefined ? Promise.resolve(false) : this.keys.findActiveByHash(hashApiKey(key)).then((found) => found !== null);
  }

  /** The request's key was stamped as used now (the remembered copy too, so the stamp is not written again within the minute). */
  touched(req: IncomingMessage, at: Date): void {
    const key = bearerKey(req.headers.authorization);
    if (key !== undefined) this.remembered.touched(hashApiKey(key), at);
  }

  private lookup(req: IncomingMessage): Promise<UnrevokedApiKey | null> {
    let lookup = this.lookups.get(req);
    if (!lookup) {
      const key = bearerKey(req.headers.authorization);
      lookup = key === undefined ? Promise.resolve(null) : this.remembered.unrevoked(hashApiKey(key));
      this.lookups.set(req, lookup);
    }
    return lookup;
  }
}
