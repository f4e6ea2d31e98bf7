import { Injectable } from '@nestjs/common';
import { reliabilityOf, sessionBudget } from '@compactor/compaction';
import { SessionExists, SessionNotFound } from '../errors/http-errors';
import { EventPublisher } from '@compactor/jobs';
import { EventRepository, SessionRecord, SessionRepository } from '@compactor/persistence';
import { resolveModel } from '@compactor/tokens';
import { policyJson, ResolvedSessionConfig, sessionPolicy, sessionUsage } from './session-config';
import { ReliabilityView, SessionDetail, SessionPage, SessionView } from './sessions.dto';

export function toSessionView(session: SessionRecord): SessionView {
  return {
    id: session.externalId,
    model: session.model,
    contextWindow: session.contextWindow,
    outputReserve: session.outputReserve,
    policy: sessionPolicy(session),
    tokenCounting: resolveModel(session.model).spec.accuracy,
    messageCount: session.lastSeq,
    historyTokens: session.historyTokens,
    usage: sessionUsage(session, session.contextTokens, session.systemTokens),
    compactions: session.compactions,
    reliability: reliabilityView(session),
    createdAt: session.createdAt.toISOString(),
    updatedAt: session.updatedAt.toISOString(),
    lastActivityAt: session.lastActivityAt.toISOString(),
  };
}

/** Seed 004's reliability score from the session's model, compactions in force and the last measured context confidence. */
export function reliabilityView(session: SessionRecord): ReliabilityView {
  const r = reliabilityOf({ model: resolveModel(session.model).spec, compactions: session.compactions, contextConfidence: session.contextConfidence ?? 1 });
  return { score: r.score, level: r.level, emoji: r.emoji, label: r.label, warning: r.warning, factors: r.factors };
}

export interface ListQuery {
  model?: string;
  search?: string;
  activeAfter?: Date;
  activeBefore?: Date;
  minUtilization?: number;
  maxUtilization?: number;
  cursor?: string;
  limit: number;
}

function encodeCursor(session: SessionRecord): string {
  return Buffer.from(`${session.lastActivityAt.toISOString()}|${session.id}`).toString('base64url');
}

export function decodeCursor(cursor: string): { lastActivityAt: Date; id: string } | undefined {
  const [at, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const date = new Date(at ?? '');
  if (!id || !/^[0-9a-f-]{36}$/.test(id) || Number.isNaN(date.getTime())) return undefined;
  return { lastActivityAt: date, id };
}

@Injectable()
export class SessionsService {
  constructor(
    private readonly sessions: SessionRepository,
    private readonly events: EventRepository,
    private readonly publisher: EventPublisher,
  ) {}

  /** The tenant's session, or 404 — the same answer whether it is missing or another tenant's. */
  async require(tenantId: string, externalId: string): Promise<SessionRecord> {
    const session = await this.sessions.find(tenantId, externalId);
    if (!session) throw new SessionNotFound(externalId);
    return session;
  }

  /** The session with the fork links around it (GET /v1/sessions/:id). */
  async detail(tenantId: string, externalId: string): Promise<SessionDetail> {
    const session = await this.require(tenantId, externalId);
    const budget = sessionBudget(session);
    return {
      ...toSessionView(session),
      budget: {
        window: budget.window,
        reserve: budget.reserve,
        requestMaxTokens: session.requestMaxTokens,
        toolSchemaTokens: budget.toolSchemaTokens,
        safetyMargin: budget.safetyMargin,
        calibration: session.calibration,
        calibrationTokens: budget.calibrationTokens,
        budget: budget.budget,
        compactionHoldTokens: session.compactionHoldTokens,
      },
      compactionHold:
        session.compactionHoldTokens === null
          ? null
          : {
              reason: session.compactionHoldReason === 'llm-outage' ? 'llm-outage' : 'context-still-over-trigger',
              since: session.compactionHoldAt?.toISOString() ?? null,
              untilTokens: session.compactionHoldTokens,
              consecutive: session.compactionHoldReason === 'llm-outage' ? session.compactionHoldCount : 0,
            },
      ...(await this.sessions.lineage(session.id)),
    };
  }

  async create(tenantId: string, externalId: string, config: ResolvedSessionConfig): Promise<SessionRecord> {
    const { warnings: _warnings, policy, ...rest } = config;
    const created = await this.sessions.create(tenantId, externalId, { ...rest, policy: policyJson(policy) });
    if (!created) throw new SessionExists(externalId);
    // A model the catalog cannot resolve gets the default window and an estimate: the operator sees why on the session too.
    if (!resolveModel(config.model).known) {
      const event = await this.events.record(created.id, tenantId, 'model-unknown', config.warnings.join('; '), { model: config.model, contextWindow: config.contextWindow });
      if (event) this.publisher.notify(created.id, event.id);
    }
    return created;
  }

  async list(tenantId: string, query: ListQuery, after?: { lastActivityAt: Date; id: string }): Promise<SessionPage> {
    const rows = await this.sessions.list({ tenantId, ...query, after, limit: query.limit + 1 });
    const page = rows.slice(0, query.limit);
    return {
      sessions: page.map(toSessionView),
      nextCursor: rows.length > query.limit ? encodeCursor(page[page.length - 1]) : null,
    };
  }

  async delete(tenantId: string, externalId: string): Promise<void> {
    if (!(await this.sessions.delete(tenantId, externalId))) throw new SessionNotFound(externalId);
  }
}
