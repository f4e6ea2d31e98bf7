import { Injectable } from '@nestjs/common';
import { AuditAction, AuditRepository, AuditTargetType, Prisma } from '@compactor/persistence';
import { AuthContext } from '../auth/scopes';

/** Writes the audit entry of an admin action, naming the key that acted. `data` never holds a secret. */
@Injectable()
export class AuditLog {
  constructor(private readonly entries: AuditRepository) {}

  record(auth: AuthContext, action: AuditAction, target: { type: AuditTargetType; id: string }, data: Prisma.InputJsonObject = {}): Promise<void> {
    return this.entries.record({ tenantId: auth.tenantId, keyId: auth.keyId, action, targetType: target.type, targetId: target.id, data });
  }
}
