import { Inject, Injectable } from '@nestjs/common';
import { ApiKeyRepository, UnrevokedApiKey } from '@compactor/persistence';
import { LRUCache } from 'lru-cache';
import { API_CONFIG, ApiConfig } from '../config/api-config';

/**
 * The unrevoked key stored under a key hash, remembered by this process for `API_KEY_CACHE_MS` (1 s by
 * default; 0 turns it off), so an agent loop's requests skip the key's database lookup (one round trip a
 * request, issue #21). What that costs (README.md, Keys):
 * - a key revoked through this process is refused at once (KeysService forgets every remembered key);
 *   one revoked through another API replica or the CLI is refused here within `API_KEY_CACHE_MS`;
 * - an expiry takes effect at its instant: a remembered key's expiry is checked on every request;
 * - an unknown key is never remembered, so a key created on another replica works at once there and here.
 * Event streams re-check their key without this cache (`stillActive`).
 */
@Injectable()
export class ApiKeyLookups {
  /** Keys by hash with the instant (Date.now()) they are looked up again after. */
  private readonly remembered = new LRUCache<string, { key: UnrevokedApiKey; until: number }>({ max: 10_000 });
  private readonly ttlMs: number;

  constructor(
    private readonly keys: ApiKeyRepository,
    @Inject(API_CONFIG) config: Pick<ApiConfig, 'API_KEY_CACHE_MS'>,
  ) {
    this.ttlMs = config.API_KEY_CACHE_MS;
  }

  /** The unrevoked key with this hash (expired or not, `expired` as of now), or null. */
  async unrevoked(hash: string): Promise<UnrevokedApiKey | null> {
    const now = Date.now();
    const hit = this.remembered.get(hash);
    if (hit && now < hit.until) return { ...hit.key, expired: hit.key.expiresAt !== null && hit.key.expiresAt.getTime() <= now };
    const found = await this.keys.findUnrevokedByHash(hash);
    if (found && !found.expired && this.ttlMs > 0) this.remembered.set(hash, { key: found, until: now + this.ttlMs });
    else this.remembered.delete(hash);
    return found;
  }

  /** The key was used now: the remembered copy says so too (the guard refreshes the stamp at most once a minute). */
  touched(hash: string, at: Date): void {
    const hit = this.remembered.get(hash);
    if (hit) hit.key = { ...hit.key, lastUsedAt: at };
  }

  /** A key was revoked or deleted through this process: nothing remembered is used again. */
  forgetAll(): void {
    this.remembered.clear();
  }
}
