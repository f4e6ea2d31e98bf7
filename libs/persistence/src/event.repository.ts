import { Injectable } from '@nestjs/common';
import { Prisma } from './generated/prisma/client';
import { PrismaService } from './prisma.service';

/** One event of a session (SPEC.md "Event"): ids come from Postgres and only grow, so SSE clients resume by id. */
export interface EventRecord {
  id: bigint;
  sessionId: string;
  type: string;
  /** The human line, in the style of seed 000's SESSION_LOG. */
  line: string;
  data: unknown;
  createdAt: Date;
}

export interface NewEvent {
  type: string;
  line: string;
  data?: Prisma.InputJsonValue;
}

export interface EventPageQuery {
  tenantId: string;
  sessionId: string;
  /** Only events with id > after. */
  after?: bigint;
  /** Only events with id < before. */
  before?: bigint;
  limit: number;
  types?: string[];
  order?: 'asc' | 'desc';
}

type Sql = Pick<PrismaService, '$queryRaw'> | Prisma.TransactionClient;

/**
 * Inserts a session's events in one statement and returns them with their ids, or [] when the
 * session is gone (or is not the tenant's).
 *
 * The statement first locks the session row (FOR NO KEY UPDATE), so a session's event ids are
 * handed out in commit order: a reader that saw id n can never later find a committed id < n,
 * which is what lets SSE clients resume with "id > Last-Event-ID" and miss nothing. Every other
 * writer of events must hold that row lock too before it inserts (a transaction that updated the
 * session row, or selected it FOR UPDATE, already does: the append and commit transactions).
 */
export async function insertSessionEvents(sql: Sql, sessionId: string, tenantId: string, events: NewEvent[]): Promise<EventRecord[]> {
  if (events.length === 0) return [];
  const rows = JSON.stringify(events.map((e) => ({ type: e.type, line: e.line, data: e.data ?? {} })));
  return sql.$queryRaw<EventRecord[]>`
    WITH s AS (SELECT id FROM sessions WHERE id = ${sessionId}::uuid AND tenant_id = ${tenantId}::uuid FOR NO KEY UPDATE)
    INSERT INTO events (session_id, tenant_id, type, line, data)
    SELECT s.id, ${tenantId}::uuid, e.value->>'type', e.value->>'line', e.value->'data'
    FROM s, jsonb_array_elements(${rows}::jsonb) WITH ORDINALITY AS e(value, n)
    ORDER BY e.n
    RETURNING id, session_id AS "sessionId", type, line, data, created_at AS "createdAt"`;
}

const SELECT = { id: true, sessionId: true, type: true, line: true, data: true, createdAt: true } as const;

/**
 * A session's events: written by the API and the workers, read by GET events (JSON pages and
 * SSE catch-up), all on the (session_id, id) index. Callers publish a wake-up on the event bus
 * after a write returns (the write is committed by then), never before.
 */
@Injectable()
export class EventRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** Records one event; null when the session no longer exists. */
  async record(sessionId: string, tenantId: string, type: string, line: string, data: Prisma.InputJsonValue = {}): Promise<EventRecord | null> {
    const [row] = await insertSessionEvents(this.prisma, sessionId, tenantId, [{ type, line, data }]);
    return row ?? null;
  }

  /** Records several events in one statement, in order; [] when the session no longer exists. */
  recordMany(sessionId: string, tenantId: string, events: NewEvent[]): Promise<EventRecord[]> {
    return insertSessionEvents(this.prisma, sessionId, tenantId, events);
  }

  /** One page of the tenant's session's events, by id (keyset pagination). */
  page(query: EventPageQuery): Promise<EventRecord[]> {
    const id: Prisma.BigIntFilter<'Event'> = {};
    if (query.after !== undefined) id.gt = query.after;
    if (query.before !== undefined) id.lt = query.before;
    return this.prisma.event.findMany({
      where: {
        sessionId: query.sessionId,
        tenantId: query.tenantId,
        ...(Object.keys(id).length > 0 ? { id } : {}),
        ...(query.types?.length ? { type: { in: query.types } } : {}),
      },
      orderBy: { id: query.order ?? 'asc' },
      take: query.limit,
      select: SELECT,
    });
  }

  /** Events with id > lastId in id order: an SSE stream's catch-up, and its reads after each wake-up. */
  after(sessionId: string, lastId: bigint, limit: number, types?: string[]): Promise<EventRecord[]> {
    return this.prisma.event.findMany({
      where: { sessionId, id: { gt: lastId }, ...(types?.length ? { type: { in: types } } : {}) },
      orderBy: { id: 'asc' },
      take: limit,
      select: SELECT,
    });
  }
}
