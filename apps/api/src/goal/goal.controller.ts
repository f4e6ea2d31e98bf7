import { Body, Controller, Get, Param, Put } from '@nestjs/common';
import { ApiBadRequestResponse, ApiBody, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { GoalRecord } from '@compactor/compaction';
import { Auth, Authenticated } from '../auth/auth.decorator';
import { AuthContext } from '../auth/scopes';
import { parseSessionId } from '../common/validation';
import { ErrorResponse } from '../errors/error-response.dto';
import { GoalRequest, GoalView } from './goal.dto';
import { GoalService } from './goal.service';

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
  put(@Auth() auth: AuthContext, @Param('id') id: string, @Body() body: GoalRequest): Promise<GoalView> {
    const sessionId = parseSessionId(id);
    return this.goals.put(auth.tenantId, sessionId, body as GoalRecord);
  }
}
