import { Inject, Injectable } from '@nestjs/common';
import { TenantRepository } from '@compactor/persistence';
import type { Logger } from 'pino';
import { z } from 'zod';
import { API_CONFIG, ApiConfig } from '../config/api-config';
import { LOGGER } from '../logging/logger';
import type { ProxyProvider } from './provider-errors';

const httpUrl = z.string().refine((v) => {
  try {
    return ['http:', 'https:'].includes(new URL(v).protocol);
  } catch {
    return false;
  }
}, 'must be an http(s) URL');

/** A tenant's `settings.proxy` (tenants.settings): its own upstreams and timeout, over the environment's. */
const tenantProxySchema = z.object({
  proxy: z
    .object({
      anthropicBaseUrl: httpUrl.optional(),
      openaiBaseUrl: httpUrl.optional(),
      timeoutMs: z.number().int().positive().max(3_600_000).optional(),
    })
    .optional(),
});

export interface UpstreamSettings {
  baseUrl: Record<ProxyProvider, string>;
  timeoutMs: number;
}

const TTL_MS = 10_000;

/**
 * Where a tenant's proxied requests go: `settings.proxy` of the tenant when set, else
 * COMPACTOR_PROXY_*. Read at most every 10 s per tenant and process, so the proxy's hot path
 * does not pay a query for it.
 */
@Injectable()
export class ProxySettings {
  private readonly cache = new Map<string, { at: number; settings: UpstreamSettings }>();

  constructor(
    @Inject(API_CONFIG) private readonly config: ApiConfig,
    private readonly tenants: TenantRepository,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async forTenant(tenantId: string): Promise<UpstreamSettings> {
    const hit = this.cache.get(tenantId);
    if (hit && Date.now() - hit.at < TTL_MS) return hit.settings;
    const parsed = tenantProxySchema.safeParse((await this.tenants.settings(tenantId)) ?? {});
    if (!parsed.success) this.logger.warn({ tenantId, problems: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) }, 'tenant proxy settings ignored');
    const own = parsed.success ? parsed.data.proxy : undefined;
    const settings: UpstreamSettings = {
      baseUrl: {
        anthropic: own?.anthropicBaseUrl ?? this.config.COMPACTOR_PROXY_ANTHROPIC_BASE_URL,
        openai: own?.openaiBaseUrl ?? this.config.COMPACTOR_PROXY_OPENAI_BASE_URL,
      },
      timeoutMs: own?.timeoutMs ?? this.config.COMPACTOR_PROXY_TIMEOUT_MS,
    };
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(tenantId, { at: Date.now(), settings });
    return settings;
  }
}
