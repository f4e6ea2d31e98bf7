import { Inject, Injectable } from '@nestjs/common';
import { BudgetTooSmall, derivedSessionId, DomainError, matchConversation, messageKeys, SessionMessage, ValidationFailed } from '@compactor/compaction';
import { RateLimited } from '../errors/http-errors';
import { EventPublisher } from '@compactor/jobs';
import { CompactionRepository, SessionRecord, SessionRepository } from '@compactor/persistence';
import { ModelSpec, resolveModel } from '@compactor/tokens';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import type { AuthContext } from '../auth/scopes';
import { RateLimits } from '../limits/rate-limits';
import { LOGGER } from '../logging/logger';
import { HistoryMoved } from '../sessions/append.service';
import { ContextLimits, ContextService } from '../sessions/context.service';
import { MessageTokenCounter } from '../tokens/message-token-counter';
import { answerMessages, ConversationRecorder } from './conversation-recorder';
import { ConversationResolver, isOneShot } from './conversation-resolver';
import { ConversationStore } from './conversation-store';
import { forwardBody } from './forward-body';
import { policyHeader, providerOf, ProxyRequest, ProxyShape, sessionIdHeader } from './proxy-request';
import { ProxyAuth } from './proxy-auth';
import { ProxySettings, UpstreamSettings } from './proxy-settings';
import { ProxyError, ProxyProvider, rateLimitedProxyError, sendProviderError, sendProxyError } from './provider-errors';
import { UpstreamForwarder } from './upstream-forwarder';
import { CompactionWait } from '../compaction/compaction-wait';
import { StageTimer } from '../common/stage-timer';

/** `context`'s tokens with each message that stood in at its upper bound (one of `bounded`) at its exact count instead. */
function exactTokens(context: readonly SessionMessage[], bounded: readonly SessionMessage[], exact: readonly SessionMessage[]): number {
  const exactOf = new Map(bounded.map((m, k) => [m.message, exact[k]?.tokens ?? m.tokens]));
  return context.reduce((n, m) => n + (exactOf.get(m.message) ?? m.tokens), 0);
}

/** What the response to a request chained by `previous_response_id` says (SPEC.md, the proxy; docs/providers.md). */
export const NOT_COMPACTED_HEADER = 'x-compactor-not-compacted';
const CHAINED_REASON = 'previous_response_id: the upstream holds this conversation, so Compactor forwarded the request untouched and cannot compact it';


/**
 * The drop-in proxy (SPEC.md, REST API): records a request's new messages through the append
 * path, forwards the session's compacted context instead of the client's history (with the
 * request's own system prompt, tools and parameters), streams the upstream's answer back byte
 * for byte and records it. A client whose history no longer matches its session's gets a fork.
 * Orchestrates: auth → resolve (ConversationResolver) → context → forward body → upstream (UpstreamForwarder) → record (ConversationRecorder).
 */
@Injectable()
export class ProxyService {
  constructor(
    private readonly auth: ProxyAuth,
    private readonly settings: ProxySettings,
    private readonly resolver: ConversationResolver,
    private readonly recorder: ConversationRecorder,
    private readonly sessions: SessionRepository,
    private readonly store: ConversationStore,
    private readonly contexts: ContextService,
    private readonly compactions: CompactionRepository,
    private readonly publisher: EventPublisher,
    private readonly counter: MessageTokenCounter,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly rateLimits: RateLimits,
    private readonly forwarder: UpstreamForwarder,
    private readonly compactionWait: CompactionWait,
  ) {}

