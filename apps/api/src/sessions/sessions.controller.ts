import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Res } from '@nestjs/common';
import { OptionalHeader } from '../common/optional-header';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiHeader,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiPayloadTooLargeResponse,
  ApiQuery,
  ApiTags,
} from '@nestjs/swagger';
import { ValidationFailed } from '@compactor/compaction';
import { MessageRepository } from '@compactor/persistence';
import { z } from 'zod';
import type { Response } from 'express';
import { Auth, Authenticated } from '../auth/auth.decorator';
import { AuthContext } from '../auth/scopes';
import { parseOrThrow, parseSessionId } from '../common/validation';
import { AuditLog } from '../audit/audit-log';
import { ErrorResponse } from '../errors/error-response.dto';
import { TenantDefaults } from '../tenant/tenant-defaults';
import { AppendMessagesRequest, AppendMessagesResponse, idempotencyKeySchema } from './append.dto';
import { AppendService } from './append.service';
import { ContextResponse } from './context.dto';
import { ContextService } from './context.service';
import { CompactionWait } from '../compaction/compaction-wait';
import { HistoryPage } from './history.dto';
import { StageTimer } from '../common/stage-timer';
import { assertMayOverride, resolveSessionConfig } from './session-config';
import {
  CreateSessionRequest,
  DeletedSession,
  SessionDetail,
  SessionPage,
  SessionWithWarnings,
  UpdateSessionRequest,
} from './sessions.dto';
import { decodeCursor, SessionsService, toSessionView } from './sessions.service';
import { SessionUpdateService } from './session-update.service';

