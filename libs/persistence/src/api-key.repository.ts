import { Injectable } from '@nestjs/common';
import { ApiKeyScope, Prisma } from './generated/prisma/client';
import { PgPoolService } from './pg-pool.service';
import { PrismaService } from './prisma.service';

export interface ApiKeyRecord {
  id: string;
  tenantId: string;
  name: string;
  prefix: string;
  scopes: ApiKeyScope[];
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  /** Refused from this instant on, like a revoked key; null: never expires. */
  expiresAt: Date | null;
}

/** An unrevoked key and whether it has expired (by the database's clock, the one every API replica shares). */
export type UnrevokedApiKey = ApiKeyRecord & { expired: boolean };

const publicFields = {
  id: true,
  tenantId: true,
  name: true,
  prefix: true,
  scopes: true,
  createdAt: true,
  lastUsedAt: true,
  revokedAt: true,
  expiresAt: true,
} as const;

@Injectable()
export class ApiKeyRepository {
  constructor(
    private readonly prisma: PrismaService,
    private readonly pg: PgPoolService,
  ) {}

  /**
   * The key whose SHA-256 is `hash`, unless revoked, with whether it expired (so a refusal can say
   * why). One indexed lookup per request, on plain pg (hot path).
   */
  async findUnrevokedByHash(hash: string): Promise<UnrevokedApiKey | null> {
    const { rows } = await this.pg.pool.query<UnrevokedApiKey>(
      `SELECT id, tenant_id AS "tenantId", name, prefix, scopes::text[] AS scopes, created_at AS "createdAt",
              last_used_at AS "lastUsedAt", revoked_at AS "revokedAt", expires_at AS "expiresAt",
              (expires_at IS NOT NULL AND expires_at <= now()) AS expired
       FROM api_keys WHERE hash = $1 AND revoked_at IS NULL LIMIT 1`,
      [hash],
    );
    return rows[0] ?? null;
  }

  /** The key whose SHA-256 is `hash`, unless revoked or expired. */
  async findActiveByHash(hash: string): Promise<ApiKeyRecord | null> {
    const found = await this.findUnrevokedByHash(hash);
    if (!found || found.expired) return null;
    const { expired: _expired, ...key } = found;
    return key;
  }

  /**
   * Records that the key was used, at most once a minute per key (one UPDATE that does nothing
   * when the last stamp is recent), so busy keys cost no write per request.
   */
  async touch(id: string, now: Date = new Date()): Promise<void> {
    await this.pg.pool.query(
      `UPDATE api_keys SET last_used_at = $2::timestamptz WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2::timestamptz - interval '60 seconds')`,
      [id, now],
    );
  }

  create(data: { tenantId: string; name: string; prefix: string; hash: string; scopes: ApiKeyScope[]; expiresAt?: Date | null }): Promise<ApiKeyRecord> {
    return this.prisma.apiKey.create({ data, select: publicFields });
  }

  list(tenantId: string): Promise<ApiKeyRecord[]> {
    return this.prisma.apiKey.findMany({ where: { tenantId }, orderBy: { createdAt: 'desc' }, select: publicFields });
  }

  /** Revokes a key of the tenant; false when the tenant has no such key. */
  async revoke(tenantId: string, id: string): Promise<ApiKeyRecord | null> {
    const { count } = await this.prisma.apiKey.updateMany({ where: { id, tenantId, revokedAt: null }, data: { revokedAt: new Date() } });
    if (count === 0) return null;
    return this.prisma.apiKey.findUnique({ where: { id }, select: publicFields });
  }

  /**
   * Makes `hash` the one active key named `name` of the tenant (headless initialization):
   * creates it if missing, un-revokes it, and revokes other active keys of that name.
   */
  async ensureExactly(data: { tenantId: string; name: string; prefix: string; hash: string; scopes: ApiKeyScope[] }): Promise<void> {
    // Processes starting at once with the same key race on its insert: the one that loses finds the row on its second try.
    for (let attempt = 1; ; attempt += 1) {
      try {
        await this.ensureOnce(data);
        return;
      } catch (error) {
        if (attempt >= 2 || !(error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002')) throw error;
      }
    }
  }

  private async ensureOnce(data: { tenantId: string; name: string; prefix: string; hash: string; scopes: ApiKeyScope[] }): Promise<void> {
    await this.prisma.$transaction([
      this.prisma.apiKey.updateMany({
        where: { tenantId: data.tenantId, name: data.name, revokedAt: null, NOT: { hash: data.hash } },
        data: { revokedAt: new Date() },
      }),
      this.prisma.apiKey.upsert({
        where: { hash: data.hash },
        create: data,
        update: { revokedAt: null, expiresAt: null, scopes: data.scopes, tenantId: data.tenantId, name: data.name },
      }),
    ]);
  }
}
