import { Controller, Get, Param, Query, Req, Res } from '@nestjs/common';
import { OptionalHeader } from '../common/optional-header';
import { ApiBadRequestResponse, ApiHeader, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiProduces, ApiQuery, ApiTags } from '@nestjs/swagger';
import { ValidationFailed } from '@compactor/compaction';
import type { Request, Response } from 'express';
import { ApiKeyAuthenticator } from '../auth/api-key-authenticator';
import { Auth, Authenticated } from '../auth/auth.decorator';
import { AuthContext } from '../auth/scopes';
import { parseOrThrow, parseSessionId } from '../common/validation';
import { ErrorResponse } from '../errors/error-response.dto';
import { EventStreamService } from './event-stream.service';
import { eventIdSchema, EventPage, eventsQuerySchema } from './events.dto';
import { EventsService } from './events.service';

const wantsStream = (accept: string | undefined) => (accept ?? '').toLowerCase().includes('text/event-stream');

@ApiTags('events')
@Controller('v1/sessions')
export class EventsController {
  constructor(
    private readonly events: EventsService,
    private readonly streams: EventStreamService,
    private readonly authenticator: ApiKeyAuthenticator,
  ) {}

  @Get(':id/events')
  @Authenticated('read')
  @ApiOperation({
    operationId: 'listEvents',
    summary:
      "The session's events with their human lines. JSON pages by id; with `Accept: text/event-stream`, a live stream " +
      '(`id`, `event`, `data` per event; first every event after `Last-Event-ID` or `after`, then new ones as they are ' +
      'recorded, compaction progress included; a heartbeat comment every 15 s).',
  })
  @ApiQuery({ name: 'after', required: false, type: String, description: 'Only events with id > after (0: from the first).' })
  @ApiQuery({ name: 'before', required: false, type: String, description: 'Only events with id < before (JSON only).' })
  @ApiQuery({ name: 'limit', required: false, type: Number, description: '1-500, default 100 (JSON only).' })
  @ApiQuery({ name: 'type', required: false, type: String, description: 'Only these types, comma-separated or repeated.' })
  @ApiQuery({ name: 'order', required: false, enum: ['asc', 'desc'], description: 'JSON only; a stream is always in id order.' })
  @ApiHeader({ name: 'Last-Event-ID', required: false, description: 'Stream: resume after this event id (takes precedence over `after`).' })
  @ApiProduces('application/json', 'text/event-stream')
  @ApiOkResponse({ type: EventPage })
  @ApiBadRequestResponse({ type: ErrorResponse })
  @ApiNotFoundResponse({ type: ErrorResponse, description: "No such session for this tenant (another tenant's session answers the same)." })
  async list(
    @Auth() auth: AuthContext,
    @Param('id') id: string,
    @Query() query: unknown,
    @OptionalHeader('accept') accept: string | undefined,
    @OptionalHeader('last-event-id') lastEventId: string | undefined,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const sessionId = parseSessionId(id);
    const q = parseOrThrow(eventsQuerySchema, query);
    if (!wantsStream(accept)) {
      const page = await this.events.page(auth.tenantId, sessionId, q);
      res.status(200).json(page);
      return;
    }
    const problems = [
      ...(q.order === 'desc' ? [{ field: 'order', message: 'must be asc for text/event-stream' }] : []),
      ...(q.before !== undefined ? [{ field: 'before', message: 'is not supported for text/event-stream' }] : []),
    ];
    if (problems.length > 0) throw new ValidationFailed(problems);
    const from = lastEventId !== undefined && lastEventId !== '' ? parseOrThrow(eventIdSchema, lastEventId, 'Last-Event-ID') : (q.after ?? 0n);
    // Validated and resolved (404) before the stream starts: after that the status is 200.
    const session = await this.events.session(auth.tenantId, sessionId);
    await this.streams.stream(res, session, from, q.type, { id: auth.keyId, stillActive: () => this.authenticator.stillActive(req) });
  }
}
