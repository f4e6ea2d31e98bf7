import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { MessageRole, Prisma } from './generated/prisma/client';
import { PgPoolService } from './pg-pool.service';
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
  /** The reliability score (0–100) after the last compaction or restore; null before any. */
  reliability: number | null;
  /** Share of the facts ledger that survived the last compaction; null before any. */
  contextConfidence: number | null;
  /** The largest `max_tokens` its requests sent lately (null: none seen); see sessionBudget. */
  requestMaxTokens: number | null;
  /** Tokens of the tool schemas its requests send. */
  toolSchemaTokens: number;
  /** Upstream-reported over estimated input tokens (1 before any report). */
  calibration: number;
  /** A compaction could not bring the context under its threshold: the next waits until the context reaches this many tokens. */
  compactionHoldTokens: number | null;
  /** Why compactions are held: 'llm-outage' (the summarizer was unreachable past the retry window), null otherwise. */
  compactionHoldReason: string | null;
  /** When the latest hold was set (null before any). */
  compactionHoldAt: Date | null;
  /** llm-outage holds in a row (0 again once a compaction succeeds): the time-based lift waits longer for each. */
  compactionHoldCount: number;
  createdAt: Date;
  updatedAt: Date;
  lastActivityAt: Date;
  /**
   * The row's version (PostgreSQL's `xmin`, which every update of the row changes) when it was
   * read with SESSION_COLUMNS: an append planned on this read writes only if the row still has it.
   * Absent on records read otherwise. Internal: never part of a response.
   */
  rowVersion?: string;
}

/** A session the retention job deleted. */
export interface ExpiredSession {
  id: string;
  externalId: string;
  lastActivityAt: Date;
  /** Messages it held (seqs run 1..lastSeq). */
  lastSeq: number;
}

/** One retention batch: the sessions deleted, and how many idle sessions the batch looked at (fewer than asked: none left). */
export interface ExpiryBatch {
  deleted: ExpiredSession[];
  candidates: number;
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

/** A search expected to match at most this many of a tenant's sessions collects them before ordering them (SessionRepository.list). */
export const SEARCH_COLLECT_MAX = 2000;

/** The term as literal text inside a LIKE pattern: `\\`, `%` and `_` escaped with LIKE's default escape character. */
export function escapeLikePattern(term: string): string {
  return term.replace(/[\\%_]/g, (c) => `\\${c}`);
}

export type SessionRow = Omit<SessionRecord, 'historyTokens'> & { historyTokens: bigint | number | string };

export function toSessionRecord(row: SessionRow): SessionRecord {
  return { ...row, historyTokens: Number(row.historyTokens) };
}

/** The sessions columns as SessionRecord fields, for plain-pg reads on the hot paths. */
export const SESSION_COLUMNS = `id, tenant_id AS "tenantId", external_id AS "externalId", model, context_window AS "contextWindow",
  output_reserve AS "outputReserve", policy, goal, head_version_id AS "headVersionId", last_seq AS "lastSeq",
  last_role::text AS "lastRole", open_tool_use_ids AS "openToolUseIds", history_tokens AS "historyTokens",
  context_tokens AS "contextTokens", system_tokens AS "systemTokens", utilization, compactions,
  reliability, context_confidence AS "contextConfidence", request_max_tokens AS "requestMaxTokens",
  tool_schema_tokens AS "toolSchemaTokens", calibration, compaction_hold_tokens AS "compactionHoldTokens",
  compaction_hold_reason AS "compactionHoldReason", compaction_hold_at AS "compactionHoldAt", compaction_hold_count AS "compactionHoldCount",
  created_at AS "createdAt", updated_at AS "updatedAt", last_activity_at AS "lastActivityAt", xmin::text AS "rowVersion"`;

@Injectable()
export class SessionRepository {
  constructor(
    private readonly prisma: PrismaService,
    private readonly pg: PgPoolService,
  ) {}

  /** One indexed lookup on every session request: plain pg, 4× faster than Prisma's mapping here (docs/benchmarks.md). */
  /** Replaces the session's goal record (the goal API; seed 004). */
  async setGoal(sessionId: string, goal: Prisma.InputJsonValue): Promise<void> {
    await this.prisma.session.update({ where: { id: sessionId }, data: { goal } });
  }

  async find(tenantId: string, externalId: string): Promise<SessionRecord | null> {
    const { rows } = await this.pg.pool.query<SessionRow>(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE tenant_id = $1 AND external_id = $2`, [
      tenantId,
      externalId,
    ]);
    return rows[0] ? toSessionRecord(rows[0]) : null;
  }

  async findById(id: string): Promise<SessionRecord | null> {
    const { rows } = await this.pg.pool.query<SessionRow>(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = $1`, [id]);
    return rows[0] ? toSessionRecord(rows[0]) : null;
  }

