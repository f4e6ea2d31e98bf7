import { Controller, Get, Param, Query, Res } from '@nestjs/common';
import { ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiProduces, ApiQuery, ApiTags } from '@nestjs/swagger';
import { DomainError, READ_ARTIFACT_TOOL, READ_ARTIFACT_TOOL_OPENAI, readArtifactSlice } from '@compactor/compaction';
import { ApiErrorCode } from '../errors/http-errors';
import { CompactionRepository } from '@compactor/persistence';
import type { Response } from 'express';
import { z } from 'zod';
import { Auth, Authenticated } from '../auth/auth.decorator';
import { AuthContext } from '../auth/scopes';
import { parseOrThrow } from '../common/validation';
import { ErrorResponse } from '../errors/error-response.dto';

const artifactIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,100}$/, 'must be an artifact id as named in the context (art_…)');
const rangeSchema = z.strictObject({
  offset: z.coerce.number().int().min(0).optional(),
  limit: z.coerce.number().int().min(1).optional(),
});

class ArtifactNotFound extends DomainError {
  constructor(id: string) {
    super(ApiErrorCode.NotFound, `Artifact '${id}' not found`);
  }
}

/** Offloaded tool output, byte-exact (SPEC.md "Artifact"; the `compactor_read_artifact` tool reads through here). */
@ApiTags('compaction')
@Controller('v1/artifacts')
export class ArtifactsController {
  constructor(private readonly compactions: CompactionRepository) {}

  @Get(':id')
  @Authenticated('read')
  @ApiOperation({
    operationId: 'getArtifact',
    summary: 'The offloaded content, byte-exact; `offset` and `limit` (characters, as the compactor_read_artifact tool takes them) read a part of it.',
  })
  @ApiProduces('text/plain', 'application/octet-stream')
  @ApiQuery({ name: 'offset', required: false, type: Number })
  @ApiQuery({ name: 'limit', required: false, type: Number })
  @ApiOkResponse({
    description: 'The content. Headers: X-Compactor-Session, X-Compactor-Seq, X-Content-SHA256 and X-Total-Bytes (of the whole artifact); with offset/limit, X-Total-Chars and X-Next-Offset (absent at the end).',
  })
  @ApiNotFoundResponse({ type: ErrorResponse })
  async get(@Auth() auth: AuthContext, @Param('id') id: string, @Query() query: unknown, @Res() res: Response): Promise<void> {
    const artifactId = parseOrThrow(artifactIdSchema, id, 'id');
    const range = parseOrThrow(rangeSchema, query);
    const artifact = await this.compactions.findArtifact(auth.tenantId, artifactId);
    if (!artifact) throw new ArtifactNotFound(artifactId);
    const content = Buffer.from(artifact.content);
    res
      .status(200)
      .type(artifact.mediaType.startsWith('text/') ? `${artifact.mediaType}; charset=utf-8` : artifact.mediaType)
      .set({
        'X-Compactor-Session': artifact.session.externalId,
        'X-Compactor-Seq': String(artifact.seq),
        'X-Content-SHA256': artifact.sha256,
        'X-Total-Bytes': String(content.length),
      });
    if (range.offset === undefined && range.limit === undefined) {
      res.end(content);
      return;
    }
    const slice = readArtifactSlice(content.toString('utf8'), range.offset, range.limit);
    res.set({ 'X-Total-Chars': String(slice.totalChars), ...(slice.nextOffset !== null ? { 'X-Next-Offset': String(slice.nextOffset) } : {}) }).end(slice.content);
  }
}

/** The published definition of the tool an agent adds to read offloaded output (SPEC.md "Artifact"). */
@ApiTags('compaction')
@Controller('v1/tools')
export class ToolsController {
  @Get('read-artifact')
  @Authenticated('read')
  @ApiOperation({ operationId: 'getReadArtifactTool', summary: "The `compactor_read_artifact` tool definition, in Anthropic and OpenAI shapes, to add to an agent's tools." })
  @ApiOkResponse({ description: '{ anthropic, openai }' })
  readArtifactTool(): { anthropic: unknown; openai: unknown } {
    return { anthropic: READ_ARTIFACT_TOOL, openai: READ_ARTIFACT_TOOL_OPENAI };
  }
}