  /** `POST /v1/proxy/anthropic/v1/messages`, `POST /v1/proxy/openai/v1/chat/completions` and `POST /v1/proxy/openai/v1/responses`. */
  async messages(shape: ProxyShape, req: Request, res: Response): Promise<void> {
    const provider = providerOf(shape);
    // Stage durations of the request as a Server-Timing header: `compactor` is the whole work before forwarding.
    const timing = new StageTimer('compactor', 'Compactor proxy before forwarding');
    try {
      // The key is checked while the body is read (nothing is forwarded or stored before it passed).
      const authenticated = this.admitted(req, res);
      authenticated.catch(() => undefined);
      const keyHash = this.auth.keyHash(req.headers);
      // The conversation's previous body (found by shape, key and session header): its layout is where this body's scan
      // resumes, and a Responses request's items parsed then are reused where the bytes are the same; which entry is
      // offered never changes the result, only what is scanned and parsed again.
      const itemsKey = `${shape}\u0000${keyHash ?? ''}\u0000${String(req.headers['x-compactor-session'] ?? '')}`;
      let request: ProxyRequest;
      try {
        request = await this.resolver.readRequest(shape, req.body, this.resolver.parsedItems(itemsKey));
      } catch (error) {
        await authenticated; // a bad key answers 401 whatever the body
        throw error;
      }
      timing.mark('read');
      // The session row is read along with the key check (one round trip less on the request's path); it is used only if no
      // proxied request finished meanwhile (it could have changed the row), else read again under the conversation's lock.
      const generation = this.resolver.generation;
      let prefetchId: string | undefined;
      let invalid: unknown;
      try {
        prefetchId = sessionIdHeader(req.headers) ?? (request.conversationLength > 0 ? derivedSessionId(provider, request.system, [request.turn(0)]) : undefined);
      } catch (error) {
        invalid = error; // answered after the key check: a bad key is a 401 whatever else is wrong
      }
      const prefetch = keyHash && prefetchId ? this.sessions.findForKey(keyHash, prefetchId) : undefined;
      prefetch?.catch(() => undefined);
      const auth = await authenticated;
      this.resolver.rememberItems(itemsKey, request.parsedItems);
      if (invalid !== undefined) throw invalid;
      const upstream = await this.settings.forTenant(auth.tenantId);
      timing.mark('auth');
      const path = shape === 'anthropic' ? '/v1/messages' : shape === 'responses' ? '/v1/responses' : '/v1/chat/completions';
      if (request.chained) {
        await this.forwardChained(upstream, req, res, path, request, auth.tenantId, sessionIdHeader(req.headers), timing);
        return;
      }
      if (request.conversationLength === 0) {
        // Nothing to record or compact (the provider answers such a request with its own error).
        await this.forwarder.relay(provider, res, await this.forwarder.send(provider, upstream, req, path, req.body as Buffer), {});
        return;
      }
      // What a request appends is counted once stored (after the upstream answered); a tenant over its appended tokens per
      // minute is refused here, before anything is forwarded.
      await this.rateLimits.requireAppendRoom(auth.tenantId);
      const requestedId = prefetchId!;
      const policy = policyHeader(req.headers);
      const lockKey = `${auth.tenantId}\u0000${requestedId}`;
      await this.resolver.preparseLarge(lockKey, request);
      const keys = this.resolver.conversationKeys(lockKey, request);
      timing.mark('compare');
      // A one-shot request without tools that the stored conversation does not start with is a side request: forwarded
      // as sent without waiting for the conversation's lock, reported as an event, never stored in the history.
      const early = isOneShot(request) ? await this.resolver.sideRequestOf(auth.tenantId, requestedId, keys, prefetch) : undefined;
      const resolved = early ?? (await this.resolver.resolveLocked(auth.tenantId, requestedId, lockKey, request, keys, policy, prefetch, generation));
      if (resolved.side) {
        await this.forwardSide(provider, upstream, req, res, path, request, resolved.session, timing);
        return;
      }
      try {
        const stored = resolved.stored?.leadingDone ? resolved.stored : await this.store.load(resolved.session);
        timing.mark('history');
        const limits = await this.limits(resolved.session, request, stored.leadingSystemTokens);
        // An existing session remembers the request's limits at once; a new one (or a fork) once it is stored, below.
        if (!resolved.pending) this.rememberLimits(resolved.session, request, limits);
        let context = await this.contexts.proxyContext(resolved.session, provider, limits, resolved.pending?.messages);
        const pending = resolved.pending;
        if (pending?.exact && context.fallback) {
          // The upper bounds did not fit: the exact counts decide what is forwarded.
          pending.messages = await pending.exact;
          pending.exact = undefined;
          context = await this.contexts.proxyContext(resolved.session, provider, limits, pending.messages);
        }
        if (context.fallback && resolved.session.lastSeq > 0) {
          // Over the budget with a stored history: the compaction the last answer made due may be about to land (CompactionWait).
          const compacted = await this.compactionWait.settled(resolved.session);
          timing.mark('wait');
          if (compacted) context = await this.contexts.proxyContext(compacted, provider, limits, pending?.messages);
        }
        timing.mark('context');
        const payload = forwardBody({
          request,
          context: context.messages,
          compacted: context.compacted,
          leadingSystemSeqs: new Set(stored.leadingSystemSeqs),
          throughSeq: resolved.throughSeq,
          seqOf: resolved.seqOf,
        });
        timing.mark('body');
        // What the proxy spent before the request went upstream, by stage (Server-Timing: clients and the benchmark see it).
        const serverTiming = timing.header();
        const exchange = await this.forwarder.send(provider, upstream, req, path, payload);
        // Counted while the request was forwarded: the context's tokens with the exact counts of the messages it holds.
        const contextTokens = pending?.exact ? exactTokens(context.messages, pending.messages, await pending.exact.catch(() => pending.messages)) : context.tokens;
        // The request's new messages (a new session, a fork) are stored only once the upstream accepted the request: one it
        // refused, or that never got an answer, leaves the history as it was. The conversation's lock waits for the write.
        const status = exchange.response.statusCode ?? 502;
        const accepted = status >= 200 && status < 300;
        const target = this.recorder.target(resolved, accepted);
        const headers: Record<string, string> = {
          'server-timing': serverTiming,
          'x-compactor-session': resolved.session.externalId,
          'x-compactor-context-version': String(context.contextVersion ?? 0),
          'x-compactor-context-tokens': String(contextTokens + (limits.extraTokens ?? 0)),
          ...(context.fallback ? { 'x-compactor-fallback': 'applied' } : {}),
          ...(resolved.forkedFrom ? { 'x-compactor-forked-from': resolved.forkedFrom } : {}),
        };
        if (resolved.pending && target) void target.then((into) => into && this.rememberLimits(into.session, request, limits));
        // What we estimated the upstream would count for this request: the context, what the request adds, its tool schemas.
        const estimated = contextTokens + context.continuationTokens + (limits.extraTokens ?? 0) + (limits.toolSchemaTokens ?? 0);
        await this.forwarder.relay(provider, res, exchange, headers, target && this.recorder.answerRecorder(shape, lockKey, auth.tenantId, request.stream, target, estimated));
      } finally {
        // Refused by Compactor (422 budget_too_small, 400) or not answered (502, 504): nothing is stored, the lock is released.
        resolved.pending?.release.settle(undefined);
      }
    } catch (error) {
      this.fail(provider, res, error);
    }
  }