  /** The external ids of the session's parent (null: not a fork) and of its forks, oldest first. */
  async lineage(id: string): Promise<{ forkedFrom: string | null; forks: string[] }> {
    const { rows } = await this.pg.pool.query<{ forkedFrom: string | null; forks: string[] }>(
      `SELECT (SELECT p.external_id FROM sessions s JOIN sessions p ON p.id = s.forked_from_id WHERE s.id = $1) AS "forkedFrom",
              COALESCE((SELECT array_agg(external_id ORDER BY created_at, external_id) FROM sessions WHERE forked_from_id = $1), '{}') AS forks`,
      [id],
    );
    return rows[0] ?? { forkedFrom: null, forks: [] };
  }

  /** Gives the session another external id; false when the tenant already has a session with that id. */
  async rename(id: string, externalId: string): Promise<boolean> {
    try {
      const { rowCount } = await this.pg.pool.query(`UPDATE sessions SET external_id = $2 WHERE id = $1`, [id, externalId]);
      return (rowCount ?? 0) > 0;
    } catch (error) {
      if ((error as { code?: string }).code === '23505') return false; // unique_violation
      throw error;
    }
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
    data: Partial<SessionConfig> & { contextTokens?: number; utilization?: number; compactionHoldTokens?: number | null; compactionHoldReason?: string | null },
  ): Promise<SessionRecord> {
    return toSessionRecord(await this.prisma.session.update({ where: { id }, data }));
  }

  /** The session of that id in the tenant of the active (unrevoked, unexpired) API key with that hash, in one query (the proxy reads it while it checks the key). */
  async findForKey(keyHash: string, externalId: string): Promise<SessionRecord | null> {
    const { rows } = await this.pg.pool.query<SessionRow>(
      `SELECT ${SESSION_COLUMNS} FROM sessions
       WHERE external_id = $2 AND tenant_id = (SELECT tenant_id FROM api_keys WHERE hash = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()) LIMIT 1)`,
      [keyHash, externalId],
    );
    return rows[0] ? toSessionRecord(rows[0]) : null;
  }

  /**
   * A session and its forks (`<externalId>:fork-<n>`, see the proxy), most recently active first.
   * Read only when a proxied conversation no longer matches its session: the tenant's index
   * entries are scanned, which a rare divergence can afford.
   */
  async findFamily(tenantId: string, externalId: string, limit = 20): Promise<SessionRecord[]> {
    const pattern = `${externalId.replace(/[\\%_]/g, (c) => `\\${c}`)}:fork-%`;
    const { rows } = await this.pg.pool.query<SessionRow>(
      `SELECT ${SESSION_COLUMNS} FROM sessions WHERE tenant_id = $1 AND (external_id = $2 OR external_id LIKE $3)
       ORDER BY last_activity_at DESC, id DESC LIMIT $4`,
      [tenantId, externalId, pattern, limit],
    );
    return rows.map(toSessionRecord);
  }

  /**
   * Remembers what the session's requests bring to the budget (SPEC.md "Budget"), so the worker compacts to the
   * budget the next request will have. Written only when a value changed; returns whether it did.
   */
  async recordRequestLimits(id: string, limits: { maxTokens?: number | null; toolSchemaTokens?: number }): Promise<boolean> {
    const { rowCount } = await this.pg.pool.query(
      `UPDATE sessions SET request_max_tokens = COALESCE($2, request_max_tokens), tool_schema_tokens = COALESCE($3, tool_schema_tokens),
              compaction_hold_tokens = NULL, compaction_hold_reason = NULL
       WHERE id = $1 AND (($2::int IS NOT NULL AND request_max_tokens IS DISTINCT FROM $2) OR ($3::int IS NOT NULL AND tool_schema_tokens <> $3))`,
      [id, limits.maxTokens ?? null, limits.toolSchemaTokens ?? null],
    );
    return (rowCount ?? 0) > 0;
  }

  /** Stores the proxy's calibration (upstream-reported over estimated input tokens). */
  async recalibrate(id: string, calibration: number): Promise<void> {
    await this.pg.pool.query(`UPDATE sessions SET calibration = $2 WHERE id = $1`, [id, calibration]);
  }

