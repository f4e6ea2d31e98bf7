import { Body, Controller, Get, Patch } from '@nestjs/common';
import { ApiBadRequestResponse, ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Auth, Authenticated } from '../auth/auth.decorator';
import { AuthContext } from '../auth/scopes';
import { ErrorResponse } from '../errors/error-response.dto';
import { TenantSettingsView, UpdateTenantRequest } from './tenant.dto';
import { TenantService } from './tenant.service';

@ApiTags('tenant')
@Controller('v1/tenant')
@Authenticated('admin')
export class TenantController {
  constructor(private readonly tenant: TenantService) {}

  @Get()
  @ApiOperation({ operationId: 'getTenant', summary: "The key's tenant and its settings: proxy upstreams and timeout, default policy." })
  @ApiOkResponse({ type: TenantSettingsView })
  get(@Auth() auth: AuthContext): Promise<TenantSettingsView> {
    return this.tenant.get(auth.tenantId);
  }

  @Patch()
  @ApiOperation({ operationId: 'updateTenant', summary: "Changes the tenant's settings (only the fields given; null clears one); each change writes an audit entry." })
  @ApiBody({ type: UpdateTenantRequest })
  @ApiOkResponse({ type: TenantSettingsView })
  @ApiBadRequestResponse({ type: ErrorResponse, description: 'Names every bad field, e.g. proxy.openaiBaseUrl resolving to an internal address.' })
  update(@Auth() auth: AuthContext, @Body() change: UpdateTenantRequest): Promise<TenantSettingsView> {
    return this.tenant.update(auth, change);
  }
}
