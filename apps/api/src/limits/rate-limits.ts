import { Inject, Injectable, OnApplicationShutdown, Provider } from '@nestjs/common';
import { RateLimited, RateLimitName } from '../errors/http-errors';
import { createProducerConnection, settled } from '@compactor/jobs';
import type { Redis } from 'ioredis';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { LRUCache } from 'lru-cache';
import { RateLimiterRedis, RateLimiterRes, RLWrapperTimeouts } from 'rate-limiter-flexible';
import type { AuthContext } from '../auth/scopes';
import { API_CONFIG, ApiConfig } from '../config/api-config';
import { LOGGER } from '../logging/logger';
import { MetricsService } from '../metrics/metrics.service';
import { TenantLimitsService } from '../tenant/tenant-limits.service';
import { appendFits, RATE_WINDOW_SECONDS, rateLimited, rateLimitHeaders, WindowState } from './rate-limit-rules';

/**
 * The rate limits' own Redis connection, one that fails fast (no offline queue): while Redis is
 * unreachable a check is refused at once instead of waiting for a reconnection.
 */
export const RATE_LIMIT_REDIS = Symbol('RATE_LIMIT_REDIS');

export const rateLimitRedisProvider: Provider = {
  provide: RATE_LIMIT_REDIS,
  inject: [API_CONFIG],
  // Connected before the API listens (a Redis Cluster takes a moment to learn its slots), or failed once: it still starts while Redis is down.
  useFactory: async (config: ApiConfig) => {
    const redis = createProducerConnection(config.REDIS_URL);
    await settled(redis);
    return redis;
  },
};

/** A check waits at most this long for Redis (one that accepts connections but does not answer); then the request goes on unchecked. */
const REDIS_TIMEOUT_MS = 250;
/** After a check failed on Redis, checks are skipped for this long: an outage costs a request nothing. */
const SKIP_AFTER_FAILURE_MS = 1_000;
/** Limiters kept per counter and limit value (limits change at runtime; a new value gets a limiter of its own). */
const MAX_LIMITERS = 1_000;

type Counter = 'key' | 'tenant' | 'tokens';

const COUNTER_OF: Record<RateLimitName, Counter> = { requestsPerMinutePerKey: 'key', requestsPerMinute: 'tenant', appendedTokensPerMinute: 'tokens' };

export interface RequestAdmission {
  /** Set when a limit refused the request (answer 429). */
  refused?: RateLimited;
  /** X-RateLimit-Limit/Remaining of the tightest request limit (none when no limit applies or Redis did not answer). */
  headers: Record<string, string>;
}

/**
 * Per-key and per-tenant rate limits (issue #15 item 5), counted in Redis so every API replica
 * shares the count: requests per minute per key and per tenant, appended tokens per minute per
 * tenant, each from the tenant's limits in force (0 = no limit). Fixed windows of a minute
 * (rate-limiter-flexible's RateLimiterRedis). A counter's Redis key does not depend on the limit's
 * value, so a limit changed mid-window applies to what the window already counted.
 *
 * Redis unavailable (down, or slower than 250 ms) fails open: the request goes on unchecked, and
 * the outage is logged once when it starts and once when it ends.
 */
@Injectable()
export class RateLimits implements OnApplicationShutdown {
  /** Limiter objects by counter and value (the counts live in Redis); the least recently used go past MAX_LIMITERS. */
  private readonly limiters = new LRUCache<string, RLWrapperTimeouts>({ max: MAX_LIMITERS });
  /** One admission per request: the body gate, the guard and the proxy's handler all ask. */
  private readonly admissions = new WeakMap<IncomingMessage, Promise<RequestAdmission>>();
  private readonly prefix: string;
  private outageSince: number | undefined;
  private skipUntil = 0;

  constructor(
    @Inject(RATE_LIMIT_REDIS) private readonly redis: Redis,
    @Inject(API_CONFIG) config: ApiConfig,
    private readonly tenantLimits: TenantLimitsService,
    private readonly metrics: MetricsService,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.prefix = `${config.QUEUE_PREFIX}:ratelimit`;
  }

  onApplicationShutdown(): void {
    this.redis.disconnect();
  }

  /**
   * Counts an authenticated request against its key's and its tenant's requests per minute, once per
   * request however often it is asked; sets X-RateLimit-* on the response. A request the key's limit
   * refuses is not counted against the tenant (one busy key does not use up the others' room).
   */
  admitRequest(req: IncomingMessage, res: ServerResponse, auth: Pick<AuthContext, 'tenantId' | 'keyId'>): Promise<RequestAdmission> {
    let admission = this.admissions.get(req);
    if (!admission) {
      admission = this.admit(auth).then((result) => {
        if (!res.headersSent) for (const [name, value] of Object.entries(result.headers)) res.setHeader(name, value);
        if (result.refused) this.metrics.rateLimited.inc({ limit: result.refused.limit });
        return result;
      });
      this.admissions.set(req, admission);
    }
    return admission;
  }

  /** Like admitRequest, throwing the refusal. */
  async requireRequest(req: IncomingMessage, res: ServerResponse, auth: Pick<AuthContext, 'tenantId' | 'keyId'>): Promise<void> {
    const { refused } = await this.admitRequest(req, res, auth);
    if (refused) throw refused;
  }

