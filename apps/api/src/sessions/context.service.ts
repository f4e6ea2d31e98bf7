import { Inject, Injectable } from '@nestjs/common';
import {
  anthropicTurns,
  applyPrefix,
  BudgetTooSmall,
  CanonicalMessage,
  checkpointMessage,
  CONTINUATION_TURN,
  budgetUse,
  sessionBudget,
  CountMessage,
  ingestTransform,
  toolNamesOf,
  fitToBudget,
  makeProviderValidIncremental,
  messageCounter,
  presetProtection,
  protectionOf,
  SessionMessage,
  toAnthropic,
  toOpenAI,
  toResponses,
  VersionPrefix,
  serializeMessagesIncremental,
} from '@compactor/compaction';
import { EventPublisher } from '@compactor/jobs';
import { CompactionRepository, ContextLoader, SessionRecord } from '@compactor/persistence';
import { resolveModel } from '@compactor/tokens';
import { API_CONFIG, ApiConfig } from '../config/api-config';
import { MessageTokenCounter } from '../tokens/message-token-counter';
import { BodyParts, bodyOf, ContextCache, contextFingerprint, ContextSource } from './context-cache';
import { ContextResponse } from './context.dto';
import { sessionPolicy, sessionUsage } from './session-config';
import { SessionsService } from './sessions.service';

export type ContextFormat = 'anthropic' | 'openai' | 'responses' | 'canonical';

const COMMA = Buffer.from(',');

/** What a proxied request adds to the session's budget (SPEC.md "Budget"). */
export interface ContextLimits {
  /** The request's max_tokens: the reserve is the larger of it and the session's output reserve. */
  maxTokens?: number;
  /** Tokens of the request's tool schemas. */
  toolSchemaTokens?: number;
  /** Tokens the request sends besides the context (e.g. how much longer its system prompt is than the stored one). */
  extraTokens?: number;
}

