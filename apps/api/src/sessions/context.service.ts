import { Injectable } from '@nestjs/common';
import { CanonicalMessage, makeProviderValid, toAnthropic, toOpenAI } from '@compactor/compaction';
import { MessageRepository } from '@compactor/persistence';
import { resolveModel } from '@compactor/tokens';
import { MessageTokenCounter } from '../tokens/message-token-counter';
import { ContextResponse } from './context.dto';
import { sessionUsage } from './session-config';
import { SessionsService } from './sessions.service';
import { canonicalOf } from './stored-message';

export type ContextFormat = 'anthropic' | 'openai' | 'canonical';

/**
 * Assembles the ready-to-send context from the session's head (before any compaction:
 * every message), made valid for the provider (Guarantee 2): a trailing tool_use whose
 * result has not arrived is left out, and nothing broken is forwarded.
 */
@Injectable()
export class ContextService {
  constructor(
    private readonly sessions: SessionsService,
    private readonly messages: MessageRepository,
    private readonly counter: MessageTokenCounter,
  ) {}

  async context(tenantId: string, externalId: string, format: ContextFormat): Promise<ContextResponse> {
    const session = await this.sessions.require(tenantId, externalId);
    const rows = await this.messages.forContext(session.id);
    const canonical: CanonicalMessage[] = rows.map(canonicalOf);
    const { messages: valid, dropped } = makeProviderValid(canonical);

    // Messages kept whole keep their stored count; one that lost blocks is counted again.
    const storedTokens = new Map<CanonicalMessage, number>(canonical.map((m, i) => [m, rows[i].tokens]));
    const changed = valid.filter((m) => !storedTokens.has(m));
    const recounted = changed.length > 0 ? await this.counter.count(changed, resolveModel(session.model).spec) : [];
    const recountOf = new Map(changed.map((m, i) => [m, recounted[i]]));
    let tokens = 0;
    let systemTokens = 0;
    for (const m of valid) {
      const t = storedTokens.get(m) ?? recountOf.get(m) ?? 0;
      tokens += t;
      if (m.role === 'system') systemTokens += t;
    }
    const usage = sessionUsage(session, tokens, systemTokens);

    const body =
      format === 'anthropic'
        ? toAnthropic(valid)
        : format === 'openai'
          ? { messages: toOpenAI(valid) }
          : { messages: valid };
    return {
      sessionId: externalId,
      format,
      ...body,
      tokens,
      usage,
      contextVersion: null,
      checkpoints: [],
      fallback: null,
      leftOut: dropped.map((d) => ({ seq: rows[d.index].seq, reason: d.reason })),
    };
  }
}
