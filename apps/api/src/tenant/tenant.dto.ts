import { LIMIT_FIELDS, limitProblem, TenantLimits } from '@compactor/persistence';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';
import { policySchema } from '../sessions/session-config';
import { PolicyView } from '../sessions/sessions.dto';

export class TenantProxySettings {
  @ApiPropertyOptional({ nullable: true, type: String, description: "The tenant's Anthropic upstream (null: the operator's COMPACTOR_PROXY_ANTHROPIC_BASE_URL)." })
  anthropicBaseUrl!: string | null;

  @ApiPropertyOptional({ nullable: true, type: String, description: "The tenant's OpenAI-compatible upstream, without /v1 (null: COMPACTOR_PROXY_OPENAI_BASE_URL)." })
  openaiBaseUrl!: string | null;

  @ApiPropertyOptional({ nullable: true, type: Number, description: 'Upstream timeout in ms, 1000..3600000 (null: COMPACTOR_PROXY_TIMEOUT_MS).' })
  timeoutMs!: number | null;
}

export class ProxyDefaults {
  @ApiProperty()
  anthropicBaseUrl!: string;

  @ApiProperty()
  openaiBaseUrl!: string;

  @ApiProperty()
  timeoutMs!: number;
}

const LIMIT_DOCS = {
  requestsPerMinutePerKey: 'Requests per minute one API key may make, REST and proxy (1..1,000,000).',
  requestsPerMinute: "Requests per minute all of the tenant's keys together may make (1..10,000,000).",
  appendedTokensPerMinute: 'Tokens the tenant may append per minute, REST appends and the messages the proxy records (1,000..1,000,000,000).',
  summarizerTokensPerDay: "Summarizer tokens (input + output) the tenant's compactions may spend per UTC day (1,000..10,000,000,000).",
  summarizerCostPerDayUsd: "Summarizer cost in US dollars the tenant's compactions may spend per UTC day (0.01..1,000,000).",
  sessionRetentionDays: 'Sessions idle for more days than this are deleted with their artifacts (1..36,500).',
};

/** The operator's default limits (COMPACTOR_LIMIT_*); 0 = no limit. */
export class TenantLimitDefaults {
  @ApiProperty({ description: LIMIT_DOCS.requestsPerMinutePerKey })
  requestsPerMinutePerKey!: number;
  @ApiProperty({ description: LIMIT_DOCS.requestsPerMinute })
  requestsPerMinute!: number;
  @ApiProperty({ description: LIMIT_DOCS.appendedTokensPerMinute })
  appendedTokensPerMinute!: number;
  @ApiProperty({ description: LIMIT_DOCS.summarizerTokensPerDay })
  summarizerTokensPerDay!: number;
  @ApiProperty({ description: LIMIT_DOCS.summarizerCostPerDayUsd })
  summarizerCostPerDayUsd!: number;
  @ApiProperty({ description: LIMIT_DOCS.sessionRetentionDays })
  sessionRetentionDays!: number;
}

/** The tenant's own limits: 0 = no limit, null = the operator's default. */
export class TenantLimitsView {
  @ApiProperty({ nullable: true, type: Number, description: LIMIT_DOCS.requestsPerMinutePerKey })
  requestsPerMinutePerKey!: number | null;
  @ApiProperty({ nullable: true, type: Number, description: LIMIT_DOCS.requestsPerMinute })
  requestsPerMinute!: number | null;
  @ApiProperty({ nullable: true, type: Number, description: LIMIT_DOCS.appendedTokensPerMinute })
  appendedTokensPerMinute!: number | null;
  @ApiProperty({ nullable: true, type: Number, description: LIMIT_DOCS.summarizerTokensPerDay })
  summarizerTokensPerDay!: number | null;
  @ApiProperty({ nullable: true, type: Number, description: LIMIT_DOCS.summarizerCostPerDayUsd })
  summarizerCostPerDayUsd!: number | null;
  @ApiProperty({ nullable: true, type: Number, description: LIMIT_DOCS.sessionRetentionDays })
  sessionRetentionDays!: number | null;
}

/** The summarizer spend the caps measure: what the tenant's compactions recorded since the start of the UTC day. */
export class TenantSpendToday {
  @ApiProperty({ format: 'date-time', description: 'Start of the current UTC day.' })
  since!: string;
  @ApiProperty({ description: 'Summarizer tokens (input + output) recorded by compactions since then.' })
  summarizerTokens!: number;
  @ApiProperty({ description: 'Summarizer cost in US dollars recorded since then.' })
  summarizerCostUsd!: number;
}

export class TenantSettingsView {
  @ApiProperty({ format: 'uuid' })
  id!: string;

  @ApiProperty()
  name!: string;

  @ApiProperty({ type: TenantProxySettings, description: "The tenant's own proxy upstreams and timeout." })
  proxy!: TenantProxySettings;

