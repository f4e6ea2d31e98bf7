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

export const USAGE_MAX_POINTS_MIN = 100;
export const USAGE_MAX_POINTS_MAX = 20_000;

const usageQuerySchema = z
  .strictObject({
    after: z
      .string()
      .regex(/^\d{1,18}$/, 'must be a cursor this API returned (nextCursor)')
      .transform((v) => BigInt(v))
      .optional(),
    limit: z.coerce.number().int('must be an integer').min(1).max(USAGE_PAGE_MAX).optional(),
    maxPoints: z.coerce.number().int('must be an integer').min(USAGE_MAX_POINTS_MIN).max(USAGE_MAX_POINTS_MAX).optional(),
  })
  .superRefine((q, ctx) => {
    if (q.maxPoints !== undefined && (q.after !== undefined || q.limit !== undefined))
      ctx.addIssue({ code: 'custom', path: ['maxPoints'], message: 'reads the whole series at once: it cannot be combined with after or limit' });
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
      'Token usage over time: a point per append, compaction (with its marker), restore and goal update, each with the budget and trigger lines of that time. Paginated and complete; or, with `maxPoints`, the whole series in one answer, downsampled when longer.',
  })
  @ApiQuery({ name: 'after', required: false, type: String, description: 'The nextCursor of the previous page.' })
  @ApiQuery({ name: 'limit', required: false, type: Number, description: `Points per page (default ${USAGE_PAGE_DEFAULT}, at most ${USAGE_PAGE_MAX}).` })
  @ApiQuery({
    name: 'maxPoints',
    required: false,
    type: Number,
    description: `The whole series in one answer (${USAGE_MAX_POINTS_MIN}–${USAGE_MAX_POINTS_MAX}; not with after or limit), for a chart: a longer series is split into stretches of equal length and each keeps its highest and lowest append, so every peak and dip wider than a stretch stays; every compaction, restore and goal update is kept with the point before it (the peak a compaction cut), as are the first and last points and every move of the budget or trigger line (those can add points beyond maxPoints). Points carry their position in the whole series.`,
  })
  @ApiOkResponse({ type: UsageSeries })
  @ApiBadRequestResponse({ type: ErrorResponse })
  @ApiNotFoundResponse({ type: ErrorResponse, description: "No such session for this tenant (another tenant's session answers the same)." })
  usage(@Auth() auth: AuthContext, @Param('id') id: string, @Query() query: unknown): Promise<UsageSeries> {
    const sessionId = parseSessionId(id);
    const q = parseOrThrow(usageQuerySchema, query);
    if (q.maxPoints !== undefined) return this.analytics.usageDownsampled(auth.tenantId, sessionId, q.maxPoints);
    return this.analytics.usage(auth.tenantId, sessionId, q.after ?? 0n, q.limit ?? USAGE_PAGE_DEFAULT);
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
