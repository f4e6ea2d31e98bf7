import { Injectable } from '@nestjs/common';
import {
  ConversationMatch,
  ingestTransform,
  matchConversation,
  MessageKeys,
  messageKeys,
  PolicyInput,
  referencedForeignToolUseIds,
  validateSequence,
  ValidationFailed,
} from '@compactor/compaction';
import { EventPublisher } from '@compactor/jobs';
import { CompactionRepository, Prisma, SessionConfig, SessionRecord, SessionRepository } from '@compactor/persistence';
import { resolveModel } from '@compactor/tokens';
import { createHash, randomUUID } from 'node:crypto';
import { policyJson, resolveSessionConfig, sessionPolicy } from '../sessions/session-config';
import { TenantDefaults } from '../tenant/tenant-defaults';
import { MessageTokenCounter } from '../tokens/message-token-counter';
import { Committed, ConversationRecorder, PendingWrite, Precounted } from './conversation-recorder';
import { ConversationStore, StoredConversation } from './conversation-store';
import { ArrayPlace, unchangedElements } from './json-scan';
import { ProxyError } from './provider-errors';
import { ParsedItems, ProxyRequest, ProxyShape } from './proxy-request';
import { KeyedLock } from './session-lock';
import { storedForm } from './stored-form';
import { LargeJsonParser, OFF_THREAD_BODY_BYTES } from '../body/large-json-body';

