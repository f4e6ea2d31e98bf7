import { Inject, Injectable } from '@nestjs/common';
import { effectiveLimits, limitDefaults, TenantLimits, TenantRepository } from '@compactor/persistence';
import { LRUCache } from 'lru-cache';
import { API_CONFIG, ApiConfig } from '../config/api-config';

const TTL_MS = 10_000;

/**
 * The limits in force for a tenant (its own settings over the operator's `COMPACTOR_LIMIT_*`).
 * Read at most every 10 s per tenant and process; PATCH /v1/tenant drops this process's copy at
 * once (other replicas follow within 10 s).
 */
@Injectable()
export class TenantLimitsService {
  /** Per tenant for TTL_MS; the least recently used go past 10,000 tenants. */
  private readonly cache = new LRUCache<string, TenantLimits>({ max: 10_000, ttl: TTL_MS });
  private readonly defaults: TenantLimits;

  constructor(
    @Inject(API_CONFIG) config: ApiConfig,
    private readonly tenants: TenantRepository,
  ) {
    this.defaults = limitDefaults(config);
  }

  async limits(tenantId: string): Promise<TenantLimits> {
    const hit = this.cache.get(tenantId);
    if (hit) return hit;
    const limits = effectiveLimits(await this.tenants.settings(tenantId), this.defaults);
    this.cache.set(tenantId, limits);
    return limits;
  }

  invalidate(tenantId: string): void {
    this.cache.delete(tenantId);
  }
}
