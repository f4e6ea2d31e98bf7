import { Controller, Get, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { AuditRepository } from '@compactor/persistence';
import { z } from 'zod';
import { Auth, Authenticated } from '../auth/auth.decorator';
import { AuthContext } from '../auth/scopes';
import { parseOrThrow } from '../common/validation';
import { ErrorResponse } from '../errors/error-response.dto';
import { AuditPage } from './audit.dto';

const auditQuerySchema = z.strictObject({
  // The id of the last entry of the previous page: a positive integer, at most 19 digits (bigint).
  cursor: z
    .string()
    .refine((v) => /^[1-9][0-9]{0,18}$/.test(v) && BigInt(v) <= 9_223_372_036_854_775_807n, 'is not a cursor this API returned')
    .optional(),
  limit: z.coerce.number().int('must be an integer').min(1, 'must be 1..200').max(200, 'must be 1..200').default(50),
});

@ApiTags('audit')
@Controller('v1/audit')
@Authenticated('admin')
export class AuditController {
  constructor(private readonly entries: AuditRepository) {}

  @Get()
  @ApiOperation({ operationId: 'listAuditEntries', summary: "The tenant's audit log of admin actions, newest first (keyset cursor)." })
  @ApiQuery({ name: 'cursor', required: false, description: 'nextCursor of the previous page.' })
  @ApiQuery({ name: 'limit', required: false, type: Number, description: '1..200, default 50.' })
  @ApiOkResponse({ type: AuditPage })
  @ApiBadRequestResponse({ type: ErrorResponse })
  async list(@Auth() auth: AuthContext, @Query() query: unknown): Promise<AuditPage> {
    const q = parseOrThrow(auditQuerySchema, query);
    const before = q.cursor === undefined ? undefined : BigInt(q.cursor);
    // One more than asked tells whether an older page exists.
    const rows = await this.entries.page(auth.tenantId, before, q.limit + 1);
    const page = rows.slice(0, q.limit);
    return {
      entries: page.map((r) => ({
        id: r.id.toString(),
        keyId: r.keyId,
        action: r.action,
        targetType: r.targetType,
        targetId: r.targetId,
        data: (r.data ?? {}) as Record<string, unknown>,
        createdAt: r.createdAt.toISOString(),
      })),
      nextCursor: rows.length > q.limit ? page[page.length - 1].id.toString() : null,
    };
  }
}
