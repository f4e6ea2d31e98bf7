import { Inject, Injectable } from '@nestjs/common';
import { CanonicalMessage, makeProviderValid, toAnthropic, toOpenAI } from '@compactor/compaction';
import { MessageRepository, SessionRecord } from '@compactor/persistence';
import { resolveModel } from '@compactor/tokens';
import { API_CONFIG, ApiConfig } from '../config/api-config';
import { MessageTokenCounter } from '../tokens/message-token-counter';
import { ContextCache, contextFingerprint, ContextSource } from './context-cache';
import { ContextResponse } from './context.dto';
import { sessionUsage } from './session-config';
import { SessionsService } from './sessions.service';
import { canonicalOf } from '@compactor/persistence';

export type ContextFormat = 'anthropic' | 'openai' | 'canonical';

/**
 * Assembles the ready-to-send context from the session's head (before any compaction:
 * every message), made valid for the provider (Guarantee 2): a trailing tool_use whose
 * result has not arrived is left out, and nothing broken is forwarded. Sources and
 * serialized bodies are cached per process (see ContextCache), so a read after an append
 * fetches only the new messages, and a repeated read serializes nothing.
 */
@Injectable()
export class ContextService {
  private readonly cache: ContextCache;

  constructor(
    private readonly sessions: SessionsService,
    private readonly messages: MessageRepository,
    private readonly counter: MessageTokenCounter,
    @Inject(API_CONFIG) config: ApiConfig,
  ) {
    this.cache = new ContextCache(config.CONTEXT_CACHE_MB * 1024 * 1024);
  }

  /** The context as its JSON response body (UTF-8). */
  async contextBody(tenantId: string, externalId: string, format: ContextFormat): Promise<Buffer> {
    const session = await this.sessions.require(tenantId, externalId);
    const source = await this.source(session);
    const cached = source.bodies.get(format);
    if (cached !== undefined) return cached;
    const body = Buffer.from(JSON.stringify(await this.assemble(session, source, format)));
    // The parsed messages take about as much memory as one serialized body.
    if (source.bodies.size === 0) this.cache.set(session.id, source, body.length * 2);
    else this.cache.grow(session.id, source, body.length);
    source.bodies.set(format, body);
    return body;
  }

  /** The messages the context is built from, through the session's lastSeq as read by this request. */
  private async source(session: SessionRecord): Promise<ContextSource> {
    const fingerprint = contextFingerprint(session);
    const cached = this.cache.enabled ? this.cache.get(session.id, fingerprint) : undefined;
    if (cached && cached.throughSeq === session.lastSeq) return cached;
    if (cached && cached.throughSeq > session.lastSeq) {
      // A concurrent read already saw a later append; serve exactly what this request's session row says.
      return { fingerprint, throughSeq: session.lastSeq, messages: cached.messages.filter((m) => m.seq <= session.lastSeq), bodies: new Map() };
    }
    const after = cached?.throughSeq ?? 0;
    const rows = await this.messages.forContext(session.id, after, session.lastSeq);
    const fresh = rows.map((r) => ({ seq: r.seq, message: canonicalOf(r), tokens: r.tokens }));
    return { fingerprint, throughSeq: session.lastSeq, messages: cached ? [...cached.messages, ...fresh] : fresh, bodies: new Map() };
  }

  private async assemble(session: SessionRecord, source: ContextSource, format: ContextFormat): Promise<ContextResponse> {
    const canonical = source.messages.map((m) => m.message);
    const { messages: valid, dropped } = makeProviderValid(canonical);

    // Messages kept whole keep their stored count; one that lost blocks is counted again.
    const storedTokens = new Map<CanonicalMessage, number>(source.messages.map((m) => [m.message, m.tokens]));
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
      sessionId: session.externalId,
      format,
      ...body,
      tokens,
      usage,
      contextVersion: null,
      checkpoints: [],
      fallback: null,
      leftOut: dropped.map((d) => ({ seq: source.messages[d.index].seq, reason: d.reason })),
    };
  }
}
