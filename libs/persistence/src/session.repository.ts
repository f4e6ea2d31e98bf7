import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { MessageRole, Prisma } from './generated/prisma/client';
import { PrismaService } from './prisma.service';

export interface SessionRecord {
  id: string;
  tenantId: string;
  externalId: string;
  model: string;
  contextWindow: number;
  outputReserve: number;
  policy: unknown;
  goal: unknown;
  headVersionId: string | null;
  lastSeq: number;
  lastRole: MessageRole | null;
  openToolUseIds: string[];
  historyTokens: number;
  contextTokens: number;
  systemTokens: number;
  utilization: number;
  compactions: number;
  createdAt: Date;
  updatedAt: Date;
  lastActivityAt: Date;
}

export interface SessionConfig {
  model: string;
  contextWindow: number;
  outputReserve: number;
  policy: Prisma.InputJsonValue;
}

export interface SessionListFilter {
  tenantId: string;
  model?: string;
  search?: string;
  activeAfter?: Date;
  activeBefore?: Date;
  minUtilization?: number;
  maxUtilization?: number;
  /** Keyset cursor: the last row of the previous page. */
  after?: { lastActivityAt: Date; id: string };
  limit: number;
}

type SessionRow = Omit<SessionRecord, 'historyTokens'> & { historyTokens: bigint | number };

export function toSessionRecord(row: SessionRow): SessionRecord {
  return { ...row, historyTokens: Number(row.historyTokens) };
}

@Injectable()
export class SessionRepository {
  constructor(private readonly prisma: PrismaService) {}

  async find(tenantId: string, externalId: string): Promise<SessionRecord | null> {
    const row = await this.prisma.session.findUnique({ where: { tenantId_externalId: { tenantId, externalId } } });
    return row ? toSessionRecord(row) : null;
  }

  /** Creates the session; null when the tenant already has one with that id. */
  async create(tenantId: string, externalId: string, config: SessionConfig): Promise<SessionRecord | null> {
    try {
      return toSessionRecord(await this.prisma.session.create({ data: { id: randomUUID(), tenantId, externalId, ...config } }));
    } catch (error) {
      if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002') return null;
      throw error;
    }
  }

  async update(
    id: string,
    data: Partial<SessionConfig> & { contextTokens?: number; utilization?: number },
  ): Promise<SessionRecord> {
    return toSessionRecord(await this.prisma.session.update({ where: { id }, data }));
  }

  /** Deletes the session and everything it owns (messages, versions, checkpoints, artifacts, …) by cascade. */
  async delete(tenantId: string, externalId: string): Promise<boolean> {
    const { count } = await this.prisma.session.deleteMany({ where: { tenantId, externalId } });
    return count > 0;
  }

  /** One page, newest activity first, on the (tenant_id, last_activity_at) index. */
  async list(filter: SessionListFilter): Promise<SessionRecord[]> {
    const where: Prisma.SessionWhereInput = { tenantId: filter.tenantId };
    if (filter.model) where.model = filter.model;
    if (filter.search) where.externalId = { contains: filter.search, mode: 'insensitive' };
    if (filter.activeAfter || filter.activeBefore) where.lastActivityAt = { gte: filter.activeAfter, lte: filter.activeBefore };
    if (filter.minUtilization !== undefined || filter.maxUtilization !== undefined) {
      where.utilization = { gte: filter.minUtilization, lte: filter.maxUtilization };
    }
    if (filter.after) {
      where.OR = [
        { lastActivityAt: { lt: filter.after.lastActivityAt } },
        { lastActivityAt: filter.after.lastActivityAt, id: { lt: filter.after.id } },
      ];
    }
    const rows = await this.prisma.session.findMany({
      where,
      orderBy: [{ lastActivityAt: 'desc' }, { id: 'desc' }],
      take: filter.limit,
    });
    return rows.map(toSessionRecord);
  }
}
