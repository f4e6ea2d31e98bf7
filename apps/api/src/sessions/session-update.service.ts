import { Injectable } from '@nestjs/common';
import { assertBudgetAboveFloor, PolicyInput } from '@compactor/compaction';
import { MessageRepository, SessionRepository } from '@compactor/persistence';
import { resolveModel } from '@compactor/tokens';
import { MessageTokenCounter } from '../tokens/message-token-counter';
import { resolveSessionConfig, sessionUsage } from './session-config';
import { SessionWithWarnings } from './sessions.dto';
import { SessionsService, toSessionView } from './sessions.service';
import { canonicalOf } from '@compactor/persistence';

const RECOUNT_PAGE = 500;

export interface SessionUpdate {
  model?: string;
  contextWindow?: number;
  outputReserve?: number;
  policy?: PolicyInput;
}

@Injectable()
export class SessionUpdateService {
  constructor(
    private readonly sessions: SessionsService,
    private readonly sessionRepo: SessionRepository,
    private readonly messages: MessageRepository,
    private readonly counter: MessageTokenCounter,
  ) {}

  async update(tenantId: string, externalId: string, change: SessionUpdate): Promise<SessionWithWarnings> {
    const session = await this.sessions.require(tenantId, externalId);
    const warnings: string[] = [];
    const data: { model?: string; contextWindow?: number; outputReserve?: number; policy?: object } = {};
    if (change.model !== undefined && change.model !== session.model) {
      const resolved = resolveSessionConfig({ model: change.model, contextWindow: change.contextWindow, outputReserve: change.outputReserve });
      warnings.push(...resolved.warnings);
      data.model = change.model;
      // A new model brings its catalog window and reserve unless they are given too.
      data.contextWindow = change.contextWindow ?? resolved.contextWindow;
      data.outputReserve = change.outputReserve ?? resolved.outputReserve;
    }
    if (change.contextWindow !== undefined) data.contextWindow = change.contextWindow;
    if (change.outputReserve !== undefined) data.outputReserve = change.outputReserve;
    if (change.policy !== undefined) data.policy = { ...change.policy };
    // A budget under the floor is a 400 naming both fields, before anything changes (SPEC.md "Budget").
    if (data.contextWindow !== undefined || data.outputReserve !== undefined) {
      assertBudgetAboveFloor({ contextWindow: data.contextWindow ?? session.contextWindow, outputReserve: data.outputReserve ?? session.outputReserve });
    }

    let totals = { history: session.historyTokens, context: session.contextTokens, system: session.systemTokens };
    if (data.model) totals = await this.recount(session.id, data.model);
    const next = { ...session, ...data };
    const usage = sessionUsage(next, totals.context, totals.system);
    const updated = await this.sessionRepo.update(session.id, {
      ...data,
      ...(data.model ? { historyTokens: totals.history, systemTokens: totals.system } : {}),
      contextTokens: totals.context,
      utilization: usage.utilization,
      // A new budget or policy: a compaction that was waiting for more tokens may succeed now.
      compactionHoldTokens: null,
      compactionHoldReason: null,
    });
    return { ...toSessionView(updated), warnings };
  }

  /** Counts the whole history again with the new model's tokenizer, a page at a time. */
  private async recount(sessionId: string, model: string) {
    const spec = resolveModel(model).spec;
    let after = 0;
    let history = 0;
    let system = 0;
    for (;;) {
      const page = await this.messages.forContext(sessionId, after, undefined, RECOUNT_PAGE);
      if (page.length === 0) break;
      const canonical = page.map(canonicalOf);
      const counts = await this.counter.count(canonical, spec);
      await this.messages.setTokens(sessionId, page.map((m, i) => ({ seq: m.seq, tokens: counts[i] })));
      canonical.forEach((m, i) => {
        history += counts[i];
        // A system message inside the conversation (Claude Code's) is conversation, not the system prompt.
        if (m.role === 'system' && !m.inConversation) system += counts[i];
      });
      after = page[page.length - 1].seq;
    }
    // Before compaction exists, the context is the whole history.
    return { history, context: history, system };
  }
}
