import { Inject, Injectable } from '@nestjs/common';
import { TenantRepository } from '@compactor/persistence';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { z } from 'zod';
import { API_CONFIG, ApiConfig } from '../config/api-config';
import { LOGGER } from '../logging/logger';
import { PROVIDER_NAMES, ProxyError, ProxyProvider } from './provider-errors';
import { internalAddressOf } from './upstream-address';

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
  /** Per tenant for TTL_MS; the least recently used go past 10,000 tenants. */
  private readonly cache = new LRUCache<string, UpstreamSettings | ProxyError>({ max: 10_000, ttl: TTL_MS });

  constructor(
    @Inject(API_CONFIG) private readonly config: ApiConfig,
    private readonly tenants: TenantRepository,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async forTenant(tenantId: string): Promise<UpstreamSettings> {
    const hit = this.cache.get(tenantId);
    const settings = hit ?? (await this.read(tenantId));
    if (settings instanceof ProxyError) throw settings;
    return settings;
  }

  /** Drops this process's copy of the tenant's settings (PATCH /v1/tenant changed them). */
  invalidate(tenantId: string): void {
    this.cache.delete(tenantId);
  }

  private async read(tenantId: string): Promise<UpstreamSettings | ProxyError> {
    const parsed = tenantProxySchema.safeParse((await this.tenants.settings(tenantId)) ?? {});
    if (!parsed.success) this.logger.warn({ tenantId, problems: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) }, 'tenant proxy settings ignored');
    const own = parsed.success ? parsed.data.proxy : undefined;
    let settings: UpstreamSettings | ProxyError = {
      baseUrl: {
        anthropic: own?.anthropicBaseUrl ?? this.config.COMPACTOR_PROXY_ANTHROPIC_BASE_URL,
        openai: own?.openaiBaseUrl ?? this.config.COMPACTOR_PROXY_OPENAI_BASE_URL,
      },
      timeoutMs: own?.timeoutMs ?? this.config.COMPACTOR_PROXY_TIMEOUT_MS,
    };
    if (!this.config.COMPACTOR_PROXY_ALLOW_PRIVATE_UPSTREAMS) settings = (await this.internalUpstream(tenantId, own)) ?? settings;
    this.cache.set(tenantId, settings);
    return settings;
  }

  /** The refusal of a tenant's own upstream that resolves to an internal address (F8: settings must not reach the operator's network). */
  private async internalUpstream(tenantId: string, own: { anthropicBaseUrl?: string; openaiBaseUrl?: string } | undefined): Promise<ProxyError | undefined> {
    for (const [provider, url] of [['anthropic', own?.anthropicBaseUrl], ['openai', own?.openaiBaseUrl]] as const) {
      if (url === undefined) continue;
      const address = await internalAddressOf(url);
      if (address === undefined) continue;
      this.logger.warn({ tenantId, provider, address }, 'tenant proxy upstream refused: internal address');
      return new ProxyError(
        502,
        'upstream_not_allowed',
        `Compactor proxy: the tenant's ${PROVIDER_NAMES[provider]} upstream resolves to an internal address (${address}); set COMPACTOR_PROXY_ALLOW_PRIVATE_UPSTREAMS=true to allow it`,
      );
    }
    return undefined;
  }
}
