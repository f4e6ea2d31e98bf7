import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import {
  BudgetTooSmall,
  ConversationMatch,
  derivedSessionId,
  DomainError,
  matchConversation,
  MessageKeys,
  messageKeys,
  parseAnthropicMessages,
  parseOpenAIMessages,
  parseResponsesInput,
  ingestTransform,
  ParseResult,
  CanonicalMessage,
  PolicyInput,
  RateLimited,
  recalibrated,
  referencedForeignToolUseIds,
  SessionMessage,
  validateSequence,
  ValidationFailed,
} from '@compactor/compaction';
import { EventPublisher } from '@compactor/jobs';
import { CompactionRepository, Prisma, SessionConfig, SessionRecord, SessionRepository } from '@compactor/persistence';
import { ModelSpec, resolveModel } from '@compactor/tokens';
import type { Request, Response } from 'express';
import { createHash, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { AuthContext } from '../auth/scopes';
import { RateLimits } from '../limits/rate-limits';
import { LOGGER } from '../logging/logger';
import { AppendOptions, AppendService, HistoryMoved } from '../sessions/append.service';
import { MAX_MESSAGES_PER_APPEND } from '../sessions/append.dto';
import { ContextLimits, ContextService } from '../sessions/context.service';
import { policyJson, resolveSessionConfig, sessionPolicy } from '../sessions/session-config';
import { MessageTokenCounter } from '../tokens/message-token-counter';
import { answerAssembler } from './answer-assembler';
import { ConversationStore, StoredConversation } from './conversation-store';
import { forwardBody } from './forward-body';
import { ParsedItems, policyHeader, providerOf, ProxyRequest, ProxyShape, sessionIdHeader } from './proxy-request';
import { ProxyAuth } from './proxy-auth';
import { ProxySettings, UpstreamSettings } from './proxy-settings';
import { ProxyError, ProxyProvider, rateLimitedProxyError, sendProviderError, sendProxyError } from './provider-errors';
import { passThroughPath } from './pass-through-path';
import { KeyedLock } from './session-lock';
import { ArrayPlace, unchangedElements } from './json-scan';
import { storedForm } from './stored-form';
import { TenantDefaults } from '../tenant/tenant-defaults';
import { clientHeaders, UpstreamClient, UpstreamExchange, upstreamHeaders } from './upstream';

/** Where a request's new messages went once stored: the answer is recorded after `afterSeq` in `session`. */
/** `context`'s tokens with each message that stood in at its upper bound (one of `bounded`) at its exact count instead. */
function exactTokens(context: readonly SessionMessage[], bounded: readonly SessionMessage[], exact: readonly SessionMessage[]): number {
  const exactOf = new Map(bounded.map((m, k) => [m.message, exact[k]?.tokens ?? m.tokens]));
  return context.reduce((n, m) => n + (exactOf.get(m.message) ?? m.tokens), 0);
}

/** Token counts the proxy made before forwarding, for the request's last messages, with the model they were counted for. */
type Precounted = NonNullable<AppendOptions['precounted']>;

interface Committed {
  session: SessionRecord;
  afterSeq: number;
}

/** A value settled once, by whichever path gets there first (the upstream's answer, or a failure before it). */
class Settled<T> {
  readonly promise: Promise<T>;
  private resolve!: (value: T | Promise<T>) => void;
  private done = false;

  constructor() {
    this.promise = new Promise<T>((resolve) => (this.resolve = resolve));
  }

  settle(value: T | Promise<T>): Promise<T> {
    if (!this.done) {
      this.done = true;
      this.resolve(value);
    }
    return this.promise;
  }
}

/**
 * A request's new messages: forwarded at the seqs they will get, stored by `commit` only once the upstream answered 2xx.
 * `release` settles with what became of them; the conversation's lock is held until then.
 */
interface PendingWrite {
  /** At their exact counts, or (while `exact` is counting) at upper bounds of them. */
  messages: SessionMessage[];
  /** The same messages at their exact counts, when `messages` carries upper bounds. */
  exact?: Promise<SessionMessage[]>;
  commit(): Promise<Committed | undefined>;
  release: Settled<Committed | undefined>;
}

/** Where a request's conversation lives, and how much of it to forward. */
interface Resolution {
  /** The session, or (for a first request, a fork) the one that will be created: not stored yet. */
  session: SessionRecord;
  /** Forward history through this seq only (a retried request whose answer is already stored). */
  throughSeq?: number;
  /** Record the answer, appended after this seq; undefined: do not record (unless `pending` says where). */
  recordAfterSeq?: number;
  pending?: PendingWrite;
  /** Request conversation index → stored seq. */
  seqOf: Array<number | undefined>;
  /** The stored conversation, when it was read and its leading system prompts are known. */
  stored?: StoredConversation;
  forkedFrom?: string;
  /** A side request (see isOneShot) of the conversation in `session`: forwarded as sent, reported, never stored. */
  side?: true;
}

interface Candidate {
  session: SessionRecord;
  stored: StoredConversation;
  match: ConversationMatch;
}

/** What hears of the end of an upstream answer: the assembled message of a complete 2xx answer (else undefined). */
interface AnswerHandler {
  stream: boolean;
  /** The answer's shape, when not the provider's own messages (a Responses answer). */
  shape?: ProxyShape;
  /** `inputTokens`: the prompt tokens the upstream reported for the request, when it did. */
  onEnd(message: Record<string, unknown> | undefined, status: number, clientGone: boolean, inputTokens?: number): void;
}

function hasTools(request: ProxyRequest): boolean {
  const { tools, functions } = request.body;
  return (Array.isArray(tools) && tools.length > 0) || (Array.isArray(functions) && functions.length > 0);
}

/**
 * A side request: one user message and no tools. Agents send such one-shots under the conversation's headers (a title,
 * topic or summary prompt, often on a small model); when the session's conversation does not start with that message,
 * the request is not the conversation and never forks it.
 */
function isOneShot(request: ProxyRequest): boolean {
  return request.conversationLength === 1 && !hasTools(request) && request.turn(0).role === 'user';
}

/** Whether a stored conversation is one user message without tool blocks, with at most an answer that calls no tool. */
function isToolLessOneShot(stored: StoredConversation): boolean {
  const [question, answer, ...rest] = stored.keys;
  if (!question || rest.length > 0) return false;
  // Keys start with their role group (u, a, r: a tool result) and block type (c: a tool call); see blockKey.
  return question.keys.every((k) => k[0] === 'u') && (!answer || answer.keys.every((k) => k[0] === 'a' && k[1] !== 'c'));
}

/** A session the request creates once the upstream accepted it: what assembling its context needs; nothing is stored yet. */
function transientSession(tenantId: string, externalId: string, config: SessionConfig): SessionRecord {
  const now = new Date();
  // The columns' database defaults (prisma/schema.prisma) for the fields a new row gets besides its config.
  const defaults = { requestMaxTokens: null, toolSchemaTokens: 0, calibration: 1, compactionHoldTokens: null };
  return {
    ...defaults,
    id: randomUUID(),
    tenantId,
    externalId,
    ...config,
    goal: null,
    headVersionId: null,
    lastSeq: 0,
    lastRole: null,
    openToolUseIds: [],
    historyTokens: 0,
    contextTokens: 0,
    systemTokens: 0,
    utilization: 0,
    compactions: 0,
    reliability: null,
    contextConfidence: null,
    createdAt: now,
    updatedAt: now,
    lastActivityAt: now,
  };
}

/** A recorded answer (the assembler's) as canonical messages: the provider's assistant message, or a Responses answer's output items. */
function answerMessages(shape: ProxyShape, answer: Record<string, unknown>): ParseResult<CanonicalMessage[]> {
  if (shape === 'responses') return parseResponsesInput(answer.output, 'output');
  return (shape === 'anthropic' ? parseAnthropicMessages : parseOpenAIMessages)([answer], 'messages');
}

/** What the response to a request chained by `previous_response_id` says (SPEC.md, the proxy; docs/providers.md). */
export const NOT_COMPACTED_HEADER = 'x-compactor-not-compacted';
const CHAINED_REASON = 'previous_response_id: the upstream holds this conversation, so Compactor forwarded the request untouched and cannot compact it';

const MAX_REDIRECTS = 10_000;
/** Bytes of request bodies the key cache holds, all conversations together. */
const KEY_CACHE_BYTES = 64 * 1024 * 1024;
/** Bytes of Responses request bodies whose parsed items are kept (the parsed objects take a few times their bytes). */
const ITEM_CACHE_BYTES = 32 * 1024 * 1024;
const MAX_FORKS = 1_000;

/** Stage durations of one proxied request, as a Server-Timing header: `compactor` is the whole work before forwarding. */
class StageTimer {
  private readonly started = performance.now();
  private last = this.started;
  private readonly stages: string[] = [];

  mark(stage: string): void {
    const now = performance.now();
    this.stages.push(`${stage};dur=${(now - this.last).toFixed(1)}`);
    this.last = now;
  }

  header(): string {
    return [`compactor;dur=${(this.last - this.started).toFixed(1)};desc="Compactor proxy before forwarding"`, ...this.stages].join(', ');
  }
}

const sha1 = (text: string) => createHash('sha1').update(text).digest('base64url');

/** `<root>:fork-<n>` or `<root>:side-<n>`, kept within the 128 characters of a session id. */
export function familyName(root: string, kind: 'fork' | 'side', n: number): string {
  const suffix = `:${kind}-${n}`;
  if (root.length + suffix.length <= 128) return `${root}${suffix}`;
  return `${root.slice(0, 128 - suffix.length - 9)}.${sha1(root).replace(/[^A-Za-z0-9]/g, '').slice(0, 8)}${suffix}`;
}

export const forkName = (root: string, n: number): string => familyName(root, 'fork', n);

/**
 * The drop-in proxy (SPEC.md, REST API): records a request's new messages through the append
 * path, forwards the session's compacted context instead of the client's history (with the
 * request's own system prompt, tools and parameters), streams the upstream's answer back byte
 * for byte and records it. A client whose history no longer matches its session's gets a fork.
 */
@Injectable()
export class ProxyService implements OnModuleDestroy {
  private readonly upstream = new UpstreamClient();
  private readonly locks = new KeyedLock();
  /** Conversation key → the session (a fork) its history last matched, tried first. */
  private readonly redirects = new Map<string, string>();
  /** Per conversation, its last request's body, message byte ranges and message keys (see conversationKeys). */
  private readonly keyCache = new Map<string, { place: ArrayPlace; keys: Array<MessageKeys | undefined> }>();
  private keyCacheBytes = 0;
  /** Per key and session header, a Responses request's parsed `input` items (see ParsedItems), for bodies of ITEM_CACHE_BYTES in all. */
  private readonly itemCache = new Map<string, ParsedItems>();
  private itemCacheBytes = 0;
  /** Sessions moved aside (a one-shot under a name a conversation took) → their new external id, for their answer. */
  private readonly renamed = new Map<string, string>();

  constructor(
    private readonly auth: ProxyAuth,
    private readonly settings: ProxySettings,
    private readonly sessions: SessionRepository,
    private readonly store: ConversationStore,
    private readonly appends: AppendService,
    private readonly contexts: ContextService,
    private readonly compactions: CompactionRepository,
    private readonly publisher: EventPublisher,
    private readonly counter: MessageTokenCounter,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly tenantDefaults: TenantDefaults,
    private readonly rateLimits: RateLimits,
  ) {}

  onModuleDestroy(): void {
    this.upstream.close();
  }

  /** `POST /v1/proxy/anthropic/v1/messages`, `POST /v1/proxy/openai/v1/chat/completions` and `POST /v1/proxy/openai/v1/responses`. */
  async messages(shape: ProxyShape, req: Request, res: Response): Promise<void> {
    const provider = providerOf(shape);
    const timing = new StageTimer();
    try {
      // The key is checked while the body is read (nothing is forwarded or stored before it passed).
      const authenticated = this.admitted(req, res);
      authenticated.catch(() => undefined);
      const keyHash = this.auth.keyHash(req.headers);
      // A Responses request's items parsed for the conversation's previous request (found by key and session header) are
      // reused where the bytes are the same; which entry is offered never changes the result, only what is parsed again.
      const itemsKey = shape === 'responses' ? `${keyHash ?? ''}\u0000${String(req.headers['x-compactor-session'] ?? '')}` : undefined;
      let request: ProxyRequest;
      try {
        request = ProxyRequest.parse(shape, req.body, itemsKey === undefined ? undefined : this.itemCache.get(itemsKey));
      } catch (error) {
        await authenticated; // a bad key answers 401 whatever the body
        throw error;
      }
      timing.mark('read');
      // The session row is read along with the key check (one round trip less on the request's path); it is used only if no
      // proxied request finished meanwhile (it could have changed the row), else read again under the conversation's lock.
      const generation = this.locks.generation;
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
      if (itemsKey !== undefined) this.rememberItems(itemsKey, request.parsedItems);
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
        await this.relay(provider, res, await this.send(provider, upstream, req, path, req.body as Buffer), {});
        return;
      }
      // What a request appends is counted once stored (after the upstream answered); a tenant over its appended tokens per
      // minute is refused here, before anything is forwarded.
      await this.rateLimits.requireAppendRoom(auth.tenantId);
      const requestedId = prefetchId!;
      const policy = policyHeader(req.headers);
      const lockKey = `${auth.tenantId}\u0000${requestedId}`;
      const keys = this.conversationKeys(lockKey, request);
      timing.mark('compare');
      // A one-shot request without tools that the stored conversation does not start with is a side request: forwarded
      // as sent without waiting for the conversation's lock, reported as an event, never stored in the history.
      const early = isOneShot(request) ? await this.sideRequestOf(auth.tenantId, requestedId, keys, prefetch) : undefined;
      const resolved =
        early ??
        (await this.resolveHolding(lockKey, async () => {
          const fresh = prefetch && this.locks.generation === generation ? await prefetch.catch(() => undefined) : undefined;
          return this.resolve(auth.tenantId, requestedId, lockKey, request, keys, policy, fresh);
        }));
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
        const exchange = await this.send(provider, upstream, req, path, payload);
        // Counted while the request was forwarded: the context's tokens with the exact counts of the messages it holds.
        const contextTokens = pending?.exact ? exactTokens(context.messages, pending.messages, await pending.exact.catch(() => pending.messages)) : context.tokens;
        // The request's new messages (a new session, a fork) are stored only once the upstream accepted the request: one it
        // refused, or that never got an answer, leaves the history as it was. The conversation's lock waits for the write.
        const status = exchange.response.statusCode ?? 502;
        const accepted = status >= 200 && status < 300;
        const target: Promise<Committed | undefined> | undefined = resolved.pending
          ? resolved.pending.release.settle(accepted ? resolved.pending.commit() : undefined)
          : resolved.recordAfterSeq === undefined
            ? undefined
            : Promise.resolve({ session: resolved.session, afterSeq: resolved.recordAfterSeq });
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
        const calibrate = (session: SessionRecord, reported: number | undefined) => this.recalibrate(session, estimated, reported);
        await this.relay(provider, res, exchange, headers, target && this.recorder(shape, lockKey, auth.tenantId, request.stream, target, calibrate));
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
      for (const id of new Set([this.redirects.get(lockKey), requestedId])) {
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
    const exchange = await this.send('openai', upstream, req, path, req.body as Buffer);
    await this.relay('openai', res, exchange, { 'server-timing': serverTiming, [NOT_COMPACTED_HEADER]: CHAINED_REASON });
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
      const path = passThroughPath(upstream.baseUrl[provider], req.originalUrl.slice(`/v1/proxy/${provider}`.length) || '/');
      const body = Buffer.isBuffer(req.body) && req.body.length > 0 ? req.body : undefined;
      const exchange = await this.upstream.send({ provider, baseUrl: upstream.baseUrl[provider], path, method: req.method, headers: upstreamHeaders(req.headers), body, timeoutMs: upstream.timeoutMs });
      await this.relay(provider, res, exchange, {});
    } catch (error) {
      this.fail(provider, res, error);
    }
  }

  private send(provider: ProxyProvider, upstream: UpstreamSettings, req: Request, path: string, body: Buffer): Promise<UpstreamExchange> {
    const query = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?')) : '';
    return this.upstream.send({
      provider,
      baseUrl: upstream.baseUrl[provider],
      path: `${path}${query}`,
      method: 'POST',
      // The answer is read as it passes, so it must come uncompressed.
      headers: upstreamHeaders(req.headers, { 'accept-encoding': 'identity', 'content-type': 'application/json' }),
      body,
      timeoutMs: upstream.timeoutMs,
    });
  }

  /**
   * The upstream's status, headers and body go to the client as they are, bytes piped (never
   * re-serialized); `answer` hears of the end of the answer, assembled when it was a complete 2xx.
   */
  private relay(provider: ProxyProvider, res: Response, exchange: UpstreamExchange, headers: Record<string, string>, answer?: AnswerHandler): Promise<void> {
    const upstream = exchange.response;
    const status = upstream.statusCode ?? 502;
    res.statusCode = status;
    for (const [name, value] of Object.entries(clientHeaders(upstream.headers))) res.setHeader(name, value);
    for (const [name, value] of Object.entries(headers)) {
      const theirs = upstream.headers[name];
      // A header both send (Server-Timing) keeps the upstream's entries too.
      res.setHeader(name, theirs === undefined || !name.startsWith('server-timing') ? value : [...[theirs].flat(), value].join(', '));
    }
    res.flushHeaders();
    const assembler = answer && status >= 200 && status < 300 ? answerAssembler(answer.shape ?? provider, answer.stream) : undefined;
    return new Promise<void>((resolve) => {
      if (assembler) upstream.on('data', (chunk: Buffer) => assembler.push(chunk));
      upstream.on('end', () => answer?.onEnd(assembler?.message(), status, res.destroyed, assembler?.inputTokens()));
      upstream.on('error', () => undefined);
      upstream.on('close', () => {
        // Cut short (reset, or our timeout between two chunks): the client's answer is cut short too.
        if (!upstream.complete) res.destroy();
        resolve();
      });
      res.on('close', () => {
        if (!res.writableFinished) exchange.abort();
      });
      upstream.pipe(res);
    });
  }

  /**
   * Records a complete 2xx answer in the session its request's messages went to, queued on the conversation's lock
   * before the client sees the end, so the conversation's next request finds it stored.
   */
  private recorder(
    shape: ProxyShape,
    lockKey: string,
    tenantId: string,
    stream: boolean,
    target: Promise<Committed | undefined>,
    calibrate?: (session: SessionRecord, reported: number | undefined) => void,
  ): AnswerHandler {
    return {
      stream,
      shape,
      onEnd: (message, _status, clientGone, inputTokens) => {
        if (!message || clientGone) return;
        void this.locks.run(lockKey, async () => {
          const into = await target;
          if (!into) return;
          await this.record(tenantId, into, shape, message);
          calibrate?.(into.session, inputTokens);
        });
      },
    };
  }

  /**
   * SPEC.md "Budget": the proxy recalibrates a session from the upstream's reported prompt tokens, so the budget follows the
   * provider's own count (our estimates for approximate tokenizers drift). Written only when it moved by 2% or more.
   */
  private recalibrate(session: SessionRecord, estimated: number, reported: number | undefined): void {
    if (reported === undefined) return;
    const next = recalibrated(session.calibration, estimated, reported, resolveModel(session.model).spec.accuracy === 'exact');
    if (next === undefined) return;
    this.sessions.recalibrate(session.id, next).catch((error: unknown) => {
      this.logger.warn({ sessionId: session.externalId, reason: error instanceof Error ? error.message : String(error) }, 'proxy: calibration not stored');
    });
  }

  private async record(tenantId: string, into: Committed, shape: ProxyShape, message: Record<string, unknown>): Promise<void> {
    const sessionId = into.session.id;
    // A one-shot session moved aside meanwhile (see takeName) has a new external id; the append checks the internal one.
    const externalId = this.renamed.get(sessionId) ?? into.session.externalId;
    try {
      const parsed = answerMessages(shape, message);
      // A Responses answer's output items are stored as their canonical messages (they keep the items' own fields).
      const body = shape === 'responses' ? (parsed.ok ? { messages: parsed.value, format: 'canonical' as const } : undefined) : { messages: [message], format: shape };
      if (!body) throw new Error(`the answer's output items do not parse: ${parsed.ok ? '' : parsed.errors.map((e) => `${e.field} ${e.message}`).join('; ')}`);
      await this.appends.append(tenantId, externalId, body, undefined, { expectLastSeq: into.afterSeq, expectSessionId: sessionId, appendedTokens: 'charge' });
      if (parsed.ok) this.store.extend(sessionId, into.afterSeq, parsed.value.map(messageKeys));
    } catch (error) {
      // Another request of the conversation came first: its messages (this answer among them) are what the history holds.
      if (error instanceof HistoryMoved) return;
      this.logger.warn({ sessionId: externalId, reason: error instanceof Error ? error.message : String(error) }, 'proxy: the answer was not recorded');
    }
  }

  /**
   * A side request (see isOneShot) is forwarded exactly as the client sent it (no history, no compaction) and reported
   * on the conversation's session as a `side-request` event with its model, status and tokens; nothing enters a history.
   */
  private async forwardSide(provider: ProxyProvider, upstream: UpstreamSettings, req: Request, res: Response, path: string, request: ProxyRequest, main: SessionRecord, timing: StageTimer): Promise<void> {
    const serverTiming = timing.header();
    const exchange = await this.send(provider, upstream, req, path, req.body as Buffer);
    const headers = { 'server-timing': serverTiming, 'x-compactor-side-request': main.externalId };
    await this.relay(provider, res, exchange, headers, {
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

  /** Before the lock: a one-shot request that the named session's stored conversation does not start with is a side request. */
  private async sideRequestOf(tenantId: string, requestedId: string, keys: MessageKeys[], prefetch: Promise<SessionRecord | null> | undefined): Promise<Resolution | undefined> {
    const prefetched = prefetch ? await prefetch.catch(() => undefined) : undefined;
    const session = prefetched && prefetched.tenantId === tenantId ? prefetched : prefetched === null ? null : await this.sessions.find(tenantId, requestedId);
    if (!session) return undefined;
    const stored = await this.store.load(session);
    return matchConversation(stored.keys, keys, stored.leadingSystemSeqs.at(-1) ?? 0).kind === 'diverged' ? { session, side: true, seqOf: [] } : undefined;
  }

  /**
   * Runs `resolve` under the conversation's lock and keeps the lock until the request's new
   * messages are stored or given up, so the conversation's next request (and this one's answer) come after them.
   */
  private resolveHolding(lockKey: string, resolve: () => Promise<Resolution>): Promise<Resolution> {
    return new Promise<Resolution>((done, fail) => {
      void this.locks.run(lockKey, async () => {
        let resolved: Resolution;
        try {
          resolved = await resolve();
        } catch (error) {
          fail(error);
          return;
        }
        done(resolved);
        await resolved.pending?.release.promise;
      });
    });
  }

  /**
   * Finds the session the request's conversation continues, or plans the session it creates (new, a fork, or one that
   * takes the name from a one-shot); nothing is written here: new messages are stored once the upstream accepted them.
   */
  private async resolve(
    tenantId: string,
    requestedId: string,
    lockKey: string,
    request: ProxyRequest,
    keys: MessageKeys[],
    policy: PolicyInput | undefined,
    /** The requested session's row read just before (null: not there), when still current. */
    prefetched?: SessionRecord | null,
  ): Promise<Resolution> {
    const tried = new Map<string, Candidate>();
    const redirect = this.redirects.get(lockKey);
    for (const id of redirect && redirect !== requestedId ? [redirect, requestedId] : [requestedId]) {
      const usePrefetched = id === requestedId && prefetched !== undefined && (prefetched === null || prefetched.tenantId === tenantId);
      const session = usePrefetched ? prefetched : await this.sessions.find(tenantId, id);
      if (!session) {
        if (id === requestedId) return this.create(tenantId, requestedId, request, keys, policy);
        continue;
      }
      const candidate = await this.compare(session, keys);
      tried.set(id, candidate);
      const used = await this.continueIn(tenantId, candidate, request, keys);
      if (used) {
        this.remember(lockKey, requestedId, id);
        return used;
      }
    }
    // A rewind to another branch the client already took (a fork) is followed, not forked again.
    for (const session of await this.sessions.findFamily(tenantId, requestedId)) {
      if (tried.has(session.externalId)) continue;
      const candidate = await this.compare(session, keys);
      tried.set(session.externalId, candidate);
      const used = await this.continueIn(tenantId, candidate, request, keys);
      if (used) {
        this.remember(lockKey, requestedId, session.externalId);
        return used;
      }
    }
    const named = tried.get(requestedId);
    if (isOneShot(request)) return { session: named?.session ?? [...tried.values()][0].session, side: true, seqOf: [] };
    // A run whose requests carried tools (the session remembers their schemas) is a conversation, even when its only
    // answer so far called none: a different run under its name forks from it instead of moving it aside.
    if (named && hasTools(request) && isToolLessOneShot(named.stored) && named.session.toolSchemaTokens === 0) return this.takeName(tenantId, requestedId, lockKey, named.session, request, keys, policy);
    const closest = [...tried.values()].sort(
      (a, b) => (b.match.kind === 'diverged' ? b.match.commonBlocks : 0) - (a.match.kind === 'diverged' ? a.match.commonBlocks : 0),
    )[0];
    return this.fork(tenantId, requestedId, lockKey, closest.session, closest.match, request, keys);
  }

  private async compare(session: SessionRecord, keys: MessageKeys[]): Promise<Candidate> {
    const stored = await this.store.load(session);
    return { session, stored, match: matchConversation(stored.keys, keys, stored.leadingSystemSeqs.at(-1) ?? 0) };
  }

  private remember(lockKey: string, requestedId: string, usedId: string): void {
    if (usedId === requestedId) {
      this.redirects.delete(lockKey);
      return;
    }
    if (this.redirects.size >= MAX_REDIRECTS) this.redirects.delete(this.redirects.keys().next().value as string);
    this.redirects.set(lockKey, usedId);
  }

  /** The request continues the candidate's session (or retries its last request). Undefined when it diverged. */
  private async continueIn(tenantId: string, { session, stored, match }: Candidate, request: ProxyRequest, keys: MessageKeys[]): Promise<Resolution | undefined> {
    if (match.kind === 'diverged') return undefined;
    if (match.kind === 'behind') return { session, throughSeq: match.matchedThroughSeq, seqOf: match.seqOf, stored };
    if (session.lastSeq === 0) {
      // A session created empty (POST /v1/sessions with its own window or policy): it takes the system prompt too.
      return this.pendingConversation(session, request, keys, async (precounted) => {
        const appended = await this.appendConversation(tenantId, session.externalId, request, { expectLastSeq: 0, session, precounted });
        return { session: appended.session, afterSeq: appended.session.lastSeq };
      });
    }
    if (match.newFrom >= request.conversationLength) return { session, recordAfterSeq: session.lastSeq, seqOf: match.seqOf, stored };
    return this.pendingTurn(tenantId, session, stored, match, request, keys);
  }

  /**
   * The usual turn (new messages after the stored history): checked here as the append path will check them (the same
   * sequence validation against the locked session's state), forwarded at the seqs they will get, appended once the
   * upstream accepted the request.
   */
  private async pendingTurn(
    tenantId: string,
    session: SessionRecord,
    stored: StoredConversation,
    match: Extract<ConversationMatch, { kind: 'extends' }>,
    request: ProxyRequest,
    keys: MessageKeys[],
  ): Promise<Resolution> {
    const start = request.leading + match.newFrom;
    const fresh = Array.from({ length: request.end - start }, (_, j) => request.message(start + j));
    const open = new Set(session.openToolUseIds);
    // Results for calls no longer open are valid when the calls are in the stored history (the append path's rule).
    const foreign = referencedForeignToolUseIds(fresh).filter((id) => !open.has(id));
    const seenToolUseIds = new Set(await this.store.knownToolUseIds(session.id, foreign));
    const checked = validateSequence({ lastRole: session.lastRole, openToolUseIds: session.openToolUseIds, seenToolUseIds }, fresh, 'messages');
    if (checked.errors.length > 0) {
      throw new ValidationFailed(checked.errors.map((e) => ({ ...e, field: request.clientField(e.field.replace(/^messages\[(\d+)\]/, (_, j: string) => `messages[${start + Number(j)}]`)) })));
    }
    const tokens = await this.counter.count(fresh, resolveModel(session.model).spec);
    const messages = fresh.map((message, j) => ({ seq: session.lastSeq + 1 + j, message: storedForm(message), tokens: tokens[j] }));
    const seqOf = match.seqOf.map((seq, k) => (k >= match.newFrom ? session.lastSeq + 1 + (k - match.newFrom) : seq));
    const pending = this.pendingWrite(messages, session.externalId, async () => {
      const { format, rows } = request.appendRows(start, request.end);
      const done = await this.appendAll(tenantId, session.externalId, format, rows, {
        expectLastSeq: session.lastSeq,
        session,
        precounted: { model: session.model, tokens },
      });
      this.store.extend(session.id, session.lastSeq, keys.slice(match.newFrom));
      return { session: done.session, afterSeq: done.session.lastSeq };
    });
    return { session, seqOf, stored, pending };
  }

  /**
   * A whole conversation for a session that holds none yet (`target`: a session to create, or one created empty),
   * checked as the append path will check it and forwarded at the seqs it will get; `write` stores it.
   */
  private async pendingConversation(target: SessionRecord, request: ProxyRequest, keys: MessageKeys[], write: (precounted: Precounted) => Promise<Committed>): Promise<Resolution> {
    const all = Array.from({ length: request.end }, (_, i) => request.message(i));
    const checked = validateSequence({ lastRole: target.lastRole, openToolUseIds: target.openToolUseIds, seenToolUseIds: new Set() }, all, 'messages');
    if (checked.errors.length > 0) throw new ValidationFailed(checked.errors.map((e) => ({ ...e, field: request.clientField(e.field) })));
    // Anthropic's system prompt is stored as one row before the conversation; OpenAI's leading system messages as theirs.
    const first = (request.provider === 'anthropic' ? (request.body.system !== undefined ? 1 : 0) : request.leading) + 1;
    const conversation = all.slice(request.leading);
    // A whole conversation is counted on the pool's threads while the request is prepared and forwarded; meanwhile each
    // message stands in at an upper bound of its count (its bytes), which decides nothing unless it would not fit.
    // (A preset with a per-result step at ingest compares counts to choose its form: it gets the exact counts first.)
    const spec = resolveModel(target.model).spec;
    const lazy = ingestTransform(sessionPolicy(target)) === undefined;
    const counting = this.counter.count(conversation, spec, { offThread: lazy });
    counting.catch(() => undefined);
    const bounds = lazy ? this.counter.upperBounds(conversation, spec) : await counting;
    const messages = conversation.map((message, k) => ({ seq: first + k, message: storedForm(message), tokens: bounds[k] }));
    const pending = this.pendingWrite(messages, target.externalId, async () => write({ model: target.model, tokens: await counting }));
    if (lazy) pending.exact = counting.then((tokens) => messages.map((m, k) => ({ ...m, tokens: tokens[k] })));
    return {
      session: target,
      seqOf: keys.map((_, k) => first + k),
      // The request's own system prompt goes first in the forwarded body; nothing is stored before it.
      stored: { throughSeq: 0, leadingSystemSeqs: [], leadingSystemTokens: 0, leadingDone: true, keys: [] },
      // The counts made here are the append's too: the write does not count the conversation again.
      pending,
    };
  }

  /** New messages and the write that stores them; a write that fails is logged and leaves the answer unrecorded. */
  private pendingWrite(messages: SessionMessage[], externalId: string, write: () => Promise<Committed>): PendingWrite {
    return {
      messages,
      release: new Settled<Committed | undefined>(),
      commit: () =>
        write().catch((error: unknown) => {
          // Not stored after all (a concurrent change, a rule only the locked row shows): the answer is not recorded, and
          // the client's next request, which carries these messages again, stores them then.
          if (!(error instanceof HistoryMoved)) this.logger.warn({ sessionId: externalId, reason: error instanceof Error ? error.message : String(error) }, 'proxy: new messages not stored');
          return undefined;
        }),
    };
  }

  /** The first request of a conversation: a new session with the request's model, holding the whole conversation. */
  private async create(tenantId: string, externalId: string, request: ProxyRequest, keys: MessageKeys[], requested: PolicyInput | undefined): Promise<Resolution> {
    // Without X-Compactor-Policy the session takes the tenant's default policy, for the first request's budget too.
    const policy = requested ?? (await this.tenantDefaults.policy(tenantId));
    const config = resolveSessionConfig({ model: request.model, policy });
    const target = transientSession(tenantId, externalId, { model: config.model, contextWindow: config.contextWindow, outputReserve: config.outputReserve, policy: policyJson(config.policy) });
    return this.pendingConversation(target, request, keys, async (precounted) => {
      const appended = await this.appendConversation(tenantId, externalId, request, { expectLastSeq: 0, session: null, model: request.model, policy, precounted });
      return { session: appended.session, afterSeq: appended.session.lastSeq };
    });
  }

  /**
   * The name's session holds only a one-shot exchange without tools (a title request that came first) and a conversation
   * with tools that does not continue it arrives: that conversation takes the name, and the one-shot moves to
   * `<id>:side-<n>` (both get a `side-request` event), once the upstream accepted the conversation's request.
   */
  private takeName(
    tenantId: string,
    requestedId: string,
    lockKey: string,
    oneShot: SessionRecord,
    request: ProxyRequest,
    keys: MessageKeys[],
    policy: PolicyInput | undefined,
  ): Promise<Resolution> {
    const config = resolveSessionConfig({ model: request.model, policy: policy ?? sessionPolicy(oneShot) });
    const target = transientSession(tenantId, requestedId, { model: config.model, contextWindow: config.contextWindow, outputReserve: config.outputReserve, policy: policyJson(config.policy) });
    return this.pendingConversation(target, request, keys, async (precounted) => {
      let sideId: string | undefined;
      for (let n = 1; !sideId && n <= MAX_FORKS; n++) if (await this.sessions.rename(oneShot.id, familyName(requestedId, 'side', n))) sideId = familyName(requestedId, 'side', n);
      if (!sideId) throw new ProxyError(409, 'too_many_side_sessions', `Compactor proxy: session '${requestedId}' already has ${MAX_FORKS} side sessions`);
      if (this.renamed.size >= MAX_REDIRECTS) this.renamed.delete(this.renamed.keys().next().value as string);
      this.renamed.set(oneShot.id, sideId);
      this.remember(lockKey, requestedId, requestedId);
      const appended = await this.appendConversation(tenantId, requestedId, request, { expectLastSeq: 0, session: null, model: request.model, policy: config.policy, precounted });
      const data = { sessionId: requestedId, sideSessionId: sideId, model: oneShot.model };
      const sideEvent = await this.compactions.event(oneShot.id, tenantId, 'side-request', `Moved aside to ${sideId}: a one-shot request without tools, not the conversation; ${requestedId} now holds the conversation`, data);
      const mainEvent = await this.compactions.event(appended.session.id, tenantId, 'side-request', `A one-shot request without tools that came first under this name moved to ${sideId}`, data);
      this.publisher.notify(oneShot.id, sideEvent);
      this.publisher.notify(appended.session.id, mainEvent);
      return { session: appended.session, afterSeq: appended.session.lastSeq };
    });
  }

  /**
   * The client's history differs from every stored branch (an earlier message edited, a rewind): a new session named
   * after the conversation (`<id>:fork-<n>`, forked_from_id set) takes the request's whole conversation, with the
   * parent's configuration, once the upstream accepted the request; both sessions get an event. Nothing of the parent changes.
   */
  private async fork(
    tenantId: string,
    requestedId: string,
    lockKey: string,
    parent: SessionRecord,
    match: ConversationMatch,
    request: ProxyRequest,
    keys: MessageKeys[],
  ): Promise<Resolution> {
    const freeName = async () => {
      for (let n = 1; n <= MAX_FORKS; n++) if (!(await this.sessions.find(tenantId, forkName(requestedId, n)))) return n;
      throw new ProxyError(409, 'too_many_forks', `Compactor proxy: session '${requestedId}' already has ${MAX_FORKS} forks; name the conversation with X-Compactor-Session`);
    };
    const config = { model: parent.model, contextWindow: parent.contextWindow, outputReserve: parent.outputReserve, policy: parent.policy as Prisma.InputJsonValue };
    // The name is chosen now, for the response's headers; another API process taking it meanwhile moves it on.
    const planned = await freeName();
    const target = transientSession(tenantId, forkName(requestedId, planned), config);
    const resolution = await this.pendingConversation(target, request, keys, async (precounted) => {
      let created = await this.sessions.create(tenantId, target.externalId, config);
      for (let n = planned + 1; !created && n <= MAX_FORKS; n++) created = await this.sessions.create(tenantId, forkName(requestedId, n), config);
      if (!created) throw new ProxyError(409, 'too_many_forks', `Compactor proxy: session '${requestedId}' already has ${MAX_FORKS} forks`);
      await this.sessions.markForked(created.id, parent.id);
      const appended = await this.appendConversation(tenantId, created.externalId, request, { expectLastSeq: 0, session: created, precounted });
      const at = match.kind === 'diverged' && match.divergedAtSeq !== undefined ? `message ${match.divergedAtSeq}` : `the end of its ${parent.lastSeq} messages`;
      const data = { parentSessionId: parent.externalId, forkSessionId: created.externalId, divergedAtSeq: match.kind === 'diverged' ? (match.divergedAtSeq ?? null) : null };
      const parentEvent = await this.compactions.event(parent.id, tenantId, 'session-forked', `Forked into ${created.externalId}: the client's history diverged at ${at}`, data);
      const forkEvent = await this.compactions.event(created.id, tenantId, 'session-forked', `Forked from ${parent.externalId}: the client's history diverged at ${at}`, data);
      this.publisher.notify(parent.id, parentEvent);
      this.publisher.notify(created.id, forkEvent);
      this.remember(lockKey, requestedId, created.externalId);
      return { session: appended.session, afterSeq: appended.session.lastSeq };
    });
    return { ...resolution, forkedFrom: parent.externalId };
  }

  /** Appends the request's system prompt and conversation (not a prefill) to an empty session. */
  private async appendConversation(
    tenantId: string,
    externalId: string,
    request: ProxyRequest,
    options: { expectLastSeq: number; session: SessionRecord | null; model?: string; policy?: PolicyInput; precounted?: Precounted },
  ): Promise<{ firstSeq: number; session: SessionRecord; conversationFirstSeq: number }> {
    // OpenAI's system messages are messages; Anthropic's system prompt goes as the append's `system`.
    const { format, rows } = request.appendRows(0, request.end);
    const system = request.provider === 'anthropic' ? request.body.system : undefined;
    const appended = await this.appendAll(tenantId, externalId, format, rows, { ...options, system });
    const systemRows = request.provider === 'anthropic' ? (system !== undefined ? 1 : 0) : request.leading;
    return { ...appended, conversationFirstSeq: appended.firstSeq + systemRows };
  }

  /** Appends through the append path (parsing, validation, counting, compaction scheduling), 500 messages at a time. */
  private async appendAll(
    tenantId: string,
    externalId: string,
    format: ProxyProvider | 'canonical',
    rows: unknown[],
    options: { expectLastSeq: number; session: SessionRecord | null; model?: string; policy?: PolicyInput; system?: unknown; precounted?: Precounted },
  ): Promise<{ firstSeq: number; session: SessionRecord }> {
    let session = options.session;
    let firstSeq: number | undefined;
    for (let i = 0; i < rows.length; i += MAX_MESSAGES_PER_APPEND) {
      const first = i === 0;
      const response = await this.appends.append(
        tenantId,
        externalId,
        {
          format,
          messages: rows.slice(i, i + MAX_MESSAGES_PER_APPEND),
          ...(first && options.system !== undefined ? { system: options.system } : {}),
          ...(first && options.model ? { model: options.model } : {}),
          ...(first && options.policy ? { policy: options.policy } : {}),
        },
        undefined,
        {
          expectLastSeq: session?.lastSeq ?? options.expectLastSeq,
          session,
          onAppended: (s) => (session = s),
          // Stored after the upstream accepted the request: counted then (the request was let through by requireAppendRoom).
          appendedTokens: 'charge',
          // Counts made before forwarding cover the request's last messages; they hold when the append is one batch.
          ...(options.precounted && rows.length <= MAX_MESSAGES_PER_APPEND ? { precounted: options.precounted } : {}),
        },
      );
      firstSeq ??= response.firstSeq;
    }
    if (!session || firstSeq === undefined) throw new HistoryMoved(options.expectLastSeq, 0);
    return { firstSeq, session };
  }

  /**
   * The keys of the request's conversation messages. A message whose bytes are those of the same
   * message in the conversation's previous request, at the same place in the conversation array (inside
   * the bytes both arrays share from their start; see unchangedElements) keeps its keys: it is neither
   * parsed nor normalised again.
   */
  private conversationKeys(lockKey: string, request: ProxyRequest): MessageKeys[] {
    const previous = this.keyCache.get(lockKey);
    const layout = request.layout;
    const place = layout && request.bytes ? { bytes: request.bytes, start: layout.start, ranges: layout.items } : undefined;
    const unchanged = previous && place ? unchangedElements(previous.place, place) : () => false;
    const byIndex: Array<MessageKeys | undefined> = new Array(request.messageCount);
    const keys: MessageKeys[] = [];
    for (let i = request.leading; i < request.end; i++) {
      const k = (unchanged(i) ? previous?.keys[i] : undefined) ?? messageKeys(request.message(i));
      byIndex[i] = k;
      keys.push(k);
    }
    if (previous) {
      this.keyCache.delete(lockKey);
      this.keyCacheBytes -= previous.place.bytes.length;
    }
    if (place && place.bytes.length <= KEY_CACHE_BYTES / 4) {
      this.keyCache.set(lockKey, { place, keys: byIndex });
      this.keyCacheBytes += place.bytes.length;
    }
    // Least recently used conversations go first.
    for (const [key, entry] of this.keyCache) {
      if (this.keyCacheBytes <= KEY_CACHE_BYTES) break;
      this.keyCache.delete(key);
      this.keyCacheBytes -= entry.place.bytes.length;
    }
    return keys;
  }

  /** Keeps an authenticated Responses request's parsed items for the conversation's next request; least recently used go first. */
  private rememberItems(key: string, parsed: ParsedItems | undefined): void {
    const previous = this.itemCache.get(key);
    if (previous) {
      this.itemCache.delete(key);
      this.itemCacheBytes -= previous.bytes.length;
    }
    if (!parsed || parsed.bytes.length > ITEM_CACHE_BYTES / 4) return;
    this.itemCache.set(key, parsed);
    this.itemCacheBytes += parsed.bytes.length;
    for (const [k, entry] of this.itemCache) {
      if (this.itemCacheBytes <= ITEM_CACHE_BYTES) break;
      this.itemCache.delete(k);
      this.itemCacheBytes -= entry.bytes.length;
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