  private async admit(auth: Pick<AuthContext, 'tenantId' | 'keyId'>): Promise<RequestAdmission> {
    const limits = await this.tenantLimits.limits(auth.tenantId);
    const states: WindowState[] = [];
    for (const [limit, id] of [
      ['requestsPerMinutePerKey', auth.keyId],
      ['requestsPerMinute', auth.tenantId],
    ] as const) {
      const value = limits[limit];
      if (value <= 0) continue;
      const state = await this.count(limit, value, id, 1);
      if (!state) return { headers: {} };
      states.push(state);
      if (state.consumed > value) return { refused: rateLimited(state), headers: rateLimitHeaders(states) };
    }
    return { headers: rateLimitHeaders(states) };
  }

  /**
   * Counts `tokens` about to be appended against the tenant's appended tokens per minute, before they
   * are stored; throws RateLimited (counting nothing) when the window cannot hold them. Returns the
   * refund for an append that ends up storing nothing (refused later, replayed, failed).
   */
  async reserveAppendedTokens(tenantId: string, tokens: number): Promise<() => void> {
    const none = () => undefined;
    const value = (await this.tenantLimits.limits(tenantId)).appendedTokensPerMinute;
    if (value <= 0 || tokens <= 0) return none;
    const state = await this.count('appendedTokensPerMinute', value, tenantId, tokens);
    if (!state) return none;
    const refund = () => void this.uncount('appendedTokensPerMinute', value, tenantId, tokens);
    if (!appendFits(state.consumed, tokens, value)) {
      refund();
      this.metrics.rateLimited.inc({ limit: state.limit });
      throw rateLimited(state, `: ${(state.consumed - tokens).toLocaleString('en-US')} already appended this minute, this append adds ${tokens.toLocaleString('en-US')}`);
    }
    return refund;
  }

  /** Counts tokens already stored (the proxy's messages, stored once the upstream answered): the tenant's next request feels them. Never rejects. */
  async chargeAppendedTokens(tenantId: string, tokens: number): Promise<void> {
    if (tokens <= 0) return;
    try {
      const value = (await this.tenantLimits.limits(tenantId)).appendedTokensPerMinute;
      if (value > 0) await this.count('appendedTokensPerMinute', value, tenantId, tokens, 'penalty');
    } catch (error) {
      // The messages are stored: a count that could not be made is logged, never an error of the append.
      this.logger.warn({ tenantId, reason: error instanceof Error ? error.message : String(error) }, 'appended tokens not counted: the tenant limits could not be read');
    }
  }

  /** Throws RateLimited when the tenant's appended tokens this minute already reached its limit (the proxy asks before forwarding). */
  async requireAppendRoom(tenantId: string): Promise<void> {
    const value = (await this.tenantLimits.limits(tenantId)).appendedTokensPerMinute;
    if (value <= 0) return;
    const state = await this.count('appendedTokensPerMinute', value, tenantId, 0, 'get');
    if (state && state.consumed >= value) {
      this.metrics.rateLimited.inc({ limit: state.limit });
      throw rateLimited(state, `: ${state.consumed.toLocaleString('en-US')} appended this minute`);
    }
  }

  /** The window's state after counting `points` (or reading it), or undefined when Redis did not answer in time. */
  private async count(limit: RateLimitName, value: number, id: string, points: number, how: 'consume' | 'penalty' | 'get' = 'consume'): Promise<WindowState | undefined> {
    if (Date.now() < this.skipUntil) return undefined;
    const limiter = this.limiter(COUNTER_OF[limit], value);
    let res: RateLimiterRes | null;
    try {
      res = how === 'consume' ? await limiter.consume(id, points) : how === 'penalty' ? await limiter.penalty(id, points) : await limiter.get(id);
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) {
        this.unavailable(error);
        return undefined;
      }
      res = error; // over the limit: rate-limiter-flexible rejects with the window's state
    }
    this.available();
    return { limit, value, consumed: res?.consumedPoints ?? 0, msBeforeNext: res?.msBeforeNext ?? RATE_WINDOW_SECONDS * 1000 };
  }

  private async uncount(limit: RateLimitName, value: number, id: string, points: number): Promise<void> {
    try {
      await this.limiter(COUNTER_OF[limit], value).reward(id, points);
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) this.unavailable(error);
    }
  }

  private limiter(counter: Counter, points: number): RLWrapperTimeouts {
    const id = `${counter}:${points}`;
    let limiter = this.limiters.get(id);
    if (!limiter) {
      // The key prefix is the counter's, whatever the value: limiters of two values share one count.
      const store = new RateLimiterRedis({ storeClient: this.redis, keyPrefix: `${this.prefix}:${counter}`, points, duration: RATE_WINDOW_SECONDS, rejectIfRedisNotReady: true });
      limiter = new RLWrapperTimeouts({ limiter: store, timeoutMs: REDIS_TIMEOUT_MS });
      this.limiters.set(id, limiter);
    }
    return limiter;
  }

  private unavailable(error: unknown): void {
    this.skipUntil = Date.now() + SKIP_AFTER_FAILURE_MS;
    if (this.outageSince !== undefined) return;
    this.outageSince = Date.now();
    this.logger.warn({ reason: error instanceof Error ? error.message : String(error) }, 'rate limits are not enforced: Redis does not answer (requests go on unchecked until it does)');
  }

  private available(): void {
    if (this.outageSince === undefined) return;
    this.logger.info({ outageMs: Date.now() - this.outageSince }, 'rate limits are enforced again: Redis answers');
    this.outageSince = undefined;
  }
}
