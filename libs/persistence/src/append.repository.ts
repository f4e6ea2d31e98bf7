import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { MessageRole, Prisma } from './generated/prisma/client';
import { PrismaService } from './prisma.service';
import { SessionConfig, SessionRecord, toSessionRecord } from './session.repository';

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
  /** The response to store with the idempotency key; built from the seqs assigned. */
  respond(firstSeq: number, lastSeq: number, session: SessionRecord): Prisma.InputJsonValue;
}

export interface AppendRequest {
  tenantId: string;
  externalId: string;
  /** Used only when the append creates the session. */
  create: SessionConfig;
  idempotency?: { key: string; requestHash: string };
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
  | { kind: 'key-reused' };

@Injectable()
export class AppendRepository {
  constructor(private readonly prisma: PrismaService) {}

  append(request: AppendRequest): Promise<AppendOutcome> {
    return this.prisma.$transaction(
      async (tx) => {
        const { tenantId, externalId, create } = request;
        const inserted = await tx.$executeRaw`
          INSERT INTO sessions (id, tenant_id, external_id, model, context_window, output_reserve, policy, updated_at)
          VALUES (${randomUUID()}::uuid, ${tenantId}::uuid, ${externalId}, ${create.model}, ${create.contextWindow},
                  ${create.outputReserve}, ${JSON.stringify(create.policy)}::jsonb, now())
          ON CONFLICT (tenant_id, external_id) DO NOTHING`;
        const [locked] = await tx.$queryRaw<{ id: string }[]>`
          SELECT id FROM sessions WHERE tenant_id = ${tenantId}::uuid AND external_id = ${externalId} FOR UPDATE`;
        const session = toSessionRecord(await tx.session.findUniqueOrThrow({ where: { id: locked.id } }));

        if (request.idempotency) {
          const previous = await tx.idempotencyRecord.findUnique({
            where: { sessionId_key: { sessionId: session.id, key: request.idempotency.key } },
          });
          if (previous) {
            return previous.requestHash === request.idempotency.requestHash
              ? { kind: 'replayed', response: previous.response }
              : { kind: 'key-reused' };
          }
        }

        const knownToolUseIds = async (ids: string[]) => {
          if (ids.length === 0) return [];
          const rows = await tx.$queryRaw<{ id: string }[]>`
            SELECT DISTINCT unnest(tool_use_ids) AS id FROM messages
            WHERE session_id = ${session.id}::uuid AND tool_use_ids && ${ids}::text[]`;
          return rows.map((r) => r.id);
        };
        const plan = await request.plan(session, inserted === 1, knownToolUseIds);

        const firstSeq = session.lastSeq + 1;
        const lastSeq = session.lastSeq + plan.rows.length;
        const now = new Date();
        // One multi-row INSERT for the whole batch.
        await tx.message.createMany({
          data: plan.rows.map((row, i) => ({ ...row, sessionId: session.id, seq: firstSeq + i, createdAt: now })),
        });
        const addedTokens = plan.rows.reduce((sum, r) => sum + r.tokens, 0);
        const updated = toSessionRecord(
          await tx.session.update({
            where: { id: session.id },
            data: {
              lastSeq,
              lastRole: plan.lastRole,
              openToolUseIds: plan.openToolUseIds,
              historyTokens: { increment: addedTokens },
              contextTokens: plan.contextTokens,
              systemTokens: plan.systemTokens,
              utilization: plan.utilization,
              lastActivityAt: now,
            },
          }),
        );
        await tx.usagePoint.create({
          data: {
            sessionId: session.id,
            kind: 'append',
            seq: lastSeq,
            contextTokens: plan.contextTokens,
            budget: plan.budget,
            threshold: plan.threshold,
            createdAt: now,
          },
        });
        const response = plan.respond(firstSeq, lastSeq, updated);
        if (request.idempotency) {
          await tx.idempotencyRecord.create({
            data: { sessionId: session.id, key: request.idempotency.key, requestHash: request.idempotency.requestHash, status: 201, response },
          });
        }
        return { kind: 'appended', session: updated, created: inserted === 1, firstSeq, lastSeq, response };
      },
      { timeout: 60_000, maxWait: 10_000 },
    );
  }
}
