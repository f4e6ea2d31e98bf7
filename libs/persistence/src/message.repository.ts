import { Injectable } from '@nestjs/common';
import { MessageRole } from './generated/prisma/client';
import { PgPoolService } from './pg-pool.service';
import { PrismaService } from './prisma.service';

export interface StoredMessage {
  seq: number;
  role: MessageRole;
  format: string;
  raw: unknown;
  blocks: unknown;
  pinned: boolean;
  tags: string[];
  tokens: number;
  createdAt: Date;
}

/** What a context read needs of each message: no raw copy, no timestamps. */
export interface ContextMessage {
  seq: number;
  role: MessageRole;
  blocks: unknown;
  meta: unknown;
  pinned: boolean;
  tags: string[];
  tokens: number;
}

@Injectable()
export class MessageRepository {
  constructor(
    private readonly prisma: PrismaService,
    private readonly pg: PgPoolService,
  ) {}

  /** Full history after `afterSeq`, in seq order (keyset pagination on the primary key). */
  page(sessionId: string, afterSeq: number, limit: number): Promise<StoredMessage[]> {
    return this.prisma.message.findMany({
      where: { sessionId, seq: { gt: afterSeq } },
      orderBy: { seq: 'asc' },
      take: limit,
      select: { seq: true, role: true, format: true, raw: true, blocks: true, pinned: true, tags: true, tokens: true, createdAt: true },
    });
  }

  /**
   * Messages with afterSeq < seq <= throughSeq as the context assembler needs them, in seq
   * order, on the primary key. Plain pg: on a 1,000-message context Prisma's result mapping
   * took longer than the query itself.
   */
  async forContext(sessionId: string, afterSeq = 0, throughSeq = 2_147_483_647, limit = 2_147_483_647): Promise<ContextMessage[]> {
    const { rows } = await this.pg.pool.query<ContextMessage>(
      `SELECT seq, role, blocks, meta, pinned, tags, tokens FROM messages
       WHERE session_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4`,
      [sessionId, afterSeq, throughSeq, limit],
    );
    return rows;
  }

  /** Which of `ids` are tool calls or results somewhere in the session's history (the same lookup an append runs). */
  async knownToolUseIds(sessionId: string, ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.pg.pool.query<{ id: string }>(
      `SELECT DISTINCT unnest(tool_use_ids) AS id FROM messages WHERE session_id = $1 AND tool_use_ids && $2::text[]`,
      [sessionId, ids],
    );
    return rows.map((r) => r.id);
  }

  /** The shape the session's latest message arrived in, if any. */
  async lastFormat(sessionId: string): Promise<string | undefined> {
    const last = await this.prisma.message.findFirst({ where: { sessionId }, orderBy: { seq: 'desc' }, select: { format: true } });
    return last?.format;
  }

  /** Sets new token counts (after a model change) in one statement. */
  async setTokens(sessionId: string, counts: { seq: number; tokens: number }[]): Promise<void> {
    if (counts.length === 0) return;
    const seqs = counts.map((c) => c.seq);
    const tokens = counts.map((c) => c.tokens);
    await this.prisma.$executeRaw`
      UPDATE messages AS m SET tokens = u.tokens
      FROM unnest(${seqs}::int[], ${tokens}::int[]) AS u(seq, tokens)
      WHERE m.session_id = ${sessionId}::uuid AND m.seq = u.seq`;
  }
}
