import { Injectable } from '@nestjs/common';
import { ApiKeyRecord, ApiKeyRepository, UnrevokedApiKey } from '@compactor/persistence';
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
 * request, and nothing is cached across requests, so a key is refused from the instant it expires
 * (the database's clock decides).
 */
@Injectable()
export class ApiKeyAuthenticator {
  private readonly lookups = new WeakMap<IncomingMessage, Promise<UnrevokedApiKey | null>>();

  constructor(private readonly keys: ApiKeyRepository) {}

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

  private lookup(req: IncomingMessage): Promise<UnrevokedApiKey | null> {
    let lookup = this.lookups.get(req);
    if (!lookup) {
      const key = bearerKey(req.headers.authorization);
      lookup = key === undefined ? Promise.resolve(null) : this.keys.findUnrevokedByHash(hashApiKey(key));
      this.lookups.set(req, lookup);
    }
    return lookup;
  }
}
