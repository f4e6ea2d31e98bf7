import { Injectable } from '@nestjs/common';
import type { NewAuditEntry } from './audit.repository';
import { Prisma } from './generated/prisma/client';
import { PrismaService } from './prisma.service';

export const DEFAULT_TENANT = 'default';

export interface TenantRecord {
  id: string;
  name: string;
  settings: unknown;
}

/** What a settings change writes: the new settings and its audit entry, or null when nothing changes. */
export type SettingsChange = { settings: Prisma.InputJsonObject; audit: Omit<NewAuditEntry, 'tenantId'> } | null;

@Injectable()
export class TenantRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** The tenant's settings JSON (per-tenant proxy upstreams, …); null when the tenant is gone. */
  async settings(id: string): Promise<unknown> {
    const tenant = await this.prisma.tenant.findUnique({ where: { id }, select: { settings: true } });
    return tenant?.settings ?? null;
  }

  /** Every tenant's id and settings (the retention job reads each tenant's limits); a self-hosted service has few tenants. */
  listSettings(): Promise<{ id: string; settings: unknown }[]> {
    return this.prisma.tenant.findMany({ select: { id: true, settings: true }, orderBy: { id: 'asc' } });
  }

  find(id: string): Promise<TenantRecord | null> {
    return this.prisma.tenant.findUnique({ where: { id }, select: { id: true, name: true, settings: true } });
  }

  /**
   * Changes the settings under the tenant's row lock, so two concurrent changes of different fields
   * both hold, and writes the change's audit entry in the same transaction (no change without its entry).
   */
  async updateSettings(id: string, change: (current: unknown) => SettingsChange): Promise<TenantRecord | null> {
    return this.prisma.$transaction(async (tx) => {
      const rows = await tx.$queryRaw<{ settings: unknown }[]>`SELECT settings FROM tenants WHERE id = ${id}::uuid FOR UPDATE`;
      if (rows.length === 0) return null;
      const next = change(rows[0].settings);
      if (next) {
        await tx.tenant.update({ where: { id }, data: { settings: next.settings } });
        await tx.auditEntry.create({ data: { ...next.audit, tenantId: id } });
      }
      return tx.tenant.findUnique({ where: { id }, select: { id: true, name: true, settings: true } });
    });
  }

  /**
   * The tenant of that name, created on first use. One statement (INSERT … ON CONFLICT): API processes starting at once
   * on a new database (two replicas, a fresh test stack) each ensure the default tenant, and the ORM's upsert, a read
   * then an insert, let the second one fail on the unique name and the process exit.
   */
  async ensure(name: string = DEFAULT_TENANT): Promise<{ id: string; name: string }> {
    const rows = await this.prisma.$queryRaw<{ id: string; name: string }[]>`
      INSERT INTO tenants (id, name) VALUES (gen_random_uuid(), ${name})
      ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name
      RETURNING id::text AS id, name`;
    return rows[0];
  }
}
