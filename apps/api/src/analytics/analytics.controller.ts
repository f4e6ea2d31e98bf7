import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { z } from 'zod';
import { Auth, Authenticated } from '../auth/auth.decorator';
import { AuthContext } from '../auth/scopes';
import { parseOrThrow, parseSessionId } from '../common/validation';
import { ErrorResponse } from '../errors/error-response.dto';
import { MAX_RANGE_DAYS, resolveRange, summaryQuerySchema } from './analytics-range';
import { AnalyticsSummary, UsageSeries } from './analytics.dto';
import { AnalyticsService } from './analytics.service';

export const USAGE_PAGE_DEFAULT = 1000;
export const USAGE_PAGE_MAX = 5000;

const usageQuerySchema = z.strictObject({
  after: z
    .string()
    .regex(/^\d{1,18}$/, 'must be a cursor this API returned (nextCursor)')
    .transform((v) => BigInt(v))
    .default(0n),
  limit: z.coerce.number().int('must be an integer').min(1).max(USAGE_PAGE_MAX).default(USAGE_PAGE_DEFAULT),
});

@ApiTags('analytics')
@Controller('v1')
export class AnalyticsController {
  constructor(private readonly analytics: AnalyticsService) {}

  @Get('sessions/:id/usage')
  @Authenticated('read')
  @ApiOperation({
    operationId: 'getSessionUsage',
    summary:
      'Token usage over time: a point per append, compaction (with its marker) and restore, each with the budget and trigger lines of that time. Paginated, never downsampled.',
  })
  @ApiQuery({ name: 'after', required: false, type: String, description: 'The nextCursor of the previous page.' })
  @ApiQuery({ name: 'limit', required: false, type: Number, description: `Points per page (default ${USAGE_PAGE_DEFAULT}, at most ${USAGE_PAGE_MAX}).` })
  @ApiOkResponse({ type: UsageSeries })
  @ApiBadRequestResponse({ type: ErrorResponse })
  @ApiNotFoundResponse({ type: ErrorResponse, description: "No such session for this tenant (another tenant's session answers the same)." })
  usage(@Auth() auth: AuthContext, @Param('id') id: string, @Query() query: unknown): Promise<UsageSeries> {
    const sessionId = parseSessionId(id);
    const q = parseOrThrow(usageQuerySchema, query);
    return this.analytics.usage(auth.tenantId, sessionId, q.after, q.limit);
  }

  @Get('analytics/summary')
  @Authenticated('read')
  @ApiOperation({
    operationId: 'getAnalyticsSummary',
    summary:
      "The tenant's overview for a time range: tokens saved, compression ratios, compactions per day, LLM usage and cost, failures; with the queue depth and the sessions near their budget now.",
  })
  @ApiQuery({ name: 'from', required: false, type: String, description: 'ISO date or date-time with a time zone (inclusive; default: 30 days before `to`).' })
  @ApiQuery({ name: 'to', required: false, type: String, description: `ISO date (that day included) or date-time (exclusive); default now. At most ${MAX_RANGE_DAYS} days after \`from\`.` })
  @ApiOkResponse({ type: AnalyticsSummary })
  @ApiBadRequestResponse({ type: ErrorResponse, description: 'Names the bad field: a malformed date, `from` not before `to`, or a range over the maximum.' })
  summary(@Auth() auth: AuthContext, @Query() query: unknown): Promise<AnalyticsSummary> {
    return this.analytics.summary(auth.tenantId, resolveRange(parseOrThrow(summaryQuerySchema, query)));
  }
}
