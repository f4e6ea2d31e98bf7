import { Inject, Injectable } from '@nestjs/common';
import { CanonicalMessage, messageKeys, parseAnthropicMessages, parseOpenAIMessages, parseResponsesInput, ParseResult, PolicyInput, recalibrated, SessionMessage } from '@compactor/compaction';
import { SessionRecord, SessionRepository } from '@compactor/persistence';
import { resolveModel } from '@compactor/tokens';
import type { Logger } from 'pino';
import { LOGGER } from '../logging/logger';
import { AppendOptions, AppendService, HistoryMoved } from '../sessions/append.service';
import { MAX_MESSAGES_PER_APPEND } from '../sessions/append.dto';
import { ConversationStore } from './conversation-store';
import { ProxyProvider } from './provider-errors';
import { ProxyRequest, ProxyShape } from './proxy-request';
import { KeyedLock } from './session-lock';

/** Token counts the proxy made before forwarding, for the request's last messages, with the model they were counted for. */
export type Precounted = NonNullable<AppendOptions['precounted']>;

/** Where a request's new messages went once stored: the answer is recorded after `afterSeq` in `session`. */
export interface Committed {
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
export interface PendingWrite {
  /** At their exact counts, or (while `exact` is counting) at upper bounds of them. */
  messages: SessionMessage[];
  /** The same messages at their exact counts, when `messages` carries upper bounds. */
  exact?: Promise<SessionMessage[]>;
  commit(): Promise<Committed | undefined>;
  release: Settled<Committed | undefined>;
}

/** What hears of the end of an upstream answer: the assembled message of a complete 2xx answer (else undefined). */
export interface AnswerHandler {
  stream: boolean;
  /** The answer's shape, when not the provider's own messages (a Responses answer). */
  shape?: ProxyShape;
  /** `inputTokens`: the prompt tokens the upstream reported for the request, when it did. */
  onEnd(message: Record<string, unknown> | undefined, status: number, clientGone: boolean, inputTokens?: number): void;
}

/** A recorded answer (the assembler's) as canonical messages: the provider's assistant message, or a Responses answer's output items. */
export function answerMessages(shape: ProxyShape, answer: Record<string, unknown>): ParseResult<CanonicalMessage[]> {
  if (shape === 'responses') return parseResponsesInput(answer.output, 'output');
  return (shape === 'anthropic' ? parseAnthropicMessages : parseOpenAIMessages)([answer], 'messages');
}

/** Sessions moved aside the recorder keeps the new names of (as many as the resolver's redirects). */
const MAX_MOVED = 10_000;

/**
 * Writes a proxied conversation's history: a request's new messages once the upstream accepted the request (pending
 * until then), and the upstream's answer after them, queued on the conversation's lock so the next request finds it
 * stored. Also recalibrates the session from the tokens the upstream reported.
 */
@Injectable()
export class ConversationRecorder {
  /** Sessions moved aside (a one-shot under a name a conversation took) → their new external id, for their answer. */
  private readonly renamed = new Map<string, string>();

  constructor(
    private readonly appends: AppendService,
    private readonly store: ConversationStore,
    private readonly sessions: SessionRepository,
    private readonly locks: KeyedLock,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** A session moved aside to `externalId` (see ConversationResolver's takeName): its answer is appended under that name. */
  moved(sessionId: string, externalId: string): void {
    if (this.renamed.size >= MAX_MOVED) this.renamed.delete(this.renamed.keys().next().value as string);
    this.renamed.set(sessionId, externalId);
  }

  /**
   * Where the answer to a request goes once the upstream answered: a request's new messages (a new session, a fork) are
   * committed only when it was accepted (2xx), and the conversation's lock waits for the write; undefined: not recorded.
   */
  target(resolved: { session: SessionRecord; recordAfterSeq?: number; pending?: PendingWrite }, accepted: boolean): Promise<Committed | undefined> | undefined {
    return resolved.pending
      ? resolved.pending.release.settle(accepted ? resolved.pending.commit() : undefined)
      : resolved.recordAfterSeq === undefined
        ? undefined
        : Promise.resolve({ session: resolved.session, afterSeq: resolved.recordAfterSeq });
  }

  /**
   * Records a complete 2xx answer in the session its request's messages went to, queued on the conversation's lock
   * before the client sees the end, so the conversation's next request finds it stored.
   */
  answerRecorder(
    shape: ProxyShape,
    lockKey: string,
    tenantId: string,
    stream: boolean,
    target: Promise<Committed | undefined>,
    /** The tokens we estimated the upstream would count for the request, recalibrated against what it reports. */
    estimated: number,
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
          this.recalibrate(into.session, estimated, inputTokens);
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

  /** New messages and the write that stores them; a write that fails is logged and leaves the answer unrecorded. */
  pendingWrite(messages: SessionMessage[], externalId: string, write: () => Promise<Committed>): PendingWrite {
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

  /** Appends the request's system prompt and conversation (not a prefill) to an empty session. */
  async appendConversation(
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
  async appendAll(
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
}