  /**
   * Holds automatic compactions until the context reaches `tokens` (null: no hold, and the run of llm-outage holds
   * ends: a compaction succeeded). `reason` 'llm-outage' counts one more hold in a row; another reason restarts it.
   */
  async holdCompactions(id: string, tokens: number | null, reason: 'llm-outage' | null = null): Promise<void> {
    if (tokens === null) {
      await this.pg.pool.query(`UPDATE sessions SET compaction_hold_tokens = NULL, compaction_hold_reason = NULL, compaction_hold_count = 0 WHERE id = $1`, [id]);
      return;
    }
    await this.pg.pool.query(
      `UPDATE sessions SET compaction_hold_tokens = $2, compaction_hold_reason = $3, compaction_hold_at = now(),
              compaction_hold_count = CASE WHEN $3::text = 'llm-outage' THEN compaction_hold_count + 1 ELSE 0 END
       WHERE id = $1`,
      [id, tokens, reason],
    );
  }

  /** Sessions whose automatic compactions an LLM outage holds, oldest hold first. */
  async llmOutageHolds(limit: number): Promise<Array<{ id: string; tenantId: string; policy: unknown; holdAt: Date; holdCount: number }>> {
    const { rows } = await this.pg.pool.query(
      `SELECT id, tenant_id AS "tenantId", policy, compaction_hold_at AS "holdAt", compaction_hold_count AS "holdCount"
       FROM sessions WHERE compaction_hold_reason = 'llm-outage' AND compaction_hold_tokens IS NOT NULL
       ORDER BY compaction_hold_at LIMIT $1`,
      [limit],
    );
    return rows;
  }

  /**
   * Lifts the llm-outage hold set at `holdAt` (compare-and-swap: true for one caller only, false when it was lifted
   * or replaced meanwhile). The count stays, so the next hold in a row waits longer.
   */
  async liftLlmOutageHold(id: string, holdAt: Date): Promise<boolean> {
    const { rowCount } = await this.pg.pool.query(
      `UPDATE sessions SET compaction_hold_tokens = NULL, compaction_hold_reason = NULL
       WHERE id = $1 AND compaction_hold_reason = 'llm-outage' AND compaction_hold_at = $2`,
      [id, holdAt],
    );
    return (rowCount ?? 0) > 0;
  }

  /** Records that `id` was forked from `parentId` (the proxy's fork on a diverged history). */
  async markForked(id: string, parentId: string): Promise<void> {
    await this.pg.pool.query(`UPDATE sessions SET forked_from_id = $2 WHERE id = $1`, [id, parentId]);
  }

  /** Deletes the session and everything it owns (messages, versions, checkpoints, artifacts, …) by cascade. */
  async delete(tenantId: string, externalId: string): Promise<boolean> {
    const { count } = await this.prisma.session.deleteMany({ where: { tenantId, externalId } });
    return count > 0;
  }