  /** `POST /v1/proxy/anthropic/v1/messages/count_tokens`: the tokens of what the proxy would forward, counted locally. */
  async countTokens(req: Request, res: Response): Promise<void> {
    try {
      const auth = await this.admitted(req, res);
      const request = ProxyRequest.parse('anthropic', req.body);
      const turns = Array.from({ length: request.conversationLength }, (_, k) => request.turn(k));
      const requestedId = sessionIdHeader(req.headers) ?? derivedSessionId('anthropic', request.system, turns.slice(0, 1));
      const lockKey = `${auth.tenantId}\u0000${requestedId}`;
      let inputTokens: number | undefined;
      for (const id of new Set([this.resolver.redirectOf(lockKey), requestedId])) {
        if (id === undefined) continue;
        const session = await this.sessions.find(auth.tenantId, id);
        if (!session) continue;
        const stored = await this.store.load(session);
        const match = matchConversation(stored.keys, turns.map(messageKeys), stored.leadingSystemSeqs.at(-1) ?? 0);
        if (match.kind === 'diverged') continue;
        const limits = await this.limits(session, request, stored.leadingSystemTokens);
        const context = await this.contexts.proxyContext(session, 'anthropic', limits);
        const spec = resolveModel(session.model).spec;
        const added = match.kind === 'extends' ? await this.counter.count(turns.slice(match.newFrom), spec) : [];
        inputTokens = context.tokens + (limits.extraTokens ?? 0) + (limits.toolSchemaTokens ?? 0) + added.reduce((a, b) => a + b, 0);
        break;
      }
      if (inputTokens === undefined) {
        // No session holds this conversation yet: it would be forwarded as it is.
        const spec = resolveModel(request.model ?? 'unknown').spec;
        const rest = Array.from({ length: request.messageCount - request.leading }, (_, k) => request.message(request.leading + k));
        const counts = await this.counter.count([...request.system, ...rest], spec);
        inputTokens = counts.reduce((a, b) => a + b, 0) + (await this.toolTokens(spec, request));
      }
      res.status(200).json({ input_tokens: inputTokens });
    } catch (error) {
      this.fail('anthropic', res, error);
    }
  }

