import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
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

class UpdateTenantLimits {
  @ApiPropertyOptional({ nullable: true, type: Number, description: `${LIMIT_DOCS.requestsPerMinutePerKey} 0 = no limit; null = the default.` })
  requestsPerMinutePerKey?: number | null;
  @ApiPropertyOptional({ nullable: true, type: Number, description: LIMIT_DOCS.requestsPerMinute })
  requestsPerMinute?: number | null;
  @ApiPropertyOptional({ nullable: true, type: Number, description: LIMIT_DOCS.appendedTokensPerMinute })
  appendedTokensPerMinute?: number | null;
  @ApiPropertyOptional({ nullable: true, type: Number, description: LIMIT_DOCS.summarizerTokensPerDay })
  summarizerTokensPerDay?: number | null;
  @ApiPropertyOptional({ nullable: true, type: Number, description: LIMIT_DOCS.summarizerCostPerDayUsd })
  summarizerCostPerDayUsd?: number | null;
  @ApiPropertyOptional({ nullable: true, type: Number, description: LIMIT_DOCS.sessionRetentionDays })
  sessionRetentionDays?: number | null;
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

class UpdateTenantProxy {
  @ApiPropertyOptional({ nullable: true, type: String, example: 'https://api.anthropic.com', description: 'An http(s) URL without credentials, query or fragment; null clears it.' })
  anthropicBaseUrl?: string | null;

  @ApiPropertyOptional({ nullable: true, type: String, example: 'https://api.openai.com' })
  openaiBaseUrl?: string | null;

  @ApiPropertyOptional({ nullable: true, type: Number, example: 600000, description: '1000..3600000; null clears it.' })
  timeoutMs?: number | null;
}

export class UpdateTenantRequest {
  @ApiPropertyOptional({ type: UpdateTenantProxy, description: 'Only the fields given change.' })
  proxy?: UpdateTenantProxy;

  @ApiPropertyOptional({
    nullable: true,
    description: 'A preset name or {preset, overrides}, validated like a session\'s `policy`; null clears it.',
    oneOf: [{ type: 'string' }, { $ref: '#/components/schemas/PolicyView' }],
    example: 'factor3',
  })
  defaultPolicy?: unknown;

  @ApiPropertyOptional({ type: UpdateTenantLimits, description: 'Only the fields given change; 0 = no limit, null = the operator\'s default.' })
  limits?: UpdateTenantLimits;
}
