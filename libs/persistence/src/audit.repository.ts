import { Injectable } from '@nestjs/common';
import { Prisma } from './generated/prisma/client';
import { PrismaService } from './prisma.service';

/** The admin actions the audit log records. */
export type AuditAction =
  | 'api-key.created'
  | 'api-key.revoked'
  | 'snapshot.restored'
  | 'compaction.undone'
  | 'session.deleted'
  | 'session.expired'
  | 'session.updated'
  | 'tenant.updated';

export type AuditTargetType = 'api-key' | 'session' | 'tenant';

/** One entry to write. `data` is small and never holds a secret (no key, no key hash). */
export interface NewAuditEntry {
  tenantId: string;
  keyId: string | null;
  action: AuditAction;
  targetType: AuditTargetType;
  targetId: string;
  data: Prisma.InputJsonObject;
}

export interface AuditEntryRecord {
  id: bigint;
  keyId: string | null;
  action: string;
  targetType: string;
  targetId: string;
  data: unknown;
  createdAt: Date;
}

const fields = { id: true, keyId: true, action: true, targetType: true, targetId: true, data: true, createdAt: true } as const;

@Injectable()
export class AuditRepository {
  constructor(private readonly prisma: PrismaService) {}

  async record(entry: NewAuditEntry): Promise<void> {
    await this.prisma.auditEntry.create({ data: entry });
  }

  /** A tenant's entries, newest first, with ids below `before` (keyset; the (tenant_id, id DESC) index serves it). */
  page(tenantId: string, before: bigint | undefined, limit: number): Promise<AuditEntryRecord[]> {
    return this.prisma.auditEntry.findMany({
      where: { tenantId, ...(before !== undefined ? { id: { lt: before } } : {}) },
      orderBy: { id: 'desc' },
      take: limit,
      select: fields,
    });
  }
}
