import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Auth, Authenticated } from '../auth/auth.decorator';
import { AuthContext } from '../auth/scopes';
import { StatusResponse } from './status.dto';
import { StatusService } from './status.service';

@ApiTags('status')
@Controller('v1/status')
export class StatusController {
  constructor(private readonly status: StatusService) {}

  @Get()
  @Authenticated('read')
  @ApiOperation({
    operationId: 'getStatus',
    summary:
      'What runs behind the API: the live workers with their summarizer (provider, model, endpoint without secrets) and whether it answers, the compaction queue depth, the policy presets, and the scopes of the key that asks.',
  })
  @ApiOkResponse({ type: StatusResponse })
  get(@Auth() auth: AuthContext): Promise<StatusResponse> {
    return this.status.status(auth);
  }
}
