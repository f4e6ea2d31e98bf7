import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiKeyScope } from '@compactor/persistence';
import { Auth, Authenticated } from '../auth/auth.decorator';
import { AuthContext } from '../auth/scopes';
import { parseOrThrow } from '../common/validation';
import { ErrorResponse } from '../errors/error-response.dto';
import { ApiKeyList, ApiKeyView, CreateApiKeyRequest, CreatedApiKey, createKeySchema } from './keys.dto';
import { KeysService } from './keys.service';

@ApiTags('keys')
@Controller('v1/keys')
@Authenticated('admin')
export class KeysController {
  constructor(private readonly keys: KeysService) {}

  @Get()
  @ApiOperation({ operationId: 'listApiKeys', summary: "The tenant's API keys (never the keys themselves)." })
  @ApiOkResponse({ type: ApiKeyList })
  async list(@Auth() auth: AuthContext): Promise<ApiKeyList> {
    return { keys: await this.keys.list(auth.tenantId) };
  }

  @Post()
  @ApiOperation({ operationId: 'createApiKey', summary: 'Creates a key; the response is the only time the key is shown.' })
  @ApiBody({ type: CreateApiKeyRequest })
  @ApiCreatedResponse({ type: CreatedApiKey })
  create(@Auth() auth: AuthContext, @Body() body: unknown): Promise<CreatedApiKey> {
    const input = parseOrThrow(createKeySchema, body);
    return this.keys.create(auth.tenantId, input.name, [...new Set(input.scopes)] as ApiKeyScope[]);
  }

  @Delete(':keyId')
  @HttpCode(200)
  @ApiOperation({ operationId: 'revokeApiKey', summary: 'Revokes a key; requests with it get 401 from now on.' })
  @ApiOkResponse({ type: ApiKeyView })
  @ApiNotFoundResponse({ type: ErrorResponse })
  revoke(@Auth() auth: AuthContext, @Param('keyId') keyId: string): Promise<ApiKeyView> {
    return this.keys.revoke(auth.tenantId, keyId);
  }
}
