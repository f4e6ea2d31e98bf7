import { Injectable } from '@nestjs/common';
import { ApiKeyRecord, ApiKeyRepository } from '@compactor/persistence';
import type { IncomingMessage } from 'node:http';
import { hashApiKey } from './api-key-secret';

/** The key of an `Authorization: Bearer <key>` header, or undefined when the header is absent or another scheme. */
export function bearerKey(header: string | string[] | undefined): string | undefined {
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match ? match[1] : undefined;
}

/**
 * Finds the active key a REST request's bearer token names. Both the body gate (before the body is
 * read) and the guard (after routing) ask; the lookup runs once per request.
 */
@Injectable()
export class ApiKeyAuthenticator {
  private readonly lookups = new WeakMap<IncomingMessage, Promise<ApiKeyRecord | null>>();

  constructor(private readonly keys: ApiKeyRepository) {}

  /** The active key of the request, or null when it sent none or an unknown or revoked one. */
  keyOf(req: IncomingMessage): Promise<ApiKeyRecord | null> {
    let lookup = this.lookups.get(req);
    if (!lookup) {
      const key = bearerKey(req.headers.authorization);
      lookup = key === undefined ? Promise.resolve(null) : this.keys.findActiveByHash(hashApiKey(key));
      this.lookups.set(req, lookup);
    }
    return lookup;
  }

  /** A fresh lookup by key id's hash, for long-lived requests (event streams) that re-check their key. */
  stillActive(req: IncomingMessage): Promise<boolean> {
    const key = bearerKey(req.headers.authorization);
    return key === undefined ? Promise.resolve(false) : this.keys.findActiveByHash(hashApiKey(key)).then((found) => found !== null);
  }
}
