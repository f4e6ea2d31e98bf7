import { LRUCache } from 'lru-cache';

/**
 * A tenant's limits (issue #15 items 3, 5 and 6): rate limits, summarizer spend caps and session
 * retention. Each is stored in `tenants.settings.limits` when the tenant sets it; otherwise the
 * operator's environment value applies (`COMPACTOR_LIMIT_*`, in both apps' config). 0 means "no
 * limit" everywhere (in the environment and in a tenant's settings); a tenant's `null` means "the
 * operator's default".
 */
export interface TenantLimits {
  /** Requests per minute one API key may make (REST and proxy). */
  requestsPerMinutePerKey: number;
  /** Requests per minute all of the tenant's keys together may make. */
  requestsPerMinute: number;
  /** Tokens the tenant may append per minute (REST appends and the messages the proxy records). */
  appendedTokensPerMinute: number;
  /** Summarizer tokens (input + output) the tenant's compactions may spend per UTC day. */
  summarizerTokensPerDay: number;
  /** Summarizer cost in US dollars the tenant's compactions may spend per UTC day. */
  summarizerCostPerDayUsd: number;
  /** Sessions idle for more days than this are deleted with their artifacts. */
  sessionRetentionDays: number;
}

export type TenantLimitName = keyof TenantLimits;

export interface LimitField {
  name: TenantLimitName;
  /** The environment variable that holds the operator's default. */
  env: string;
  /** Inclusive bounds of a set value (0, "no limit", is always allowed). */
  min: number;
  max: number;
  integer: boolean;
  description: string;
}

export const LIMIT_FIELDS: readonly LimitField[] = [
  { name: 'requestsPerMinutePerKey', env: 'COMPACTOR_LIMIT_REQUESTS_PER_MINUTE_PER_KEY', min: 1, max: 1_000_000, integer: true, description: 'Requests per minute one API key may make, REST and proxy.' },
  { name: 'requestsPerMinute', env: 'COMPACTOR_LIMIT_REQUESTS_PER_MINUTE', min: 1, max: 10_000_000, integer: true, description: "Requests per minute all of the tenant's keys together may make." },
  { name: 'appendedTokensPerMinute', env: 'COMPACTOR_LIMIT_APPENDED_TOKENS_PER_MINUTE', min: 1_000, max: 1_000_000_000, integer: true, description: 'Tokens the tenant may append per minute (REST appends and the messages the proxy records).' },
  { name: 'summarizerTokensPerDay', env: 'COMPACTOR_LIMIT_SUMMARIZER_TOKENS_PER_DAY', min: 1_000, max: 10_000_000_000, integer: true, description: "Summarizer tokens (input + output) the tenant's compactions may spend per UTC day." },
  { name: 'summarizerCostPerDayUsd', env: 'COMPACTOR_LIMIT_SUMMARIZER_COST_PER_DAY_USD', min: 0.01, max: 1_000_000, integer: false, description: "Summarizer cost in US dollars the tenant's compactions may spend per UTC day." },
  { name: 'sessionRetentionDays', env: 'COMPACTOR_LIMIT_SESSION_RETENTION_DAYS', min: 1, max: 36_500, integer: true, description: 'Sessions idle for more days than this are deleted with their artifacts.' },
];

export const LIMIT_NAMES = LIMIT_FIELDS.map((f) => f.name);

/** What is wrong with a value for that limit, or undefined when it is valid (0 = no limit). */
export function limitProblem(field: LimitField, value: unknown): string | undefined {
  const range = `must be 0 (no limit) or ${field.min}..${field.max}`;
  if (typeof value !== 'number' || !Number.isFinite(value)) return `must be a number (${range.slice(5)})`;
  if (field.integer && !Number.isInteger(value)) return 'must be an integer';
  if (value !== 0 && (value < field.min || value > field.max)) return range;
  return undefined;
}

/** The limits a tenant set in its settings JSON; invalid or missing values are left out (the default applies). */
export function tenantOwnLimits(settings: unknown): Partial<TenantLimits> {
  const limits = settings !== null && typeof settings === 'object' ? (settings as { limits?: unknown }).limits : undefined;
  if (limits === null || typeof limits !== 'object' || Array.isArray(limits)) return {};
  const out: Partial<TenantLimits> = {};
  for (const field of LIMIT_FIELDS) {
    const value = (limits as Record<string, unknown>)[field.name];
    if (limitProblem(field, value) === undefined) out[field.name] = value as number;
  }
  return out;
}

/** The limits in force: the tenant's own where set, the operator's defaults elsewhere. */
export function effectiveLimits(settings: unknown, defaults: TenantLimits): TenantLimits {
  return { ...defaults, ...tenantOwnLimits(settings) };
}

/** The operator's defaults from an app config holding the `COMPACTOR_LIMIT_*` fields. */
export function limitDefaults(config: Record<string, unknown>): TenantLimits {
  const out = {} as TenantLimits;
  for (const field of LIMIT_FIELDS) {
    const value = config[field.env];
    out[field.name] = typeof value === 'number' ? value : 0;
  }
  return out;
}

/** The start of the current UTC day: the spend caps' day. */
export function utcDayStart(now = new Date()): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
}

/**
 * The limits in force per tenant, read at most every 10 s per tenant and process (the least
 * recently used go past 10,000 tenants). The API's rate limits and the worker's spend caps share
 * it; a settings change drops this process's copy with `invalidate`, other processes follow within 10 s.
 */
export class TenantLimitsCache {
  private readonly cache = new LRUCache<string, TenantLimits>({ max: 10_000, ttl: 10_000 });

  constructor(
    private readonly tenants: { settings(tenantId: string): Promise<unknown> },
    private readonly defaults: TenantLimits,
  ) {}

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
