import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBadRequestResponse, ApiBody, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { z } from 'zod';
import { Auth, Authenticated } from '../auth/auth.decorator';
import { AuthContext } from '../auth/scopes';
import { parseOrThrow, parseSessionId } from '../common/validation';
import { ErrorResponse } from '../errors/error-response.dto';
import { CompactRequest, CompactResponse, JobView, WatermarkRequest, WatermarkResponse } from './compaction.dto';
import { CompactionService } from './compaction.service';

const jobIdSchema = z.uuid({ message: 'must be a job id (UUID)' });

@ApiTags('compaction')
@Controller('v1')
export class CompactionController {
  constructor(private readonly compaction: CompactionService) {}

  @Post('sessions/:id/compact')
  @HttpCode(202)
  @Authenticated('ingest')
  @ApiOperation({
    operationId: 'compactSession',
    summary: 'Manual compaction (like /compact). Queued for the workers; with dryRun, waits for the result and returns the would-be context without applying it.',
  })
  @ApiBody({ type: CompactRequest, required: false })
  @ApiAcceptedResponse({ type: CompactResponse })
  @ApiBadRequestResponse({ type: ErrorResponse })
  @ApiNotFoundResponse({ type: ErrorResponse })
  compact(@Auth() auth: AuthContext, @Param('id') id: string, @Body() input: CompactRequest): Promise<CompactResponse> {
    const sessionId = parseSessionId(id);
    return this.compaction.compact(auth.tenantId, sessionId, input);
  }

  @Post('sessions/:id/watermarks')
  @HttpCode(200)
  @Authenticated('ingest')
  @ApiOperation({
    operationId: 'advanceWatermark',
    summary: "Advances the watermark (seed 001's compress_to_checkpoint) and schedules a compaction; it never moves back.",
  })
  @ApiBody({ type: WatermarkRequest, required: false })
  @ApiOkResponse({ type: WatermarkResponse })
  @ApiBadRequestResponse({ type: ErrorResponse })
  @ApiNotFoundResponse({ type: ErrorResponse })
  watermark(@Auth() auth: AuthContext, @Param('id') id: string, @Body() body: WatermarkRequest): Promise<WatermarkResponse> {
    const sessionId = parseSessionId(id);
    return this.compaction.advanceWatermark(auth.tenantId, sessionId, body.seq);
  }

  @Get('jobs/:jobId')
  @Authenticated('read')
  @ApiOperation({ operationId: 'getJob', summary: 'A compaction job: status, steps, tokens before and after, LLM usage and cost, error.' })
  @ApiOkResponse({ type: JobView })
  @ApiNotFoundResponse({ type: ErrorResponse })
  job(@Auth() auth: AuthContext, @Param('jobId') jobId: string): Promise<JobView> {
    return this.compaction.job(auth.tenantId, parseOrThrow(jobIdSchema, jobId, 'jobId'));
  }
}