  /**
   * A Responses request chained by `previous_response_id`: the upstream keeps the earlier turns, so there is nothing
   * Compactor could replace. Forwarded untouched, answered with `X-Compactor-Not-Compacted`, and noted as a
   * `not-compacted` event on the session the request names (when it exists); nothing enters a history.
   */
  private async forwardChained(upstream: UpstreamSettings, req: Request, res: Response, path: string, request: ProxyRequest, tenantId: string, sessionId: string | undefined, timing: StageTimer): Promise<void> {
    const serverTiming = timing.header();
    const exchange = await this.forwarder.send('openai', upstream, req, path, req.body as Buffer);
    await this.forwarder.relay('openai', res, exchange, { 'server-timing': serverTiming, [NOT_COMPACTED_HEADER]: CHAINED_REASON });
    const session = sessionId === undefined ? null : await this.sessions.find(tenantId, sessionId).catch(() => null);
    if (!session) return;
    const data = { reason: 'previous_response_id', previousResponseId: String(request.body.previous_response_id).slice(0, 200), status: exchange.response.statusCode ?? 502, model: request.model ?? null };
    try {
      const eventId = await this.compactions.event(session.id, tenantId, 'not-compacted', `A request chained by previous_response_id was forwarded untouched: the upstream holds its conversation, so Compactor cannot compact it`, data);
      this.publisher.notify(session.id, eventId);
    } catch (error) {
      this.logger.warn({ sessionId, reason: error instanceof Error ? error.message : String(error) }, 'proxy: chained request not noted');
    }
  }

  /** Any other provider path: forwarded as received, answered as the upstream answers. */
  async passThrough(provider: ProxyProvider, req: Request, res: Response): Promise<void> {
    try {
      const auth = await this.admitted(req, res);
      const upstream = await this.settings.forTenant(auth.tenantId);
      const exchange = await this.forwarder.sendAsReceived(provider, upstream, req);
      await this.forwarder.relay(provider, res, exchange, {});
    } catch (error) {
      this.fail(provider, res, error);
    }
  }

  /**
   * A side request (see isOneShot) is forwarded exactly as the client sent it (no history, no compaction) and reported
   * on the conversation's session as a `side-request` event with its model, status and tokens; nothing enters a history.
   */
  private async forwardSide(provider: ProxyProvider, upstream: UpstreamSettings, req: Request, res: Response, path: string, request: ProxyRequest, main: SessionRecord, timing: StageTimer): Promise<void> {
    const serverTiming = timing.header();
    const exchange = await this.forwarder.send(provider, upstream, req, path, req.body as Buffer);
    const headers = { 'server-timing': serverTiming, 'x-compactor-side-request': main.externalId };
    await this.forwarder.relay(provider, res, exchange, headers, {
      stream: request.stream,
      shape: request.shape,
      onEnd: (message, status) => void this.reportSide(main, request, status, message),
    });
  }

  private async reportSide(main: SessionRecord, request: ProxyRequest, status: number, answer: Record<string, unknown> | undefined): Promise<void> {
    try {
      const model = request.model ?? 'unknown';
      const spec = resolveModel(model).spec;
      const sum = (counts: number[]) => counts.reduce((a, b) => a + b, 0);
      const inputTokens = sum(await this.counter.count([...request.system, request.turn(0)], spec));
      const parsed = answer ? answerMessages(request.shape, answer) : undefined;
      const outputTokens = parsed?.ok ? sum(await this.counter.count(parsed.value, spec)) : null;
      const text = request
        .turn(0)
        .blocks.flatMap((b) => (b.type === 'text' ? [b.text] : []))
        .join(' ')
        .trim();
      const n = (v: number) => v.toLocaleString('en-US');
      const tokens = outputTokens === null ? `~${n(inputTokens)} tokens sent` : `~${n(inputTokens)} tokens in, ~${n(outputTokens)} out`;
      const line = `Side request to ${model} answered ${status} (${tokens}): forwarded as sent, not part of the conversation`;
      const data = { model, status, stream: request.stream, inputTokens, outputTokens, preview: text.slice(0, 120) };
      const eventId = await this.compactions.event(main.id, main.tenantId, 'side-request', line, data);
      this.publisher.notify(main.id, eventId);
    } catch (error) {
      this.logger.warn({ sessionId: main.externalId, reason: error instanceof Error ? error.message : String(error) }, 'proxy: side request not reported');
    }
  }