/** The fitted context, before serialization, for the proxy. */
export interface ProxyContext {
  /** In context order, with their seqs (a checkpoint's is its toSeq, the goal block's 0). */
  messages: SessionMessage[];
  /** Whether a compaction's version is in force (then Anthropic's turn order applies, see anthropicTurns). */
  compacted: boolean;
  contextVersion: number | null;
  tokens: number;
  /** Tokens of the continuation turn, counted out of the budget when compacted for Anthropic. */
  continuationTokens: number;
  budget: number;
  fallback: string | null;
}

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
    private readonly loader: ContextLoader,
    private readonly compactions: CompactionRepository,
    private readonly counter: MessageTokenCounter,
    private readonly publisher: EventPublisher,
    @Inject(API_CONFIG) config: ApiConfig,
  ) {
    this.cache = new ContextCache(config.CONTEXT_CACHE_MB * 1024 * 1024);
  }

  /** The context as its JSON response body (UTF-8), in parts. */
  async contextBody(tenantId: string, externalId: string, format: ContextFormat): Promise<BodyParts> {
    const session = await this.sessions.require(tenantId, externalId);
    const source = await this.source(session);
    if (source.head === undefined) source.head = await this.loader.head(session);
    const cached = source.bodies.get(format);
    if (cached !== undefined) return cached;
    const body = await this.assembleBody(session, source, format);
    // The parsed messages take about as much memory as one serialized body, and the final part's JSON (kept for the next read) about one more.
    if (source.bodies.size === 0) this.cache.set(session.id, source, body.length * 3);
    else this.cache.grow(session.id, source, body.length);
    source.bodies.set(format, body);
    return body;
  }

  /** The context a prefix would give (a dry run's result), through `throughSeq`; nothing is cached or applied. */
  async preview(tenantId: string, externalId: string, prefix: VersionPrefix, throughSeq: number, format: ContextFormat): Promise<ContextResponse> {
    const session = await this.sessions.require(tenantId, externalId);
    const source: ContextSource = {
      fingerprint: 'preview',
      throughSeq,
      messages: await this.loader.messagesBetween(session.id, 0, Math.min(throughSeq, session.lastSeq)),
      head: { versionId: 'dry-run', number: 0, prefix },
      bodies: new Map(),
    };
    return { ...(await this.assemble(session, source, format)), contextVersion: null };
  }

  /** The history with the preset's per-result ingest step applied (seed 000's tool post-processing), memoized per message. */
  private ingested(session: SessionRecord, source: ContextSource, count: CountMessage): readonly SessionMessage[] {
    const transform = ingestTransform(sessionPolicy(session));
    if (!transform) return source.messages;
    const memo = (source.ingested ??= new Map());
    const names = toolNamesOf(source.messages);
    return source.messages.map((m) => {
      let out = memo.get(m.seq);
      if (!out) {
        out = transform(m, count, names);
        memo.set(m.seq, out);
      }
      return out;
    });
  }

  /** The messages the context is built from, through the session's lastSeq as read by this request. */
  private async source(session: SessionRecord): Promise<ContextSource> {
    const fingerprint = contextFingerprint(session);
    const cached = this.cache.enabled ? this.cache.get(session.id, fingerprint) : undefined;
    if (cached && cached.throughSeq === session.lastSeq) return cached;
    if (cached && cached.throughSeq > session.lastSeq) {
      // A concurrent read already saw a later append; serve exactly what this request's session row says.
      return { fingerprint, throughSeq: session.lastSeq, messages: cached.messages.filter((m) => m.seq <= session.lastSeq), head: cached.head, ingested: cached.ingested, valid: cached.valid, serialized: cached.serialized, bodies: new Map() };
    }
    const after = cached?.throughSeq ?? 0;
    const fresh = await this.loader.messagesBetween(session.id, after, session.lastSeq);
    return { fingerprint, throughSeq: session.lastSeq, messages: cached ? [...cached.messages, ...fresh] : fresh, head: cached?.head, ingested: cached?.ingested, valid: cached?.valid, serialized: cached?.serialized, bodies: new Map() };
  }

  /**
   * The context the proxy forwards (SPEC.md, the proxy): the fitted messages with their seqs, before
   * serialization, so the proxy can put the request's own system prompt, tools and cache markers
   * around them. `limits` are what the request adds to the session's budget: its `max_tokens`, its
   * tool schemas, and the tokens it sends besides the history (a system prompt longer than the
   * stored one). Nothing is cached beyond the message source the context reads share.
   */
  async proxyContext(session: SessionRecord, format: 'anthropic' | 'openai', limits: ContextLimits, pending: readonly SessionMessage[] = []): Promise<ProxyContext> {
    const source = await this.source(session);
    if (source.head === undefined) source.head = await this.loader.head(session);
    // Sized like contextBody's entries: about two bytes of memory per byte of serialized context, ~4 bytes a token.
    // A session with nothing stored (one the proxy creates once the upstream answered) has nothing worth caching.
    if (source.bodies.size === 0 && session.lastSeq > 0) this.cache.set(session.id, source, 8 * source.messages.reduce((n, m) => n + m.tokens, 0));
    // Messages the proxy appends while it forwards (`pending`, seqs after lastSeq) join this context only, never the cache.
    const view: ContextSource =
      pending.length === 0
        ? source
        : { ...source, messages: [...source.messages, ...pending], throughSeq: pending[pending.length - 1].seq, ingested: new Map(source.ingested ?? []), bodies: new Map() };
    const { fitted, head, continuationTokens, assembled } = await this.fit(session, view, format, limits);
    if (view !== source && view.ingested) {
      for (const [seq, m] of view.ingested) if (seq <= source.throughSeq && !source.ingested?.has(seq)) (source.ingested ??= new Map()).set(seq, m);
    }
    if (view !== source) this.keepValidPrefix(source, view, assembled, pending.length);
    return {
      messages: fitted.messages,
      compacted: head !== null,
      contextVersion: head?.number ?? null,
      tokens: fitted.tokens,
      continuationTokens,
      budget: fitted.budget,
      fallback: fitted.applied ? fitted.line : null,
    };
  }

  /**
   * The final part of the provider-valid pass over a view with the proxy's pending messages, kept on the cached source
   * when it holds stored messages only (it ends before the pending ones, which are the view's last): the next request,
   * whose history holds those messages stored, validates only what comes after it instead of the whole history.
   */
  private keepValidPrefix(source: ContextSource, view: ContextSource, assembled: readonly SessionMessage[], pendingCount: number): void {
    const valid = view.valid;
    if (!valid || valid === source.valid) return;
    // The pending messages are the assembled context's last ones (seqs after the source's); anything else keeps nothing.
    let firstPending = assembled.length;
    while (firstPending > 0 && assembled[firstPending - 1].seq > source.throughSeq) firstPending -= 1;
    if (assembled.length - firstPending !== pendingCount || valid.prefix.end >= firstPending) return;
    source.valid = valid;
  }

  /** The head's prefix applied, made valid for the provider and fitted to the budget (Guarantees 2 and 4). */
  private async fit(session: SessionRecord, source: ContextSource, format: ContextFormat, limits?: ContextLimits) {
    // The head version's prefix applied to the history: checkpoints, masked and offloaded outputs (SPEC.md "Context").
    const head = source.head ?? null;
    const counter = messageCounter(resolveModel(session.model).spec);
    const history = this.ingested(session, source, counter.countMessage);
    const assembled = head ? applyPrefix(head.prefix, history, (c) => counter.countMessage(checkpointMessage(c))) : history;
    // Guarantee 2, in time proportional to what was appended: the final part of the last pass is reused.
    const { messages: validMessages, dropped, sources, prefix, incremental } = makeProviderValidIncremental(
      assembled.map((m) => m.message),
      source.valid?.prefix,
    );
    const reused = incremental ? source.valid : undefined;
    const from = reused ? reused.counted.length : 0;
    const start = reused ? reused.prefix.end : 0;

    // Messages kept whole keep their stored count; one that lost blocks is counted again.
    const storedTokens = new Map<CanonicalMessage, number>();
    for (let i = start; i < assembled.length; i += 1) storedTokens.set(assembled[i].message, assembled[i].tokens);
    const changed = validMessages.slice(from).filter((m) => !storedTokens.has(m));
    const recounted = changed.length > 0 ? await this.counter.count(changed, resolveModel(session.model).spec) : [];
    const recountOf = new Map(changed.map((m, i) => [m, recounted[i]]));
    const counted: SessionMessage[] = reused ? [...reused.counted] : [];
    for (let k = from; k < validMessages.length; k += 1) {
      const m = validMessages[k];
      counted.push({ seq: assembled[sources[k]].seq, message: m, tokens: storedTokens.get(m) ?? recountOf.get(m) ?? 0 });
    }
    const isSystem = (m: SessionMessage) => m.message.role === 'system' && !m.message.inConversation;
    let systemTokens = reused?.systemTokens ?? 0;
    for (let k = from; k < counted.length; k += 1) if (isSystem(counted[k])) systemTokens += counted[k].tokens;
    // Keep the new final part with its counts, for the next read (a view with the proxy's pending messages keeps its own).
    if (prefix && prefix !== reused?.prefix) {
      const final = counted.slice(0, prefix.messages.length);
      source.valid = { prefix, counted: final, tokens: final.reduce((n, m) => n + m.tokens, 0), systemTokens: final.reduce((n, m) => n + (isSystem(m) ? m.tokens : 0), 0) };
    } else if (!prefix) source.valid = undefined;
    // The proxy knows the request's max_tokens and tool schemas (SPEC.md "Budget").
    // One budget (SPEC.md "Budget"): a REST read uses what the session remembers of its requests, the proxy its request's own limits.
    const computed = sessionBudget({ ...session, systemTokens }, limits);
    const budget = computed.budget - (limits?.extraTokens ?? 0);

    // Guarantee 4: never more than the budget. Until a compaction brings it under (pending, failed, or a
    // preset that deletes nothing), a deterministic fallback masks, offloads and drops the oldest turns.
    // Room for the continuation turn Anthropic's order may need (see anthropicTurns).
    const continuationTokens = format === 'anthropic' && head ? counter.countMessage(CONTINUATION_TURN) : 0;
    let fitted;
    try {
      fitted = fitToBudget(counted, { budget: budget - continuationTokens, protection: presetProtection(sessionPolicy(session)), countMessage: counter.countMessage });
    } catch (error) {
      if (error instanceof BudgetTooSmall) {
        // The 422 names what used the budget: the window's parts, and what the request adds besides the context.
        const extra = limits?.extraTokens ? ` − the request's longer system prompt or prefill ${limits.extraTokens.toLocaleString('en-US')}` : '';
        const refused = error.withBudgetLine(`${budgetUse(computed)}${extra}`);
        const eventId = await this.compactions.event(session.id, session.tenantId, 'budget-too-small', `Context read refused: ${refused.message}`, { lastSeq: session.lastSeq });
        this.publisher.notify(session.id, eventId);
        throw refused;
      }
      throw error;
    }
    return { fitted: { ...fitted, budget }, head, counter, systemTokens, dropped, assembled, continuationTokens, history };
  }

  private async assemble(session: SessionRecord, source: ContextSource, format: ContextFormat): Promise<ContextResponse> {
    return this.response(session, await this.fit(session, source, format), format);
  }

  /**
   * The response body, as `JSON.stringify(assemble(…))` gives it. In the agent loop (a context that
   * fits, not an Anthropic one after compaction, which merges turns), the messages no append can change
   * are written once: a read after an append converts and writes only the ones after them
   * (serialized-prefix.ts), so its cost follows what was appended, not the session's length.
   */
  private async assembleBody(session: SessionRecord, source: ContextSource, format: ContextFormat): Promise<BodyParts> {
    const fit = await this.fit(session, source, format);
    const { fitted, head } = fit;
    if ((format !== 'anthropic' && format !== 'openai') || (format === 'anthropic' && head) || fitted.applied) {
      if (source.serialized) source.serialized.delete(format);
      return { ...bodyOf(Buffer.from(JSON.stringify(this.response(session, fit, format)))), fallback: fitted.applied };
    }
    const valid = fitted.messages.map((m) => m.message);
    const written = serializeMessagesIncremental(format, valid, source.valid?.prefix.messages.length ?? 0, source.serialized?.get(format));
    if (written.prefix) (source.serialized ??= new Map()).set(format, written.prefix);
    else source.serialized?.delete(format);
    const { messages: _messages, system: _system, sessionId, format: _format, ...rest } = this.response(session, fit, format, { messages: [] });
    const head_ = JSON.stringify({ sessionId, format }).slice(0, -1) + (written.system !== undefined ? `,"system":${written.system}` : '') + ',"messages":[';
    const parts: Buffer[] = [Buffer.from(head_)];
    written.chunks.forEach((c, i) => {
      if (i > 0) parts.push(COMMA);
      parts.push(c);
    });
    parts.push(Buffer.from(`],${JSON.stringify(rest).slice(1)}`));
    // The parts as they are: the final part's chunks are shared with the next read's body, and copying megabytes into one buffer cost more than writing them.
    return { parts, length: parts.reduce((n, p) => n + p.length, 0) };
  }

  /** The response for a fitted context; `body` replaces the converted messages (the incremental writer brings its own). */
  private response(session: SessionRecord, fit: Awaited<ReturnType<ContextService['fit']>>, format: ContextFormat, body?: { messages: unknown[] }): ContextResponse {
    const { fitted, head, counter, systemTokens, dropped, assembled, history } = fit;
    const kept = fitted.messages.map((m) => m.message);
    // Anthropic's turn order after compaction: user first, consecutive user messages as one turn. A history
    // that is not compacted is sent as the client appended it (Anthropic combines consecutive user turns itself).
    const valid = format === 'anthropic' && head ? anthropicTurns(kept) : kept;
    const tokens = fitted.tokens + (valid.includes(CONTINUATION_TURN) ? counter.countMessage(CONTINUATION_TURN) : 0);
    const usage = sessionUsage(session, tokens, systemTokens);

    const converted =
      body ??
      (format === 'anthropic'
        ? toAnthropic(valid)
        : format === 'openai'
          ? { messages: toOpenAI(valid) }
          : format === 'responses'
            ? { messages: [], input: toResponses(valid) }
            : { messages: valid });
    return {
      sessionId: session.externalId,
      format,
      ...converted,
      tokens,
      usage,
      contextVersion: head?.number ?? null,
      checkpoints: (head?.prefix.checkpoints ?? []).map((c) => ({ id: c.id, fromSeq: c.fromSeq, toSeq: c.toSeq, level: c.level, tokens: c.tokens, originalTokens: c.originalTokens })),
      fallback: fitted.applied ? fitted.line : null,
      leftOut: dropped.map((d) => ({ seq: assembled[d.index].seq, reason: d.reason })),
      // The dashboard lines the context up with the history by seq; other formats may merge turns, so only canonical has them.
      ...(format === 'canonical' ? { seqs: fitted.messages.map((m) => m.seq), protection: protectionView(history, session) } : {}),
    };
  }
}

/** What the policy protects now, as the dashboard shows it (system prompts and pinned messages it reads from the history itself). */
function protectionView(history: readonly SessionMessage[], session: SessionRecord): { latestFromSeq: number | null; userTextSeqs: number[] } {
  const protection = protectionOf([...history], presetProtection(sessionPolicy(session)));
  return { latestFromSeq: protection.latestFromSeq ?? null, userTextSeqs: [...protection.userText].sort((a, b) => a - b) };
}