const listQuerySchema = z.strictObject({
  model: z.string().min(1).max(200).optional(),
  search: z.string().min(1).max(128).optional(),
  activeAfter: z.coerce.date({ message: 'must be an ISO date' }).optional(),
  activeBefore: z.coerce.date({ message: 'must be an ISO date' }).optional(),
  minUtilization: z.coerce.number().min(0).optional(),
  maxUtilization: z.coerce.number().min(0).optional(),
  cursor: z.string().max(200).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

const historyQuerySchema = z.strictObject({
  after: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

const contextQuerySchema = z.strictObject({
  format: z.enum(['anthropic', 'openai', 'responses', 'canonical']).default('anthropic'),
  waitMs: z.coerce.number().int().min(0).max(60_000).default(0),
});

const SESSION_NOT_FOUND = { type: ErrorResponse, description: "No such session for this tenant (another tenant's session answers the same)." };

@ApiTags('sessions')
@Controller('v1/sessions')
export class SessionsController {
  constructor(
    private readonly sessions: SessionsService,
    private readonly updates: SessionUpdateService,
    private readonly appends: AppendService,
    private readonly contexts: ContextService,
    private readonly compactionWait: CompactionWait,
    private readonly messages: MessageRepository,
    private readonly audit: AuditLog,
    private readonly tenantDefaults: TenantDefaults,
  ) {}

  @Get()
  @Authenticated('read')
  @ApiOperation({ operationId: 'listSessions', summary: 'Sessions, most recently active first, filtered and paginated by cursor.' })
  @ApiQuery({ name: 'model', required: false })
  @ApiQuery({ name: 'search', required: false, description: 'Substring of the session id.' })
  @ApiQuery({ name: 'activeAfter', required: false })
  @ApiQuery({ name: 'activeBefore', required: false })
  @ApiQuery({ name: 'minUtilization', required: false, type: Number })
  @ApiQuery({ name: 'maxUtilization', required: false, type: Number })
  @ApiQuery({ name: 'cursor', required: false })
  @ApiQuery({ name: 'limit', required: false, type: Number })
  @ApiOkResponse({ type: SessionPage })
  @ApiBadRequestResponse({ type: ErrorResponse })
  list(@Auth() auth: AuthContext, @Query() query: unknown): Promise<SessionPage> {
    const q = parseOrThrow(listQuerySchema, query);
    const after = q.cursor === undefined ? undefined : decodeCursor(q.cursor);
    if (q.cursor !== undefined && !after) throw new ValidationFailed([{ field: 'cursor', message: 'is not a cursor this API returned' }]);
    return this.sessions.list(auth.tenantId, q, after);
  }

  @Post()
  @Authenticated('ingest')
  @ApiOperation({ operationId: 'createSession', summary: 'Creates a session explicitly (an append creates one implicitly).' })
  @ApiBody({ type: CreateSessionRequest })
  @ApiCreatedResponse({ type: SessionWithWarnings })
  @ApiConflictResponse({ type: ErrorResponse })
  async create(@Auth() auth: AuthContext, @Body() input: CreateSessionRequest): Promise<SessionWithWarnings> {
    assertMayOverride(input.policy, auth.scopes);
    // Without a policy the session takes the tenant's default policy (PATCH /v1/tenant).
    const config = resolveSessionConfig({ ...input, policy: input.policy ?? (await this.tenantDefaults.policy(auth.tenantId)) });
    const session = await this.sessions.create(auth.tenantId, input.id, config);
    return { ...toSessionView(session), warnings: config.warnings };
  }

  @Get(':id')
  @Authenticated('read')
  @ApiOperation({ operationId: 'getSession' })
  @ApiOkResponse({ type: SessionDetail })
  @ApiNotFoundResponse(SESSION_NOT_FOUND)
  get(@Auth() auth: AuthContext, @Param('id') id: string): Promise<SessionDetail> {
    return this.sessions.detail(auth.tenantId, parseSessionId(id));
  }

  @Patch(':id')
  @Authenticated('admin')
  @ApiOperation({ operationId: 'updateSession', summary: "Changes a session's model, window, reserve or policy (a new model recounts its history)." })
  @ApiBody({ type: UpdateSessionRequest })
  @ApiOkResponse({ type: SessionWithWarnings })
  @ApiNotFoundResponse(SESSION_NOT_FOUND)
  async update(@Auth() auth: AuthContext, @Param('id') id: string, @Body() change: UpdateSessionRequest): Promise<SessionWithWarnings> {
    const sessionId = parseSessionId(id);
    assertMayOverride(change.policy, auth.scopes);
    const updated = await this.updates.update(auth.tenantId, sessionId, change);
    // The new values; of a policy its preset and the names of its overrides (a prompt override can be kilobytes).
    const { policy, ...fields } = change;
    await this.audit.record(auth, 'session.updated', { type: 'session', id: sessionId }, {
      ...fields,
      ...(policy ? { policy: { preset: policy.preset, overrides: Object.keys(policy.overrides) } } : {}),
    });
    return updated;
  }

  @Delete(':id')
  @HttpCode(200)
  @Authenticated('admin')
  @ApiOperation({ operationId: 'deleteSession', summary: 'Deletes the session and everything it owns (history, versions, checkpoints, artifacts, events).' })
  @ApiOkResponse({ type: DeletedSession })
  @ApiNotFoundResponse(SESSION_NOT_FOUND)
  async delete(@Auth() auth: AuthContext, @Param('id') id: string): Promise<DeletedSession> {
    const sessionId = parseSessionId(id);
    await this.sessions.delete(auth.tenantId, sessionId);
    await this.audit.record(auth, 'session.deleted', { type: 'session', id: sessionId });
    return { id: sessionId, deleted: true };
  }

  @Post(':id/messages')
  @Authenticated('ingest')
  @ApiOperation({ operationId: 'appendMessages', summary: 'Appends 1-500 messages (Anthropic, OpenAI or canonical shape), creating the session if needed.' })
  @ApiHeader({ name: 'Idempotency-Key', required: false, description: 'A retried request with the same key applies once and gets the first response.' })
  @ApiBody({ type: AppendMessagesRequest })
  @ApiCreatedResponse({ type: AppendMessagesResponse })
  @ApiBadRequestResponse({ type: ErrorResponse, description: 'Names every bad field; nothing of the request is stored.' })
  @ApiConflictResponse({ type: ErrorResponse, description: 'The Idempotency-Key was used for a different request.' })
  @ApiPayloadTooLargeResponse({ type: ErrorResponse })
  async append(
    @Auth() auth: AuthContext,
    @Param('id') id: string,
    @Body() append: AppendMessagesRequest,
    @Res({ passthrough: true }) res: Response,
    @OptionalHeader('idempotency-key') idempotencyKey?: string,
  ): Promise<AppendMessagesResponse> {
    const sessionId = parseSessionId(id);
    const key = idempotencyKey === undefined ? undefined : parseOrThrow(idempotencyKeySchema, idempotencyKey, 'Idempotency-Key');
    assertMayOverride(append.policy, auth.scopes);
    // Where the handler's time went (the body was read and parsed before it): Server-Timing, for clients and `npm run bench -- ingest`.
    const timing = new StageTimer('append', 'Compactor append handler');
    const answer = await this.appends.append(auth.tenantId, sessionId, append, key, { timing });
    timing.mark('schedule');
    res.setHeader('server-timing', timing.header());
    return answer;
  }

  @Get(':id/messages')
  @Authenticated('read')
  @ApiOperation({ operationId: 'listMessages', summary: 'The full history, exactly as appended, in seq order (keyset pagination).' })
  @ApiQuery({ name: 'after', required: false, type: Number, description: 'Return messages with seq > after.' })
  @ApiQuery({ name: 'limit', required: false, type: Number })
  @ApiOkResponse({ type: HistoryPage })
  @ApiNotFoundResponse(SESSION_NOT_FOUND)
  async history(@Auth() auth: AuthContext, @Param('id') id: string, @Query() query: unknown): Promise<HistoryPage> {
    const sessionId = parseSessionId(id);
    const q = parseOrThrow(historyQuerySchema, query);
    const session = await this.sessions.require(auth.tenantId, sessionId);
    const rows = await this.messages.page(session.id, q.after, q.limit);
    const last = rows.at(-1);
    return {
      sessionId,
      messages: rows.map((r) => ({
        seq: r.seq,
        role: r.role,
        format: r.format,
        message: r.raw,
        blocks: r.blocks as unknown[],
        tokens: r.tokens,
        pinned: r.pinned,
        tags: r.tags,
        createdAt: r.createdAt.toISOString(),
      })),
      nextAfter: last && last.seq < session.lastSeq ? last.seq : null,
    };
  }

  @Get(':id/context')
  @Authenticated('read')
  @ApiOperation({ operationId: 'getContext', summary: 'The ready-to-send context, always valid for the chosen provider.' })
  @ApiQuery({ name: 'format', required: false, enum: ['anthropic', 'openai', 'responses', 'canonical'] })
  @ApiQuery({
    name: 'waitMs',
    required: false,
    type: Number,
    description:
      'At most this long (0..60000 ms, default 0), when the context would be served through the fallback while a compaction of the session is queued or running and a worker is alive: wait for it and serve the compacted context.',
  })
  @ApiOkResponse({ type: ContextResponse })
  @ApiNotFoundResponse(SESSION_NOT_FOUND)
  async context(@Auth() auth: AuthContext, @Param('id') id: string, @Query() query: unknown, @Res() res: Response): Promise<void> {
    const sessionId = parseSessionId(id);
    const { format, waitMs } = parseOrThrow(contextQuerySchema, query);
    // Sent as the serialized body the context cache holds, so a repeated read serializes nothing.
    // With `waitMs`, the session row as read before the context: a compaction landing after it counts as the one waited for.
    const before = waitMs > 0 ? await this.sessions.require(auth.tenantId, sessionId) : undefined;
    let body = await this.contexts.contextBody(auth.tenantId, sessionId, format);
    if (body.fallback && before && (await this.compactionWait.settled(before, waitMs))) body = await this.contexts.contextBody(auth.tenantId, sessionId, format);
    // Written as is, part by part: no copy into one buffer, no re-encoding and no ETag hashing of a body that can be megabytes.
    res.status(200).set({ 'content-type': 'application/json; charset=utf-8', 'content-length': String(body.length) });
    res.cork();
    for (const part of body.parts) res.write(part);
    res.uncork();
    res.end();
  }
}
