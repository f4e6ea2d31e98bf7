import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export const AUDIT_ACTIONS = ['api-key.created', 'api-key.revoked', 'snapshot.restored', 'compaction.undone', 'session.deleted', 'session.expired', 'session.updated', 'tenant.updated'] as const;

export class AuditEntryView {
  @ApiProperty({ description: 'Increasing with time; newer entries have larger ids.', example: '42' })
  id!: string;

  @ApiPropertyOptional({ format: 'uuid', nullable: true, type: String, description: 'The API key that acted; null for the service itself (`session.expired`: the retention job).' })
  keyId!: string | null;

  @ApiProperty({ enum: AUDIT_ACTIONS })
  action!: string;

  @ApiProperty({ enum: ['api-key', 'session', 'tenant'] })
  targetType!: string;

  @ApiProperty({ description: "The target's id: a key id, a session id or the tenant id." })
  targetId!: string;

  @ApiProperty({ type: 'object', additionalProperties: true, description: 'What changed (names, ids, old and new settings); never a key or its hash.' })
  data!: Record<string, unknown>;

  @ApiProperty({ format: 'date-time' })
  createdAt!: string;
}

export class AuditPage {
  @ApiProperty({ type: AuditEntryView, isArray: true })
  entries!: AuditEntryView[];

  @ApiPropertyOptional({ nullable: true, type: String, description: 'Pass as `cursor` for the next (older) page; null on the last page.' })
  nextCursor!: string | null;
}
