import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { PoolClient } from 'pg';
import { MessageRole, Prisma } from './generated/prisma/client';
import { largeJsonExpression, LargeStrings, largeStringsOf, largeStringTokens, skeletonJson } from './large-json';
import { PgPoolService } from './pg-pool.service';
import { SESSION_COLUMNS, SessionConfig, SessionRecord, SessionRow, toSessionRecord } from './session.repository';

export interface NewMessageRow {
  role: MessageRole;
  blocks: Prisma.InputJsonValue;
  /** Message-level canonical fields besides the blocks (origin, content form, extras); undefined when none. */
  meta?: Prisma.InputJsonValue;
  raw: Prisma.InputJsonValue;
  format: string;
  pinned: boolean;
  tags: string[];
  tokens: number;
  toolUseIds: string[];
}

/** What the caller decided, given the locked session: the rows to write and the session's new state. */
export interface AppendPlan {
  rows: NewMessageRow[];
  lastRole: MessageRole | null;
  openToolUseIds: string[];
  contextTokens: number;
  systemTokens: number;
  utilization: number;
  budget: number;
  threshold: number;
  /** What the append says its requests bring to the budget (a REST append's `maxTokens` and `tools`), remembered on the session. */
  requestLimits?: { maxTokens?: number; toolSchemaTokens?: number };
  /** The session's goal record, when goal markers in the new messages changed it (seed 004). */
  goal?: Prisma.InputJsonValue;
  /** Seed 004's automatic snapshot: this append crossed the policy's snapshot threshold. */
  snapshot?: { metadata: Prisma.InputJsonValue; line: string };
  /** The response to store with the idempotency key; built from the seqs assigned (known before the write: the session's next seqs). */
  respond(firstSeq: number, lastSeq: number): Prisma.InputJsonValue;
}

export interface AppendRequest {
  tenantId: string;
  externalId: string;
  /** Used only when the append creates the session. */
  create: SessionConfig;
  idempotency?: { key: string; requestHash: string };
  /**
   * The session as the caller read it just before, with its row version: the append is planned
   * on it and written only if the row is unchanged since (see AppendRepository.append).
   */
  observed?: SessionRecord | null;
  /**
   * `observed` was remembered from an earlier request, not read for this one: when the row changed
   * since (the guard wrote nothing, or the plan refused on it), the outcome is `stale` and nothing is
   * written, so the caller reads the session again and decides everything anew (it may be a new
   * session by now). Without it, the locked path plans again on the current row.
   */
  observedRemembered?: boolean;
  /**
   * Runs inside the transaction with the session row locked, so concurrent appends to one
   * session are serialized and seqs stay gap-free. Throwing rolls everything back, the
   * session's creation included: nothing of a rejected request is stored.
   */
  plan(session: SessionRecord, created: boolean, knownToolUseIds: (ids: string[]) => Promise<string[]>): Promise<AppendPlan>;
}

export type AppendOutcome =
  | { kind: 'appended'; session: SessionRecord; created: boolean; firstSeq: number; lastSeq: number; response: unknown }
  | { kind: 'replayed'; response: unknown }
  | { kind: 'key-reused' }
  /** Only with `observedRemembered`: the session changed since it was remembered; nothing was written. */
  | { kind: 'stale' };

/** Parameters of a message in the append statement (session id and time are the statement's own $1 and $8). */
const MESSAGE_COLUMNS = 10;
/** The append statement's parameters before the messages'. */
const SESSION_PARAMS = 13;
/** Postgres allows 65,535 parameters per statement; 13 + 500 messages × 10 stay far below. */

/**
 * Batches up to this many messages use a named (prepared) statement: the common single-message append is parsed and planned once per connection.
 * Off with DATABASE_PREPARED_STATEMENTS=false (PgBouncer before 1.21 in transaction mode: a name prepared on one server connection is unknown on the next).
 */
const PREPARED_MAX_ROWS = 4;

