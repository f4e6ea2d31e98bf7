import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Res } from '@nestjs/common';
import { ApiBadRequestResponse, ApiBody, ApiConflictResponse, ApiCreatedResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import type { Logger } from 'pino';
import { z } from 'zod';
import { Auth, Authenticated } from '../auth/auth.decorator';
import { AuthContext } from '../auth/scopes';
import { parseOrThrow, parseSessionId } from '../common/validation';
import { AuditLog } from '../audit/audit-log';
import { streamChunks } from '../common/stream-response';
import { ErrorResponse } from '../errors/error-response.dto';
import { LOGGER } from '../logging/logger';
import { CheckpointList, CreateSnapshotRequest, RestoreResponse, SnapshotList, SnapshotView, VersionDiff } from './snapshots.dto';
import { SnapshotsService } from './snapshots.service';

const listSchema = z.strictObject({
  limit: z.coerce.number().int('must be an integer').min(1, 'must be 1..200').max(200, 'must be 1..200').default(50),
  before: z.uuid({ message: 'must be a snapshot id (UUID)' }).optional(),
});
const uuid = (what: string) => z.uuid({ message: `must be a ${what} id (UUID)` });
const versionNumber = z.coerce.number({ message: 'must be a version number' }).int('must be a version number').min(0, 'must be 0 or more');

@ApiTags('snapshots')
@Controller('v1/sessions/:id')
export class SnapshotsController {
  constructor(
    private readonly snapshots: SnapshotsService,
    private readonly audit: AuditLog,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  @Get('snapshots')
  @Authenticated('read')
  @ApiOperation({ operationId: 'listSnapshots', summary: 'Snapshots of the session, newest first: before every compaction, at the snapshot threshold (80%), and manual ones.' })
  @ApiQuery({ name: 'limit', required: false, type: Number })
  @ApiQuery({ name: 'before', required: false, type: String })
  @ApiOkResponse({ type: SnapshotList })
  @ApiBadRequestResponse({ type: ErrorResponse })
  @ApiNotFoundResponse({ type: ErrorResponse })
  list(@Auth() auth: AuthContext, @Param('id') id: string, @Query() query: unknown): Promise<SnapshotList> {
    const q = parseOrThrow(listSchema, query ?? {});
    return this.snapshots.list(auth.tenantId, parseSessionId(id), q.limit, q.before);
  }

  @Post('snapshots')
  @HttpCode(201)
  @Authenticated('ingest')
  @ApiOperation({ operationId: 'createSnapshot', summary: 'A manual snapshot of the current context version, with an optional label.' })
  @ApiBody({ type: CreateSnapshotRequest, required: false })
  @ApiCreatedResponse({ type: SnapshotView })
  @ApiBadRequestResponse({ type: ErrorResponse })
  @ApiNotFoundResponse({ type: ErrorResponse })
  create(@Auth() auth: AuthContext, @Param('id') id: string, @Body() body: CreateSnapshotRequest): Promise<SnapshotView> {
    const sessionId = parseSessionId(id);
    return this.snapshots.create(auth.tenantId, sessionId, body.label ?? null);
  }

  @Post('snapshots/:snapshotId/restore')
  @HttpCode(200)
  @Authenticated('ingest')
  @ApiOperation({
    operationId: 'restoreSnapshot',
    summary: "A new head version equal to the snapshot's (checkpoints, watermark, goal block); the history is never rewritten and later messages stay live.",
  })
  @ApiOkResponse({ type: RestoreResponse })
  @ApiBadRequestResponse({ type: ErrorResponse })
  @ApiNotFoundResponse({ type: ErrorResponse })
  @ApiConflictResponse({ type: ErrorResponse })
  async restore(@Auth() auth: AuthContext, @Param('id') id: string, @Param('snapshotId') snapshotId: string): Promise<RestoreResponse> {
    const sessionId = parseSessionId(id);
    const restored = await this.snapshots.restore(auth.tenantId, sessionId, parseOrThrow(uuid('snapshot'), snapshotId, 'snapshotId'));
    await this.audit.record(auth, 'snapshot.restored', { type: 'session', id: sessionId }, { snapshotId: restored.snapshotId, restoredVersion: restored.restoredVersion, version: restored.version });
    return restored;
  }

  @Post('compactions/:jobId/undo')
  @HttpCode(200)
  @Authenticated('ingest')
  @ApiOperation({ operationId: 'undoCompaction', summary: 'Undo a compaction: restore the snapshot taken right before its result was applied.' })
  @ApiOkResponse({ type: RestoreResponse })
  @ApiBadRequestResponse({ type: ErrorResponse })
  @ApiNotFoundResponse({ type: ErrorResponse })
  @ApiConflictResponse({ type: ErrorResponse, description: 'The job changed nothing (skipped, failed, dry run or still running).' })
  async undo(@Auth() auth: AuthContext, @Param('id') id: string, @Param('jobId') jobId: string): Promise<RestoreResponse> {
    const sessionId = parseSessionId(id);
    const job = parseOrThrow(uuid('job'), jobId, 'jobId');
    const restored = await this.snapshots.undo(auth.tenantId, sessionId, job);
    await this.audit.record(auth, 'compaction.undone', { type: 'session', id: sessionId }, { jobId: job, snapshotId: restored.snapshotId, restoredVersion: restored.restoredVersion, version: restored.version });
    return restored;
  }

  @Get('versions/:a/diff/:b')
  @Authenticated('read')
  @ApiOperation({ operationId: 'diffVersions', summary: 'Which messages version b masked, offloaded, summarized (into which checkpoint), compressed, dropped or restored compared with version a (0 = uncompacted).' })
  @ApiOkResponse({ type: VersionDiff })
  @ApiBadRequestResponse({ type: ErrorResponse })
  @ApiNotFoundResponse({ type: ErrorResponse })
  diff(@Auth() auth: AuthContext, @Param('id') id: string, @Param('a') a: string, @Param('b') b: string): Promise<VersionDiff> {
    const sessionId = parseSessionId(id);
    return this.snapshots.diff(auth.tenantId, sessionId, parseOrThrow(versionNumber, a, 'a'), parseOrThrow(versionNumber, b, 'b'));
  }

  @Get('checkpoints')
  @Authenticated('read')
  @ApiOperation({ operationId: 'listCheckpoints', summary: 'The checkpoint timeline: every checkpoint (aged ones too) with level, sizes, extracted facts and whether the context uses it.' })
  @ApiOkResponse({ type: CheckpointList })
  @ApiNotFoundResponse({ type: ErrorResponse })
  checkpoints(@Auth() auth: AuthContext, @Param('id') id: string): Promise<CheckpointList> {
    return this.snapshots.checkpoints(auth.tenantId, parseSessionId(id));
  }

  @Get('export')
  @Authenticated('read')
  @ApiOperation({
    operationId: 'exportSession',
    summary:
      "The session's full history, versions, checkpoints, snapshots, jobs and events as one JSON document, streamed (chunked) as the client reads it. A failure after the first byte cuts the connection: a response without its final `]}` is incomplete.",
  })
  @ApiOkResponse({ schema: { type: 'object', additionalProperties: true } })
  @ApiNotFoundResponse({ type: ErrorResponse })
  async export(@Auth() auth: AuthContext, @Param('id') id: string, @Res() res: Response): Promise<void> {
    const sessionId = parseSessionId(id);
    await streamChunks(res, this.snapshots.exportChunks(auth.tenantId, sessionId), 'application/json; charset=utf-8', (error) =>
      this.logger.error({ err: error, session: sessionId }, 'session export failed mid-stream; connection cut'),
    );
  }
}
