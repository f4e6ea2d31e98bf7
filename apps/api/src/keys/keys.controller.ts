import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBadRequestResponse, ApiBody, ApiCreatedResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiKeyScope } from '@compactor/persistence';
import { Auth, Authenticated } from '../auth/auth.decorator';
import { AuthContext } from '../auth/scopes';
import { AuditLog } from '../audit/audit-log';
import { ErrorResponse } from '../errors/error-response.dto';
import { ApiKeyList, ApiKeyView, CreateApiKeyRequest, CreatedApiKey, keyExpiry } from './keys.dto';
import { KeysService } from './keys.service';

@ApiTags('keys')
@Controller('v1/keys')
@Authenticated('admin')
export class KeysController {
  constructor(
    private readonly keys: KeysService,
    private readonly audit: AuditLog,
  ) {}

  @Get()
  @ApiOperation({ operationId: 'listApiKeys', summary: "The tenant's API keys (never the keys themselves)." })
  @ApiOkResponse({ type: ApiKeyList })
  async list(@Auth() auth: AuthContext): Promise<ApiKeyList> {
    return { keys: await this.keys.list(auth.tenantId) };
  }

  @Post()
  @ApiOperation({
    operationId: 'createApiKey',
    summary: 'Creates a key, optionally expiring (`expiresInDays` or `expiresAt`); the response is the only time the key is shown.',
  })
  @ApiBody({ type: CreateApiKeyRequest })
  @ApiCreatedResponse({ type: CreatedApiKey })
  @ApiBadRequestResponse({ type: ErrorResponse, description: 'A field is invalid (an expiry in the past, more than 3650 days ahead, or both expiry fields); the error names it.' })
  async create(@Auth() auth: AuthContext, @Body() input: CreateApiKeyRequest): Promise<CreatedApiKey> {
    const created = await this.keys.create(auth.tenantId, input.name, [...new Set(input.scopes)] as ApiKeyScope[], keyExpiry(input, new Date()));
    // The key's id, name, prefix, scopes and expiry: never the key or its hash.
    await this.audit.record(
      auth,
      'api-key.created',
      { type: 'api-key', id: created.id },
      { name: created.name, prefix: created.prefix, scopes: created.scopes, expiresAt: created.expiresAt },
    );
    return created;
  }

  @Delete(':keyId')
  @HttpCode(200)
  @ApiOperation({ operationId: 'revokeApiKey', summary: 'Revokes a key; requests with it get 401 from now on.' })
  @ApiOkResponse({ type: ApiKeyView })
  @ApiNotFoundResponse({ type: ErrorResponse })
  async revoke(@Auth() auth: AuthContext, @Param('keyId') keyId: string): Promise<ApiKeyView> {
    const revoked = await this.keys.revoke(auth.tenantId, keyId);
    await this.audit.record(auth, 'api-key.revoked', { type: 'api-key', id: revoked.id }, { name: revoked.name, prefix: revoked.prefix });
    return revoked;
  }
}
