import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { Public } from '../auth/auth.decorator';
import { ErrorResponse } from '../errors/error-response.dto';
import { LivenessResponse, ReadinessResponse } from './health.dto';
import { HealthService } from './health.service';

@ApiTags('health')
@Public()
@Controller('health')
export class HealthController {
  constructor(private readonly health: HealthService) {}

  @Get()
  @ApiOperation({ operationId: 'getLiveness', summary: 'Liveness: the process answers.' })
  @ApiOkResponse({ type: LivenessResponse })
  liveness(): LivenessResponse {
    return { status: 'ok' };
  }

  @Get('ready')
  @ApiOperation({ operationId: 'getReadiness', summary: 'Readiness: PostgreSQL and Redis answer.' })
  @ApiOkResponse({ type: ReadinessResponse })
  @ApiServiceUnavailableResponse({ type: ErrorResponse, description: 'Names the dependency that failed.' })
  readiness(): Promise<ReadinessResponse> {
    return this.health.readiness();
  }
}
