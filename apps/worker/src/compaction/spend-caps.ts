import { Inject, Injectable } from '@nestjs/common';
import { CompactionRepository, limitDefaults, TenantLimitsCache, TenantRepository } from '@compactor/persistence';
import { WORKER_CONFIG, WorkerConfig } from '../config/worker-config';

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

/**
 * Per-tenant summarizer spend caps (issue #15 item 3), checked before each LLM call of a
 * compaction: what the tenant's jobs recorded today (UTC) plus what this run has spent so far.
 * Jobs running at the same time on other workers add theirs only when they finish, so concurrent
 * runs can pass a cap by at most one call each.
 */
@Injectable()
export class SpendCaps {
  private readonly limits: TenantLimitsCache;

  constructor(
    @Inject(WORKER_CONFIG) config: WorkerConfig,
    tenants: TenantRepository,
    private readonly compactions: CompactionRepository,
  ) {
    this.limits = new TenantLimitsCache(tenants, limitDefaults(config));
  }

  /** Throws `SpendCapReached` when the tenant has used up a cap today. */
  async check(tenantId: string, run: { tokens: number; costUsd: number }): Promise<void> {
    const limits = await this.limits.limits(tenantId);
    if (limits.summarizerTokensPerDay === 0 && limits.summarizerCostPerDayUsd === 0) return;
    const today = await this.compactions.spendToday(tenantId);
    const tokens = today.tokens + run.tokens;
    const costUsd = today.costUsd + run.costUsd;
    if (limits.summarizerTokensPerDay > 0 && tokens >= limits.summarizerTokensPerDay) throw new SpendCapReached('summarizerTokensPerDay', limits.summarizerTokensPerDay, tokens);
    if (limits.summarizerCostPerDayUsd > 0 && costUsd >= limits.summarizerCostPerDayUsd) {
      throw new SpendCapReached('summarizerCostPerDayUsd', limits.summarizerCostPerDayUsd, Math.round(costUsd * 1e6) / 1e6);
    }
  }
}