  /**
   * Deletes up to `limit` of the tenant's sessions idle since before `idleBefore` (the retention
   * job), each with everything it owns by cascade as DELETE /v1/sessions/:id does, and writes one
   * `session.expired` audit entry per session in the same transaction. Never a session with a
   * compaction running: its queued and running job rows are locked first, so a job that starts
   * meanwhile waits for this transaction and then finds its row gone (a skip), and a session whose
   * job started before the lock is kept for a later run. Sessions an append holds are skipped.
   */
  async deleteIdle(tenantId: string, idleBefore: Date, limit: number, audit: { retentionDays: number }): Promise<ExpiryBatch> {
    const client = await this.pg.pool.connect();
    try {
      await client.query('BEGIN');
      const { rows: candidates } = await client.query<ExpiredSession>(
        `SELECT s.id, s.external_id AS "externalId", s.last_activity_at AS "lastActivityAt", s.last_seq AS "lastSeq"
         FROM sessions s
         WHERE s.tenant_id = $1 AND s.last_activity_at < $2
           AND NOT EXISTS (SELECT 1 FROM compaction_jobs j WHERE j.session_id = s.id AND j.status = 'running')
         ORDER BY s.last_activity_at LIMIT $3
         FOR UPDATE OF s SKIP LOCKED`,
        [tenantId, idleBefore, limit],
      );
      if (candidates.length === 0) {
        await client.query('COMMIT');
        return { deleted: [], candidates: 0 };
      }
      const { rows: unfinished } = await client.query<{ sessionId: string; status: string }>(
        `SELECT session_id AS "sessionId", status::text AS status FROM compaction_jobs
         WHERE session_id = ANY($1::uuid[]) AND status IN ('queued', 'running') FOR UPDATE`,
        [candidates.map((c) => c.id)],
      );
      const busy = new Set(unfinished.filter((j) => j.status === 'running').map((j) => j.sessionId));
      const deleted = candidates.filter((c) => !busy.has(c.id));
      if (deleted.length > 0) {
        await client.query(`DELETE FROM sessions WHERE id = ANY($1::uuid[])`, [deleted.map((c) => c.id)]);
        await client.query(
          `INSERT INTO audit_entries (tenant_id, key_id, action, target_type, target_id, data)
           SELECT $1, NULL, 'session.expired', 'session', e.target, e.data FROM unnest($2::text[], $3::jsonb[]) AS e(target, data)`,
          [
            tenantId,
            deleted.map((c) => c.externalId),
            deleted.map((c) => JSON.stringify({ messages: c.lastSeq, lastActivityAt: c.lastActivityAt.toISOString(), retentionDays: audit.retentionDays })),
          ],
        );
      }
      await client.query('COMMIT');
      return { deleted, candidates: candidates.length };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /**
   * One page, newest activity first, on the (tenant_id, last_activity_at) index; a search that matches few of the
   * tenant's sessions collects them through the trigram index first (searchMatchesFew).
   */
  async list(filter: SessionListFilter): Promise<SessionRecord[]> {
    if (filter.search && (await this.searchMatchesFew(filter.tenantId, filter.search))) return this.listFromSearchMatches(filter);
    const where: Prisma.SessionWhereInput = { tenantId: filter.tenantId };
    if (filter.model) where.model = filter.model;
    // `external_id ILIKE '%term%'` (Prisma's insensitive contains), which the trigram index serves. Prisma passes the term
    // into the pattern as it is, so its wildcards are escaped here: a search for `a_b` matches that text, not `axb`.
    if (filter.search) where.externalId = { contains: escapeLikePattern(filter.search), mode: 'insensitive' };
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

  /**
   * Whether PostgreSQL expects at most SEARCH_COLLECT_MAX of the tenant's sessions to match `search` (from a plan-only
   * EXPLAIN, ~0.3 ms; its row estimate was within 15% in the analytics bench). For such a term its own plan walks the
   * activity index and runs ILIKE on every row until a page is full, about limit × sessions / matches rows (685 matches
   * in 100,000 sessions: ~10,000 rows, 15-30 ms), while collecting the matches through the trigram index and sorting
   * them takes ~1.5 ms; its costs favour the walk there. A term shorter than a trigram cannot use the index.
   */
  private async searchMatchesFew(tenantId: string, search: string): Promise<boolean> {
    if (search.length < 3) return false;
    const { rows } = await this.pg.pool.query<{ 'QUERY PLAN': { Plan: { 'Plan Rows': number } }[] }>(
      'EXPLAIN (FORMAT JSON) SELECT 1 FROM sessions WHERE tenant_id = $1 AND external_id ILIKE $2',
      [tenantId, `%${escapeLikePattern(search)}%`],
    );
    return rows[0]['QUERY PLAN'][0].Plan['Plan Rows'] <= SEARCH_COLLECT_MAX;
  }

  /** list() for a search that matches few sessions: every match first (a bitmap scan of the trigram index), then the other filters, the order and the page. */
  private async listFromSearchMatches(filter: SessionListFilter): Promise<SessionRecord[]> {
    const params: unknown[] = [filter.tenantId, `%${escapeLikePattern(filter.search ?? '')}%`];
    const param = (value: unknown) => `$${params.push(value)}`;
    const where: string[] = [];
    if (filter.model) where.push(`model = ${param(filter.model)}`);
    if (filter.activeAfter) where.push(`"lastActivityAt" >= ${param(filter.activeAfter)}`);
    if (filter.activeBefore) where.push(`"lastActivityAt" <= ${param(filter.activeBefore)}`);
    if (filter.minUtilization !== undefined) where.push(`utilization >= ${param(filter.minUtilization)}`);
    if (filter.maxUtilization !== undefined) where.push(`utilization <= ${param(filter.maxUtilization)}`);
    if (filter.after) {
      const at = param(filter.after.lastActivityAt);
      where.push(`("lastActivityAt" < ${at} OR ("lastActivityAt" = ${at} AND id < ${param(filter.after.id)}::uuid))`);
    }
    const { rows } = await this.pg.pool.query<SessionRow>(
      `WITH matched AS MATERIALIZED (SELECT ${SESSION_COLUMNS} FROM sessions WHERE tenant_id = $1 AND external_id ILIKE $2)
       SELECT * FROM matched ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
       ORDER BY "lastActivityAt" DESC, id DESC
       LIMIT ${param(filter.limit)}`,
      params,
    );
    return rows.map(toSessionRecord);
  }
}