/**
 * A message's json columns as parameter texts. A string of 1 MB or more (a large tool result) is sent once, as
 * text, however often the columns hold it (`blocks` and `raw` both do): each column's text holds a placeholder
 * in its place, and PostgreSQL writes `to_json` of the string there (the same text as JSON.stringify for the
 * well-formed strings the API accepts; large-json.int-spec compares every code point). For a 30 MB result the API
 * builds 30 MB of statement instead of two 30 MB JSON texts and a 60 MB statement (docs/reliability.md).
 */
function rowJson(row: NewMessageRow): { blocks: string; meta: string | null; raw: string; large?: LargeStrings } {
  const plain = () => ({ blocks: JSON.stringify(row.blocks), meta: row.meta === undefined ? null : JSON.stringify(row.meta), raw: JSON.stringify(row.raw) });
  const large = largeStringTokens(largeStringsOf([row.blocks, row.meta, row.raw]));
  if (!large) return plain();
  const blocks = skeletonJson(row.blocks, large);
  const meta = row.meta === undefined ? null : skeletonJson(row.meta, large);
  const raw = skeletonJson(row.raw, large);
  if (blocks === undefined || meta === undefined || raw === undefined) return plain();
  return { blocks, meta, raw, large };
}

/**
 * The write of an append as one statement: the batch's multi-row INSERT, the usage point, the
 * session's new state, and the goal record and threshold snapshot when the plan has them. With
 * `rowVersion`, it writes only if the session row is still the version the plan was made from
 * (its `xmin`, which every update of the row changes): otherwise it writes nothing and returns no row.
 */
function appendStatement(
  tenantId: string,
  session: SessionRecord,
  plan: AppendPlan,
  now: Date,
  named: boolean,
  rowVersion?: string,
  idempotency?: { key: string; requestHash: string; response: Prisma.InputJsonValue },
): { name?: string; text: string; values: unknown[] } {
  const lastSeq = session.lastSeq + plan.rows.length;
  const addedTokens = plan.rows.reduce((sum, r) => sum + r.tokens, 0);
  const params: unknown[] = [
    session.id,
    lastSeq,
    plan.lastRole,
    plan.openToolUseIds,
    addedTokens,
    plan.contextTokens,
    plan.systemTokens,
    now,
    plan.budget,
    plan.threshold,
    plan.utilization,
    plan.requestLimits?.maxTokens ?? null,
    plan.requestLimits?.toolSchemaTokens ?? null,
  ];
  const values: string[] = [];
  let largeParams = 0;
  plan.rows.forEach((row, i) => {
    const p = params.length;
    const json = rowJson(row);
    // A large string's parameters follow the row's own: its placeholder and its text.
    const pairs = (json.large?.tokens ?? []).map((_, k): [string, string] => [`$${p + MESSAGE_COLUMNS + 2 * k + 1}`, `$${p + MESSAGE_COLUMNS + 2 * k + 2}`]);
    const column = (n: number) => (pairs.length > 0 ? largeJsonExpression(`$${p + n}`, pairs) : `$${p + n}::json`);
    values.push(
      `($1::uuid, $${p + 1}::int, $${p + 2}::"MessageRole", ${column(3)}, ${column(4)}, ${column(5)}, $${p + 6}::text, $${p + 7}::boolean, $${p + 8}::text[], $${p + 9}::int, $${p + 10}::text[], $8::timestamptz)`,
    );
    params.push(session.lastSeq + 1 + i, row.role, json.blocks, json.meta, json.raw, row.format, row.pinned, row.tags, row.tokens, row.toolUseIds);
    json.large?.tokens.forEach((token, k) => params.push(token, json.large!.strings[k]));
    largeParams += 2 * (json.large?.tokens.length ?? 0);
  });
  if (params.length !== SESSION_PARAMS + plan.rows.length * MESSAGE_COLUMNS + largeParams) throw new Error('message column count mismatch');
  const param = (value: unknown) => `$${params.push(value)}`;
  const guard = rowVersion === undefined ? '' : ` AND xmin = ${param(rowVersion)}::text::xid`;
  const goal = plan.goal === undefined ? '' : `, goal = ${param(JSON.stringify(plan.goal))}::jsonb`;
  const snapshot = plan.snapshot
    ? `, snap AS (
         INSERT INTO snapshots (id, session_id, version_id, kind, metadata, created_at)
         SELECT ${param(randomUUID())}::uuid, id, ${param(session.headVersionId)}::uuid, 'threshold', ${param(JSON.stringify(plan.snapshot.metadata))}::jsonb, $8 FROM updated
       ), snap_event AS (
         INSERT INTO events (session_id, tenant_id, type, line, data, created_at)
         SELECT id, ${param(tenantId)}, 'snapshot-created', ${param(plan.snapshot.line)}, ${param(JSON.stringify({ kind: 'threshold', lastSeq }))}::jsonb, $8 FROM updated
       )`
    : '';
  // The answer kept for the request's Idempotency-Key, in the same statement as what it answers for.
  const idempotent = idempotency
    ? `, idempotent AS (
         INSERT INTO idempotency_records (session_id, key, request_hash, status, response, created_at)
         SELECT id, ${param(idempotency.key)}, ${param(idempotency.requestHash)}, 201, ${param(JSON.stringify(idempotency.response))}::json, $8 FROM updated
       )`
    : '';
  // Every insert reads from `updated`: when the guard finds the row changed, nothing is written.
  const text = `WITH updated AS (
       UPDATE sessions SET last_seq = $2, last_role = $3::"MessageRole", open_tool_use_ids = $4::text[],
              history_tokens = history_tokens + $5, context_tokens = $6, system_tokens = $7, utilization = $11,
              request_max_tokens = COALESCE($12, request_max_tokens), tool_schema_tokens = COALESCE($13, tool_schema_tokens),
              last_activity_at = $8, updated_at = $8${goal}
       WHERE id = $1${guard}
       RETURNING ${SESSION_COLUMNS}
     ), inserted AS (
       INSERT INTO messages (session_id, seq, role, blocks, meta, raw, format, pinned, tags, tokens, tool_use_ids, created_at)
       SELECT m.* FROM (VALUES ${values.join(', ')}) AS m, updated
     ), usage AS (
       INSERT INTO usage_points (session_id, kind, seq, context_tokens, budget, threshold, created_at)
       SELECT id, 'append', $2, $6, $9, $10, $8 FROM updated
     )${snapshot}${idempotent}
     SELECT * FROM updated`;
  const name = named && largeParams === 0 && plan.rows.length <= PREPARED_MAX_ROWS ? `append-${plan.rows.length}${rowVersion === undefined ? '' : '-guarded'}${plan.goal === undefined ? '' : '-goal'}${plan.snapshot ? '-snapshot' : ''}${idempotency ? '-idempotent' : ''}` : undefined;
  return { name, text, values: params };
}

