import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Auth, Authenticated } from '../auth/auth.decorator';
import { AuthContext } from '../auth/scopes';
import { CallerView, StatusResponse } from './status.dto';
import { StatusService } from './status.service';

@ApiTags('status')
@Controller('v1/status')
export class StatusController {
  constructor(private readonly status: StatusService) {}

  @Get()
  @Authenticated('admin')
  @ApiOperation({
    operationId: 'getStatus',
    summary:
      'What runs behind the API (admin): the live workers with their host, summarizer (provider, model, endpoint without secrets) and whether it answers, the compaction queue depth, the policy presets, and the scopes of the key that asks.',
  })
  @ApiOkResponse({ type: StatusResponse })
  get(@Auth() auth: AuthContext): Promise<StatusResponse> {
    return this.status.status(auth);
  }

  @Get('caller')
  @Authenticated('read')
  @ApiOperation({ operationId: 'getCaller', summary: 'The key that asks: its tenant, id and scopes (any live key may ask; a 401 means it is not live).' })
  @ApiOkResponse({ type: CallerView })
  caller(@Auth() auth: AuthContext): CallerView {
    return { tenantId: auth.tenantId, keyId: auth.keyId, scopes: auth.scopes };
  }
}