/** Where a request's conversation lives, and how much of it to forward. */
export interface Resolution {
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

function hasTools(request: ProxyRequest): boolean {
  const { tools, functions } = request.body;
  return (Array.isArray(tools) && tools.length > 0) || (Array.isArray(functions) && functions.length > 0);
}

/**
 * A side request: one user message and no tools. Agents send such one-shots under the conversation's headers (a title,
 * topic or summary prompt, often on a small model); when the session's conversation does not start with that message,
 * the request is not the conversation and never forks it.
 */
export function isOneShot(request: ProxyRequest): boolean {
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
  const defaults = { requestMaxTokens: null, toolSchemaTokens: 0, calibration: 1, compactionHoldTokens: null, compactionHoldReason: null, compactionHoldAt: null, compactionHoldCount: 0 };
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

/** A request read by layout: its bytes and conversation byte ranges, as the key cache compares them. */
const placeOf = (request: ProxyRequest): ArrayPlace | undefined =>
  request.layout && request.bytes ? { bytes: request.bytes, start: request.layout.start, ranges: request.layout.items } : undefined;

/** The keys the conversation's previous request gave message i, when message i's bytes are still that request's (see conversationKeys). */
function keptKeys(previous: { place: ArrayPlace; keys: Array<MessageKeys | undefined> } | undefined, place: ArrayPlace | undefined): (i: number) => MessageKeys | undefined {
  if (!previous || !place) return () => undefined;
  const unchanged = unchangedElements(previous.place, place);
  return (i) => (unchanged(i) ? previous.keys[i] : undefined);
}

const MAX_REDIRECTS = 10_000;
/** Bytes of request bodies the key cache holds, all conversations together. */
const KEY_CACHE_BYTES = 64 * 1024 * 1024;
/** Bytes of Responses request bodies whose parsed items are kept (the parsed objects take a few times their bytes). */
const ITEM_CACHE_BYTES = 32 * 1024 * 1024;
const MAX_FORKS = 1_000;

const sha1 = (text: string) => createHash('sha1').update(text).digest('base64url');

/** `<root>:fork-<n>` or `<root>:side-<n>`, kept within the 128 characters of a session id. */
export function familyName(root: string, kind: 'fork' | 'side', n: number): string {
  const suffix = `:${kind}-${n}`;
  if (root.length + suffix.length <= 128) return `${root}${suffix}`;
  return `${root.slice(0, 128 - suffix.length - 9)}.${sha1(root).replace(/[^A-Za-z0-9]/g, '').slice(0, 8)}${suffix}`;
}

export const forkName = (root: string, n: number): string => familyName(root, 'fork', n);

/**
 * Matches a proxied request to the stored conversation it continues: the session its key and name (or a fork of it)
 * hold, a retried request, a side request, or the session it creates (new, a fork, one that takes the name from a
 * one-shot). Holds the per-conversation state of this process: the conversation's lock while resolving, the fork
 * a conversation last matched, and the message keys and parsed items of its previous request.
 */
@Injectable()
export class ConversationResolver {
  /** Conversation key → the session (a fork) its history last matched, tried first. */
  private readonly redirects = new Map<string, string>();
  /** Per conversation, its last request's body, message byte ranges and message keys (see conversationKeys). */
  private readonly keyCache = new Map<string, { place: ArrayPlace; keys: Array<MessageKeys | undefined> }>();
  private keyCacheBytes = 0;
  /**
   * Per shape, key and session header, the previous body's conversation byte ranges, and a Responses request's parsed
   * `input` items (see ParsedItems), for bodies of ITEM_CACHE_BYTES in all.
   */
  private readonly itemCache = new Map<string, ParsedItems>();
  private itemCacheBytes = 0;
  /** Large messages are parsed here, off the event loop (see preparseLarge); the thread starts on first use, unref'd while idle. */
  private readonly parser = new LargeJsonParser();

  constructor(
    private readonly sessions: SessionRepository,
    private readonly store: ConversationStore,
    private readonly recorder: ConversationRecorder,
    private readonly compactions: CompactionRepository,
    private readonly publisher: EventPublisher,
    private readonly counter: MessageTokenCounter,
    private readonly tenantDefaults: TenantDefaults,
    private readonly locks: KeyedLock,
  ) {}

  /** Counts the proxy's lock tasks finished so far: unchanged means no proxied request changed a session meanwhile. */
  get generation(): number {
    return this.locks.generation;
  }

  /** The session (a fork) the conversation's history last matched, when not the one it names. */
  redirectOf(lockKey: string): string | undefined {
    return this.redirects.get(lockKey);
  }

  /** The conversation's previous body's byte ranges (a Responses request's items, parsed) (see rememberItems). */
  parsedItems(key: string): ParsedItems | undefined {
    return this.itemCache.get(key);
  }

  /**
   * The keys of the request's conversation messages. A message whose bytes are those of the same
   * message in the conversation's previous request, at the same place in the conversation array (inside
   * the bytes both arrays share from their start; see unchangedElements) keeps its keys: it is neither
   * parsed nor normalised again.
   */
  conversationKeys(lockKey: string, request: ProxyRequest): MessageKeys[] {
    const previous = this.keyCache.get(lockKey);
    const place = placeOf(request);
    const kept = keptKeys(previous, place);
    const byIndex: Array<MessageKeys | undefined> = new Array(request.messageCount);
    const keys: MessageKeys[] = [];
    for (let i = request.leading; i < request.end; i++) {
      const k = kept(i) ?? messageKeys(request.message(i));
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

  /** ProxyRequest.read with this process's JSON worker thread for a large last message. */
  readRequest(shape: ProxyShape, raw: unknown, previous: ParsedItems | undefined): Promise<ProxyRequest> {
    return ProxyRequest.read(shape, raw, previous, OFF_THREAD_BODY_BYTES, (bytes) => this.parser.parse(bytes));
  }

  /**
   * Before conversationKeys: the messages of OFF_THREAD_BODY_BYTES or more that it will parse (those whose bytes are not
   * the conversation's previous request's) are parsed on the JSON body worker thread instead of the event loop.
   */
  async preparseLarge(lockKey: string, request: ProxyRequest): Promise<void> {
    const large = request.largeUnparsed(OFF_THREAD_BODY_BYTES);
    if (large.length === 0) return;
    const kept = keptKeys(this.keyCache.get(lockKey), placeOf(request));
    await request.preparse(
      large.filter((i) => !kept(i)),
      (bytes) => this.parser.parse(bytes),
    );
  }

  /** Keeps an authenticated request's byte ranges (and parsed items) for the conversation's next request; least recently used go first. */
  rememberItems(key: string, parsed: ParsedItems | undefined): void {
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

  /** Before the lock: a one-shot request that the named session's stored conversation does not start with is a side request. */
  async sideRequestOf(tenantId: string, requestedId: string, keys: MessageKeys[], prefetch: Promise<SessionRecord | null> | undefined): Promise<Resolution | undefined> {
    const prefetched = prefetch ? await prefetch.catch(() => undefined) : undefined;
    const session = prefetched && prefetched.tenantId === tenantId ? prefetched : prefetched === null ? null : await this.sessions.find(tenantId, requestedId);
    if (!session) return undefined;
    const stored = await this.store.load(session);
    return matchConversation(stored.keys, keys, stored.leadingSystemSeqs.at(-1) ?? 0).kind === 'diverged' ? { session, side: true, seqOf: [] } : undefined;
  }

  /**
   * Resolves the request under the conversation's lock (see resolveHolding). `prefetch`: the requested session's row,
   * read along with the key check; used only if no proxied request finished since `generation`, else read again.
   */
  resolveLocked(
    tenantId: string,
    requestedId: string,
    lockKey: string,
    request: ProxyRequest,
    keys: MessageKeys[],
    policy: PolicyInput | undefined,
    prefetch: Promise<SessionRecord | null> | undefined,
    generation: number,
  ): Promise<Resolution> {
    return this.resolveHolding(lockKey, async () => {
      const fresh = prefetch && this.locks.generation === generation ? await prefetch.catch(() => undefined) : undefined;
      return this.resolve(tenantId, requestedId, lockKey, request, keys, policy, fresh);
    });
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
        const appended = await this.recorder.appendConversation(tenantId, session.externalId, request, { expectLastSeq: 0, session, precounted });
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
    const pending = this.recorder.pendingWrite(messages, session.externalId, async () => {
      const { format, rows } = request.appendRows(start, request.end);
      const done = await this.recorder.appendAll(tenantId, session.externalId, format, rows, {
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
    const pending = this.recorder.pendingWrite(messages, target.externalId, async () => write({ model: target.model, tokens: await counting }));
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

  /** The first request of a conversation: a new session with the request's model, holding the whole conversation. */
  private async create(tenantId: string, externalId: string, request: ProxyRequest, keys: MessageKeys[], requested: PolicyInput | undefined): Promise<Resolution> {
    // Without X-Compactor-Policy the session takes the tenant's default policy, for the first request's budget too.
    const policy = requested ?? (await this.tenantDefaults.policy(tenantId));
    const config = resolveSessionConfig({ model: request.model, policy });
    const target = transientSession(tenantId, externalId, { model: config.model, contextWindow: config.contextWindow, outputReserve: config.outputReserve, policy: policyJson(config.policy) });
    return this.pendingConversation(target, request, keys, async (precounted) => {
      const appended = await this.recorder.appendConversation(tenantId, externalId, request, { expectLastSeq: 0, session: null, model: request.model, policy, precounted });
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
      this.recorder.moved(oneShot.id, sideId);
      this.remember(lockKey, requestedId, requestedId);
      const appended = await this.recorder.appendConversation(tenantId, requestedId, request, { expectLastSeq: 0, session: null, model: request.model, policy: config.policy, precounted });
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
      const appended = await this.recorder.appendConversation(tenantId, created.externalId, request, { expectLastSeq: 0, session: created, precounted });
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
}
