import { Inject, Injectable } from '@nestjs/common';
import { PolicyInput } from '@compactor/compaction';
import { TenantRepository } from '@compactor/persistence';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { z } from 'zod';
import { LOGGER } from '../logging/logger';
import { policySchema } from '../sessions/session-config';

const storedDefaultsSchema = z.object({ defaultPolicy: policySchema.optional() });

const TTL_MS = 10_000;

/**
 * The tenant's default policy, which a session created without a policy takes (REST append,
 * POST /v1/sessions, the proxy). Read at most every 10 s per tenant and process; PATCH /v1/tenant
 * drops this process's copy at once (other replicas follow within 10 s).
 */
@Injectable()
export class TenantDefaults {
  /** Per tenant for TTL_MS (wrapped: a tenant without defaults caches `undefined`); the least recently used go past 10,000 tenants. */
  private readonly cache = new LRUCache<string, { policy: PolicyInput | undefined }>({ max: 10_000, ttl: TTL_MS });

  constructor(
    private readonly tenants: TenantRepository,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async policy(tenantId: string): Promise<PolicyInput | undefined> {
    const hit = this.cache.get(tenantId);
    if (hit) return hit.policy;
    const parsed = storedDefaultsSchema.safeParse((await this.tenants.settings(tenantId)) ?? {});
    if (!parsed.success) this.logger.warn({ tenantId, problems: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) }, 'tenant default policy ignored');
    const policy = parsed.success ? parsed.data.defaultPolicy : undefined;
    this.cache.set(tenantId, { policy });
    return policy;
  }

  invalidate(tenantId: string): void {
    this.cache.delete(tenantId);
  }
}
