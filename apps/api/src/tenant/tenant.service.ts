import { Inject, Injectable } from '@nestjs/common';
import { DomainError, FieldProblem, PolicyInput, ValidationFailed } from '@compactor/compaction';
import { ApiErrorCode } from '../errors/http-errors';
import { CompactionRepository, LIMIT_FIELDS, limitDefaults, Prisma, TenantRecord, TenantRepository, tenantOwnLimits } from '@compactor/persistence';
import { AuthContext } from '../auth/scopes';
import { API_CONFIG, ApiConfig } from '../config/api-config';
import { ProxySettings } from '../proxy/proxy-settings';
import { internalAddressOf } from '../proxy/upstream-address';
import { policyJson, policySchema } from '../sessions/session-config';
import { TenantDefaults } from './tenant-defaults';
import { TenantLimitsService } from './tenant-limits.service';
import { TenantLimitsView, TenantSettingsView, TenantUpdate } from './tenant.dto';

/** The settings fields as the audit log and the tenants.settings JSON name them. */
const PROXY_FIELDS = ['anthropicBaseUrl', 'openaiBaseUrl', 'timeoutMs'] as const;

type Json = Prisma.InputJsonValue | null;

function asObject(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/** The tenant's settings over the API: proxy upstreams and timeout, default policy. Every change is audited. */
@Injectable()
export class TenantService {
  constructor(
    @Inject(API_CONFIG) private readonly config: ApiConfig,
    private readonly tenants: TenantRepository,
    private readonly proxySettings: ProxySettings,
    private readonly defaults: TenantDefaults,
    private readonly limits: TenantLimitsService,
    private readonly compactions: CompactionRepository,
  ) {}

  async get(tenantId: string): Promise<TenantSettingsView> {
    const tenant = await this.tenants.find(tenantId);
    if (!tenant) throw new DomainError(ApiErrorCode.NotFound, 'Tenant not found');
    return this.view(tenant, await this.spendToday(tenantId));
  }

  /** What the tenant's compactions spent on the summarizer since the start of the UTC day (the spend caps' measure). */
  private async spendToday(tenantId: string): Promise<TenantSettingsView['spendToday']> {
    const spent = await this.compactions.spendToday(tenantId);
    return { since: spent.since.toISOString(), summarizerTokens: spent.tokens, summarizerCostUsd: spent.costUsd };
  }

  async update(auth: AuthContext, change: TenantUpdate): Promise<TenantSettingsView> {
    await this.refuseInternalUpstreams(change);
    const policy = change.defaultPolicy;
    const updated = await this.tenants.updateSettings(auth.tenantId, (current) => {
      const settings: Record<string, unknown> = { ...asObject(current) };
      const proxy: Record<string, unknown> = { ...asObject(settings.proxy) };
      const changes: Record<string, { from: Json; to: Json }> = {};
      for (const field of PROXY_FIELDS) {
        const value = change.proxy?.[field];
        if (value === undefined || same(proxy[field], value)) continue;
        changes[`proxy.${field}`] = { from: (proxy[field] ?? null) as Json, to: value };
        if (value === null) delete proxy[field];
        else proxy[field] = value;
      }
      if (Object.keys(proxy).length > 0) settings.proxy = proxy;
      else delete settings.proxy;
      const limits: Record<string, unknown> = { ...asObject(settings.limits) };
      for (const field of LIMIT_FIELDS) {
        const value = change.limits?.[field.name];
        if (value === undefined || same(limits[field.name], value)) continue;
        changes[`limits.${field.name}`] = { from: (limits[field.name] ?? null) as Json, to: value };
        if (value === null) delete limits[field.name];
        else limits[field.name] = value;
      }
      if (Object.keys(limits).length > 0) settings.limits = limits;
      else delete settings.limits;
      if (policy !== undefined) {
        const next = policy === null ? null : policyJson(policy as PolicyInput);
        if (!same(settings.defaultPolicy, next)) {
          changes.defaultPolicy = { from: (settings.defaultPolicy ?? null) as Json, to: next };
          if (next === null) delete settings.defaultPolicy;
          else settings.defaultPolicy = next;
        }
      }
      if (Object.keys(changes).length === 0) return null;
      return {
        settings: settings as Prisma.InputJsonObject,
        audit: { keyId: auth.keyId, action: 'tenant.updated', targetType: 'tenant', targetId: auth.tenantId, data: { changes } },
      };
    });
    if (!updated) throw new DomainError(ApiErrorCode.NotFound, 'Tenant not found');
    // This process reads the new settings at once; other API replicas within their 10 s cache.
    this.proxySettings.invalidate(auth.tenantId);
    this.defaults.invalidate(auth.tenantId);
    this.limits.invalidate(auth.tenantId);
    return this.view(updated, await this.spendToday(auth.tenantId));
  }

  /** The proxy's own address check (F8), as a 400 naming the field, unless the operator allows internal upstreams. */
  private async refuseInternalUpstreams(change: TenantUpdate): Promise<void> {
    if (this.config.COMPACTOR_PROXY_ALLOW_PRIVATE_UPSTREAMS) return;
    const problems: FieldProblem[] = [];
    for (const field of ['anthropicBaseUrl', 'openaiBaseUrl'] as const) {
      const url = change.proxy?.[field];
      if (!url) continue;
      const address = await internalAddressOf(url);
      if (address !== undefined) {
        problems.push({
          field: `proxy.${field}`,
          message: `resolves to an internal address (${address}); the operator allows that with COMPACTOR_PROXY_ALLOW_PRIVATE_UPSTREAMS=true`,
        });
      }
    }
    if (problems.length > 0) throw new ValidationFailed(problems);
  }

  private view(tenant: TenantRecord, spendToday: TenantSettingsView['spendToday']): TenantSettingsView {
    const settings = asObject(tenant.settings);
    const proxy = asObject(settings.proxy);
    const policy = policySchema.safeParse(settings.defaultPolicy);
    const str = (v: unknown) => (typeof v === 'string' ? v : null);
    const own = tenantOwnLimits(settings);
    return {
      id: tenant.id,
      name: tenant.name,
      proxy: {
        anthropicBaseUrl: str(proxy.anthropicBaseUrl),
        openaiBaseUrl: str(proxy.openaiBaseUrl),
        timeoutMs: typeof proxy.timeoutMs === 'number' ? proxy.timeoutMs : null,
      },
      proxyDefaults: {
        anthropicBaseUrl: this.config.COMPACTOR_PROXY_ANTHROPIC_BASE_URL,
        openaiBaseUrl: this.config.COMPACTOR_PROXY_OPENAI_BASE_URL,
        timeoutMs: this.config.COMPACTOR_PROXY_TIMEOUT_MS,
      },
      allowPrivateUpstreams: this.config.COMPACTOR_PROXY_ALLOW_PRIVATE_UPSTREAMS,
      defaultPolicy: settings.defaultPolicy !== undefined && policy.success ? { preset: policy.data.preset, overrides: policy.data.overrides as Record<string, unknown> } : null,
      limits: Object.fromEntries(LIMIT_FIELDS.map((f) => [f.name, own[f.name] ?? null])) as unknown as TenantLimitsView,
      limitDefaults: limitDefaults(this.config),
      spendToday,
    };
  }
}
