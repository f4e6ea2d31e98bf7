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
}
