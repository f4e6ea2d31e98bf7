import { Inject, Injectable } from '@nestjs/common';
import { CompactionRepository, effectiveLimits, limitDefaults, TenantLimits, TenantRepository } from '@compactor/persistence';
import { LRUCache } from 'lru-cache';
import { WORKER_CONFIG, WorkerConfig } from '../config/worker-config';

const TTL_MS = 10_000;

/** A compaction stopped before an LLM call that would start past the tenant's daily summarizer cap. */
export class SpendCapReached extends Error {
  constructor(
    readonly limit: 'summarizerTokensPerDay' | 'summarizerCostPerDayUsd',
    readonly cap: number,
    readonly spent: number,
  ) {
    super(`${limit}: ${spent} spent today of ${cap}`);
    this.name = 'SpendCapReached';
  }
}

/** The start of the current UTC day. */
export function utcDayStart(now = new Date()): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
}

/**
 * Per-tenant summarizer spend caps (issue #15 item 3), checked before each LLM call of a
 * compaction: what the tenant's jobs recorded today (UTC) plus what this run has spent so far.
 * Jobs running at the same time on other workers add theirs only when they finish, so concurrent
 * runs can pass a cap by at most one call each.
 */
@Injectable()
export class SpendCaps {
  private readonly defaults: TenantLimits;
  /** Per tenant for TTL_MS; the least recently used go past 10,000 tenants. */
  private readonly cache = new LRUCache<string, TenantLimits>({ max: 10_000, ttl: TTL_MS });

  constructor(
    @Inject(WORKER_CONFIG) config: WorkerConfig,
    private readonly tenants: TenantRepository,
    private readonly compactions: CompactionRepository,
  ) {
    this.defaults = limitDefaults(config);
  }

  /** Throws `SpendCapReached` when the tenant has used up a cap today. */
  async check(tenantId: string, run: { tokens: number; costUsd: number }): Promise<void> {
    const limits = await this.limits(tenantId);
    if (limits.summarizerTokensPerDay === 0 && limits.summarizerCostPerDayUsd === 0) return;
    const today = await this.compactions.spendSince(tenantId, utcDayStart());
    const tokens = today.tokens + run.tokens;
    const costUsd = today.costUsd + run.costUsd;
    if (limits.summarizerTokensPerDay > 0 && tokens >= limits.summarizerTokensPerDay) throw new SpendCapReached('summarizerTokensPerDay', limits.summarizerTokensPerDay, tokens);
    if (limits.summarizerCostPerDayUsd > 0 && costUsd >= limits.summarizerCostPerDayUsd) {
      throw new SpendCapReached('summarizerCostPerDayUsd', limits.summarizerCostPerDayUsd, Math.round(costUsd * 1e6) / 1e6);
    }
  }

  private async limits(tenantId: string): Promise<TenantLimits> {
    const hit = this.cache.get(tenantId);
    if (hit) return hit;
    const limits = effectiveLimits(await this.tenants.settings(tenantId), this.defaults);
    this.cache.set(tenantId, limits);
    return limits;
  }
}
