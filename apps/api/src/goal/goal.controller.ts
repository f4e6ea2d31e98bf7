import { Body, Controller, Get, Param, Put } from '@nestjs/common';
import { ApiBadRequestResponse, ApiBody, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { z } from 'zod';
import { GoalRecord } from '@compactor/compaction';
import { Auth, Authenticated } from '../auth/auth.decorator';
import { AuthContext } from '../auth/scopes';
import { parseOrThrow, parseSessionId } from '../common/validation';
import { ErrorResponse } from '../errors/error-response.dto';
import { GoalRequest, GoalView } from './goal.dto';
import { GoalService } from './goal.service';

const text = (max: number) => z.string().trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);
const goalSchema = z.strictObject({
  goal: text(2000).optional(),
  priority: z.enum(['high', 'medium', 'low']).optional(),
  status: z.enum(['active', 'paused', 'completed']).optional(),
  checkpoints: z.array(z.strictObject({ text: text(500), status: z.enum(['completed', 'in-progress', 'pending']) })).max(100).default([]),
  decisions: z.array(z.strictObject({ text: text(500), locked: z.boolean().default(false) })).max(100).default([]),
  artifacts: z.array(z.strictObject({ text: text(500), action: z.enum(['created', 'modified', 'deleted']).optional(), path: text(500).optional() })).max(200).default([]),
  constraints: z.array(text(500)).max(50).optional(),
  nextStep: text(1000).optional(),
});

@ApiTags('goal')
@Controller('v1/sessions/:id/goal')
export class GoalController {
  constructor(private readonly goals: GoalService) {}

  @Get()
  @Authenticated('read')
  @ApiOperation({ operationId: 'getGoal', summary: "The session's goal record (seed 004): goal, checkpoints with status, decisions, artifacts, next step; and the goal block in the context." })
  @ApiOkResponse({ type: GoalView })
  @ApiNotFoundResponse({ type: ErrorResponse })
  get(@Auth() auth: AuthContext, @Param('id') id: string): Promise<GoalView> {
    return this.goals.get(auth.tenantId, parseSessionId(id));
  }

  @Put()
  @Authenticated('ingest')
  @ApiOperation({
    operationId: 'putGoal',
    summary: 'Replaces the goal record; the new goal block enters the context at once (a new context version). Sending a decision with locked: false unlocks it.',
  })
  @ApiBody({ type: GoalRequest })
  @ApiOkResponse({ type: GoalView })
  @ApiBadRequestResponse({ type: ErrorResponse })
  @ApiNotFoundResponse({ type: ErrorResponse })
  put(@Auth() auth: AuthContext, @Param('id') id: string, @Body() body: unknown): Promise<GoalView> {
    const sessionId = parseSessionId(id);
    return this.goals.put(auth.tenantId, sessionId, parseOrThrow(goalSchema, body ?? {}) as GoalRecord);
  }
}