@Injectable()
export class AppendRepository {
  constructor(private readonly pg: PgPoolService) {}

  /**
   * An append to a session the caller has just read (`request.observed`, with its row version) is
   * planned on that read and written by one guarded statement, without a transaction or a lock:
   * two round trips in all with the read. When anything changed the row since the read (another
   * append, a compaction's commit, a settings change), the guard writes nothing and the append
   * runs as before: one transaction on plain pg that locks the row and plans again. With an
   * Idempotency-Key, the key's earlier answer is looked up first, and the new answer is stored by
   * the same statement as the messages it answers for. An append is
   * the hottest write, and Prisma's per-query overhead was most of a single-message append's
   * latency (docs/benchmarks.md).
   */
  async append(request: AppendRequest): Promise<AppendOutcome> {
    const observed = request.observed;
    if (observed?.rowVersion !== undefined) {
      const outcome = await this.appendIfUnchanged(request, observed, observed.rowVersion);
      if (outcome) return outcome;
      if (request.observedRemembered) return { kind: 'stale' };
    }
    const client = await this.pg.pool.connect();
    try {
      await client.query('BEGIN');
      const outcome = await this.inTransaction(client, request);
      await client.query('COMMIT');
      return outcome;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** The optimistic path: null when the session changed since it was read (or the plan refused what may be stale), for the locked path to decide. */
  private async appendIfUnchanged(request: AppendRequest, session: SessionRecord, rowVersion: string): Promise<AppendOutcome | null> {
    // A key answered before is answered the same way (or refused as reused) without planning anything.
    if (request.idempotency) {
      const previous = await this.previousAnswer(this.pg.pool, session.id, request.idempotency);
      if (previous) return previous;
    }
    const knownToolUseIds = (ids: string[]) => this.knownToolUseIds(this.pg.pool, session.id, ids);
    let plan: AppendPlan;
    try {
      plan = await request.plan(session, false, knownToolUseIds);
    } catch {
      // Refused on a read that may be stale: the locked path plans again on the current row and refuses for good, or not.
      return null;
    }
    const now = new Date();
    const firstSeq = session.lastSeq + 1;
    const lastSeq = session.lastSeq + plan.rows.length;
    const response = plan.respond(firstSeq, lastSeq);
    // Another request with the same key that won the race changed the row too: the guard writes nothing, and the locked path replays its answer.
    const idempotency = request.idempotency ? { ...request.idempotency, response } : undefined;
    const { rows } = await this.pg.pool.query<SessionRow>(appendStatement(request.tenantId, session, plan, now, this.pg.preparedStatements, rowVersion, idempotency));
    if (rows.length === 0) return null;
    return { kind: 'appended', session: toSessionRecord(rows[0]), created: false, firstSeq, lastSeq, response };
  }

  /** The stored answer to an Idempotency-Key: replayed when the request is the same, refused when the key was used for another. */
  private async previousAnswer(db: Pick<PoolClient, 'query'>, sessionId: string, idempotency: { key: string; requestHash: string }): Promise<AppendOutcome | null> {
    const { rows } = await db.query<{ requestHash: string; response: unknown }>(
      `SELECT request_hash AS "requestHash", response FROM idempotency_records WHERE session_id = $1 AND key = $2`,
      [sessionId, idempotency.key],
    );
    if (!rows[0]) return null;
    return rows[0].requestHash === idempotency.requestHash ? { kind: 'replayed', response: rows[0].response } : { kind: 'key-reused' };
  }

  private async knownToolUseIds(db: Pick<PoolClient, 'query'>, sessionId: string, ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const { rows } = await db.query<{ id: string }>(`SELECT DISTINCT unnest(tool_use_ids) AS id FROM messages WHERE session_id = $1 AND tool_use_ids && $2::text[]`, [
      sessionId,
      ids,
    ]);
    return rows.map((r) => r.id);
  }

  private async inTransaction(client: PoolClient, request: AppendRequest): Promise<AppendOutcome> {
    const { tenantId, externalId, create } = request;
    // Lock and read the session in one round trip: appends to one session are serialized here. A session
    // that does not exist yet is created first (a concurrent first append waits on the unique index, then locks it).
    const lock = () => client.query<SessionRow>(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE tenant_id = $1 AND external_id = $2 FOR UPDATE`, [tenantId, externalId]);
    let { rows: locked } = await lock();
    let created = false;
    if (locked.length === 0) {
      const inserted = await client.query(
        `INSERT INTO sessions (id, tenant_id, external_id, model, context_window, output_reserve, policy, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, now())
         ON CONFLICT (tenant_id, external_id) DO NOTHING`,
        [randomUUID(), tenantId, externalId, create.model, create.contextWindow, create.outputReserve, JSON.stringify(create.policy)],
      );
      created = inserted.rowCount === 1;
      ({ rows: locked } = await lock());
    }
    const session = toSessionRecord(locked[0]);

    if (request.idempotency) {
      const previous = await this.previousAnswer(client, session.id, request.idempotency);
      if (previous) return previous;
    }

    const plan = await request.plan(session, created, (ids) => this.knownToolUseIds(client, session.id, ids));
    const now = new Date();
    const firstSeq = session.lastSeq + 1;
    const response = plan.respond(firstSeq, session.lastSeq + plan.rows.length);
    const idempotency = request.idempotency ? { ...request.idempotency, response } : undefined;
    const { rows: updatedRows } = await client.query<SessionRow>(appendStatement(tenantId, session, plan, now, this.pg.preparedStatements, undefined, idempotency));
    const updated = toSessionRecord(updatedRows[0]);
    return { kind: 'appended', session: updated, created, firstSeq, lastSeq: updated.lastSeq, response };
  }
}