  /** What the request adds to the budget: its max_tokens, its tool schemas, its own system prompt and a prefill. */
  private async limits(session: SessionRecord, request: ProxyRequest, storedSystemTokens: number): Promise<ContextLimits> {
    const spec = resolveModel(session.model).spec;
    const systemTokens = request.system.length > 0 ? await this.counter.countRepeated(request.system, spec) : 0;
    const prefillTokens = request.prefill ? await this.counter.countRepeated([request.message(request.end)], spec) : 0;
    return {
      maxTokens: request.maxTokens,
      toolSchemaTokens: await this.toolTokens(spec, request),
      extraTokens: systemTokens - storedSystemTokens + prefillTokens,
    };
  }

  /**
   * The session remembers its requests' max_tokens and tool-schema tokens (SPEC.md "Budget"), so the worker compacts to
   * the budget the next request will have. Written only when they changed, off the request's path.
   */
  private rememberLimits(session: SessionRecord, request: ProxyRequest, limits: ContextLimits): void {
    const maxTokens = request.maxTokens ?? null;
    const toolSchemaTokens = limits.toolSchemaTokens ?? 0;
    if ((maxTokens === null || session.requestMaxTokens === maxTokens) && session.toolSchemaTokens === toolSchemaTokens) return;
    this.sessions.recordRequestLimits(session.id, { maxTokens, toolSchemaTokens }).catch((error: unknown) => {
      this.logger.warn({ sessionId: session.externalId, reason: error instanceof Error ? error.message : String(error) }, 'proxy: request limits not remembered');
    });
  }

  private toolTokens(spec: ModelSpec, request: ProxyRequest): Promise<number> {
    const tools = request.body.tools;
    return this.counter.countToolSchemas(Array.isArray(tools) ? tools : [], spec);
  }

  /**
   * Errors the proxy answers itself, in the provider's error shape; every refusal is logged at warn with its reason (the
   * messages name fields and limits, never a key). Upstream errors never get here: they pass through.
   */
  private fail(provider: ProxyProvider, res: Response, error: unknown): void {
    const refusal = this.refusal(error);
    if (!refusal) {
      this.logger.error({ err: error }, 'proxy request failed');
      return sendProviderError(res, provider, 500, 'Compactor proxy: internal error', 'internal_error');
    }
    this.logger.warn({ provider, status: refusal.status, code: refusal.code, reason: refusal.message }, 'proxy: request refused');
    sendProxyError(res, provider, refusal);
  }

  private refusal(error: unknown): ProxyError | undefined {
    if (error instanceof ProxyError) return error;
    if (error instanceof RateLimited) return rateLimitedProxyError(error);
    if (error instanceof BudgetTooSmall) return new ProxyError(422, 'budget_too_small', `Compactor proxy: ${error.message}`);
    if (error instanceof ValidationFailed) return new ProxyError(400, 'invalid_request', `Compactor proxy: ${error.message}`);
    if (error instanceof HistoryMoved) return new ProxyError(409, 'conflict', 'Compactor proxy: the conversation changed concurrently; send the request again');
    if (error instanceof DomainError) return new ProxyError(400, error.code, `Compactor proxy: ${error.message}`);
    return undefined;
  }

  /** The request's key (X-Compactor-Key), counted against its key's and tenant's requests per minute. */
  private async admitted(req: Request, res: Response): Promise<AuthContext> {
    const auth = await this.auth.authenticate(req.headers);
    await this.rateLimits.requireRequest(req, res, auth);
    return auth;
  }

}