  @ApiProperty({ type: ProxyDefaults, description: "The operator's environment values, used where the tenant sets none." })
  proxyDefaults!: ProxyDefaults;

  @ApiProperty({ description: 'Whether upstreams on loopback, link-local or private addresses are allowed (COMPACTOR_PROXY_ALLOW_PRIVATE_UPSTREAMS).' })
  allowPrivateUpstreams!: boolean;

  @ApiPropertyOptional({ nullable: true, type: PolicyView, description: 'The policy of sessions created without one (null: the `balanced` preset).' })
  defaultPolicy!: PolicyView | null;

  @ApiProperty({ type: TenantLimitsView, description: "The tenant's own limits (null: the operator's default)." })
  limits!: TenantLimitsView;

  @ApiProperty({ type: TenantLimitDefaults, description: "The operator's default limits (COMPACTOR_LIMIT_*); 0 = no limit." })
  limitDefaults!: TenantLimitDefaults;

  @ApiProperty({ type: TenantSpendToday, description: 'Summarizer spend today (UTC), against limits.summarizerTokensPerDay and summarizerCostPerDayUsd.' })
  spendToday!: TenantSpendToday;
}

/** An upstream base URL a tenant may set: http(s), no credentials (they would be shown and audited), no query or fragment. */
const upstreamUrl = z
  .string()
  .max(2048, 'must be at most 2048 characters')
  .superRefine((value, ctx) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be an http(s) URL' });
      return;
    }
    if (!['http:', 'https:'].includes(url.protocol)) ctx.addIssue({ code: 'custom', message: 'must be an http(s) URL' });
    else if (url.username || url.password) ctx.addIssue({ code: 'custom', message: 'must not contain credentials (the provider key goes in the request, not the URL)' });
    else if (url.search || url.hash) ctx.addIssue({ code: 'custom', message: 'must not have a query or fragment' });
  });

/**
 * One limit: 0 (no limit) or a number in its range; null clears the tenant's own value. limitProblem checks it (its messages
 * name the range), so the schema takes any value; its OpenAPI type is given by hand.
 */
const limitValue = (field: (typeof LIMIT_FIELDS)[number]) =>
  (
    z.unknown().superRefine((value, ctx) => {
      if (value === null) return;
      const problem = limitProblem(field, value);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }) as z.ZodType<number | null>
  )
    .optional()
    .meta({
      type: 'number',
      nullable: true,
      description: field.name === 'requestsPerMinutePerKey' ? `${LIMIT_DOCS[field.name]} 0 = no limit; null = the default.` : LIMIT_DOCS[field.name],
    });

const limitsSchema = z
  .strictObject(Object.fromEntries(LIMIT_FIELDS.map((f) => [f.name, limitValue(f)])) as Record<keyof TenantLimits, z.ZodOptional<z.ZodType<number | null>>>)
  .meta({ id: 'UpdateTenantLimits' });

export const updateTenantSchema = z
  .strictObject({
    proxy: z
      .strictObject({
        anthropicBaseUrl: upstreamUrl
          .nullable()
          .optional()
          .meta({ example: 'https://api.anthropic.com', description: 'An http(s) URL without credentials, query or fragment; null clears it.' }),
        openaiBaseUrl: upstreamUrl.nullable().optional().meta({ example: 'https://api.openai.com' }),
        timeoutMs: z
          .number({ message: 'must be a number of milliseconds' })
          .int('must be an integer')
          .min(1000, 'must be 1000..3600000')
          .max(3_600_000, 'must be 1000..3600000')
          .nullable()
          .optional()
          .meta({ example: 600000, description: '1000..3600000; null clears it.' }),
      })
      .meta({ id: 'UpdateTenantProxy' })
      .optional()
      .meta({ description: 'Only the fields given change.' }),
    defaultPolicy: policySchema
      .nullable()
      .optional()
      .meta({ example: 'factor3', description: "A preset name or {preset, overrides}, validated like a session's `policy`; null clears it." }),
    limits: limitsSchema.optional().meta({ description: "Only the fields given change; 0 = no limit, null = the operator's default." }),
  })
  .refine((v) => v.defaultPolicy !== undefined || (v.proxy !== undefined && Object.keys(v.proxy).length > 0) || (v.limits !== undefined && Object.keys(v.limits).length > 0), {
    message: 'must change at least one of proxy.anthropicBaseUrl, proxy.openaiBaseUrl, proxy.timeoutMs, defaultPolicy, limits.*',
  });

export type TenantUpdate = z.infer<typeof updateTenantSchema>;

/** The body of PATCH /v1/tenant: its schema validates it and is its OpenAPI schema. */
export class UpdateTenantRequest extends createZodDto(updateTenantSchema) {}
