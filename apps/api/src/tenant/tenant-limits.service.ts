import { Inject, Injectable } from '@nestjs/common';
import { effectiveLimits, limitDefaults, TenantLimits, TenantRepository } from '@compactor/persistence';
import { API_CONFIG, ApiConfig } from '../config/api-config';

const TTL_MS = 10_000;

/**
 * The limits in force for a tenant (its own settings over the operator's `COMPACTOR_LIMIT_*`).
 * Read at most every 10 s per tenant and process; PATCH /v1/tenant drops this process's copy at
 * once (other replicas follow within 10 s).
 */
@Injectable()
export class TenantLimitsService {
  private readonly cache = new Map<string, { at: number; limits: TenantLimits }>();
  private readonly defaults: TenantLimits;

  constructor(
    @Inject(API_CONFIG) config: ApiConfig,
    private readonly tenants: TenantRepository,
  ) {
    this.defaults = limitDefaults(config);
  }

  async limits(tenantId: string): Promise<TenantLimits> {
    const hit = this.cache.get(tenantId);
    if (hit && Date.now() - hit.at < TTL_MS) return hit.limits;
    const limits = effectiveLimits(await this.tenants.settings(tenantId), this.defaults);
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(tenantId, { at: Date.now(), limits });
    return limits;
  }

  invalidate(tenantId: string): void {
    this.cache.delete(tenantId);
  }
}
