import { Injectable } from '@nestjs/common';
import { sessionBudget, DomainError, goalBlockMessage, GoalRecord, goalRecordFromJson, messageCounter, renderGoalBlock, thresholdTokens } from '@compactor/compaction';
import { ApiErrorCode } from '../errors/http-errors';
import { CompactionRepository, Prisma, prefixOf, SessionRepository } from '@compactor/persistence';
import { EventPublisher } from '@compactor/jobs';
import { resolveModel } from '@compactor/tokens';
import { sessionPolicy } from '../sessions/session-config';
import { SessionsService } from '../sessions/sessions.service';
import { GoalView } from './goal.dto';

const ATTEMPTS = 3;

/**
 * The goal record (seed 004): set with PUT, updated from goal markers on append, rendered as the
 * goal block. An explicit update writes a new context version with the new goal block (SPEC.md:
 * the goal block changes only at a compaction or an explicit goal update), so it is in the
 * context from the next read on, before any compaction too.
 */
@Injectable()
export class GoalService {
  constructor(
    private readonly sessions: SessionsService,
    private readonly sessionRows: SessionRepository,
    private readonly compactions: CompactionRepository,
    private readonly publisher: EventPublisher,
  ) {}

  async get(tenantId: string, externalId: string): Promise<GoalView> {
    const session = await this.sessions.require(tenantId, externalId);
    const head = await this.compactions.head(session.id, session.headVersionId);
    return { sessionId: externalId, ...goalRecordFromJson(session.goal), goalBlock: head?.goalBlock ? { ...head.goalBlock, version: head.number } : null };
  }

  async put(tenantId: string, externalId: string, record: GoalRecord): Promise<GoalView> {
    let session = await this.sessions.require(tenantId, externalId);
    await this.sessionRows.setGoal(session.id, record as unknown as Prisma.InputJsonValue);
    const text = renderGoalBlock(record).trim();
    const counter = messageCounter(resolveModel(session.model).spec);
    const goalBlock = text ? { text, tokens: counter.countMessage(goalBlockMessage(text)) } : undefined;
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      const head = await this.compactions.head(session.id, session.headVersionId);
      const prefix = prefixOf(head);
      if ((prefix.goalBlock?.text ?? '') === (goalBlock?.text ?? '')) return this.get(tenantId, externalId);
      const budget = sessionBudget(session);
      const versionId = await this.compactions.commit({
        sessionId: session.id,
        tenantId,
        cause: 'goal_update',
        baseVersionId: session.headVersionId,
        coversThroughSeq: prefix.coversThroughSeq,
        treatments: prefix.treatments,
        checkpoints: prefix.checkpoints,
        watermarkSeq: prefix.watermarkSeq,
        goalBlock,
        artifactIds: Object.values(prefix.treatments).flatMap((t) => (t.kind === 'offloaded' ? t.artifactIds : [])),
        prefixTokens: prefix.checkpoints.reduce((n, c) => n + c.tokens, 0) + (goalBlock?.tokens ?? 0),
        contextTokens: session.contextTokens - (prefix.goalBlock?.tokens ?? 0) + (goalBlock?.tokens ?? 0),
        loadedThroughSeq: session.lastSeq,
        budget: budget.budget,
        threshold: thresholdTokens(budget, sessionPolicy(session)),
        events: [
          {
            type: 'goal-updated',
            line: goalBlock ? `Goal updated${record.goal ? `: ${record.goal.slice(0, 120)}` : ''} (goal block ${goalBlock.tokens.toLocaleString('en-US')} tokens)` : 'Goal cleared',
          },
        ],
      });
      if (versionId) {
        this.publisher.notify(session.id);
        return this.get(tenantId, externalId);
      }
      session = await this.sessions.require(tenantId, externalId);
    }
    throw new DomainError(ApiErrorCode.Conflict, 'Compactions kept changing the context; send the request again');
  }
}
