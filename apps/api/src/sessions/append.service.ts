import { Injectable } from '@nestjs/common';
import {
  applyGoalMarkers,
  compactionDue,
  CanonicalMessage,
  detectFormat,
  DomainError,
  goalMarkersOfMessages,
  goalRecordFromJson,
  snapshotFraction,
  FieldProblem,
  MessageFormat,
  parseAnthropicMessages,
  parseAnthropicSystem,
  parseCanonicalMessages,
  parseOpenAIMessages,
  referencedForeignToolUseIds,
  isCheckpointTool,
  isPresetImplemented,
  needsIngestRun,
  PolicyInput,
  resolvePresetParams,
  validateSequence,
  ValidationFailed,
} from '@compactor/compaction';
import { ApiErrorCode, IdempotencyKeyReused } from '../errors/http-errors';
import { AppendRepository, EventRepository, MessageRepository, NewMessageRow, SessionRecord, Prisma, SessionRepository } from '@compactor/persistence';
import { EventPublisher } from '@compactor/jobs';
import { resolveModel } from '@compactor/tokens';
import { randomUUID } from 'node:crypto';
import { jsonSha256 } from '../body/json-hash';
import { CompactionScheduler } from '../compaction/compaction-scheduler';
import { RateLimits } from '../limits/rate-limits';
import { TenantDefaults } from '../tenant/tenant-defaults';
import { MessageTokenCounter } from '../tokens/message-token-counter';
import { AppendBody, AppendMessagesResponse } from './append.dto';
import { policyJson, resolveSessionConfig, sessionPolicy, sessionUsage } from './session-config';
import { RecentSessions } from './recent-sessions';
import { StageTimer } from '../common/stage-timer';
import { metaOf } from '@compactor/persistence';

/** Whether the batch calls the watermark tool of a `watermark` policy (seed 001's compress_to_checkpoint). */
function watermarkCalled(policy: PolicyInput, messages: CanonicalMessage[]): boolean {
  if (policy.preset !== 'watermark') return false;
  const params = resolvePresetParams(policy) as { checkpointToolNames: string[] };
  return messages.some((m) => m.blocks.some((b) => b.type === 'tool_use' && isCheckpointTool(b.name, params.checkpointToolNames)));
}

interface ParsedAppend {
  format: MessageFormat;
  messages: CanonicalMessage[];
  /** Each message exactly as received. */
  raw: unknown[];
  /** 1 when an Anthropic top-level `system` came first in `messages`, else 0. */
  systemCount: number;
}

/** Parses the posted messages; messages that both providers read alike take the session's previous shape. */
function parseMessages(body: AppendBody, previousFormat: MessageFormat | undefined): ParsedAppend {
  const format = body.format ?? detectFormat(body.messages, previousFormat);
  if (body.system !== undefined && format !== 'anthropic') {
    throw new ValidationFailed([{ field: 'system', message: 'is only accepted with Anthropic-shaped messages; OpenAI sends system messages inside `messages`' }]);
  }
  const parsed =
    format === 'anthropic'
      ? parseAnthropicMessages(body.messages, 'messages')
      : format === 'openai'
        ? parseOpenAIMessages(body.messages, 'messages')
        : parseCanonicalMessages(body.messages, 'messages');
  const problems: FieldProblem[] = parsed.ok ? [] : [...parsed.errors];
  let system: CanonicalMessage | undefined;
  if (body.system !== undefined) {
    const parsedSystem = parseAnthropicSystem(body.system, 'system');
    if (parsedSystem.ok) system = parsedSystem.value;
    else problems.push(...parsedSystem.errors);
  }
  if (!parsed.ok || problems.length > 0) throw new ValidationFailed(problems);
  return {
    format,
    messages: system ? [system, ...parsed.value] : parsed.value,
    raw: system ? [{ system: body.system }, ...body.messages] : body.messages,
    systemCount: system ? 1 : 0,
  };
}

/** The session's history moved past the seq an append expected (the proxy's compare-and-append). */
export class HistoryMoved extends DomainError {
  constructor(expected: number, actual: number) {
    super(ApiErrorCode.Conflict, `The session's history moved on (expected last seq ${expected}, found ${actual}); read it again`);
  }
}

export interface AppendOptions {
  /** Append only if the session's last seq is still this (0 for a session that does not exist yet); else HistoryMoved. */
  expectLastSeq?: number;
  /** The session as the caller just read it (null: not there), to spare the lookup; the locked row is what counts. */
  session?: SessionRecord | null;
  /** Append only to the session with this internal id (the external id may have gone to another session meanwhile); else HistoryMoved. */
  expectSessionId?: string;
  /** Called with the session row as the append left it. */
  onAppended?: (session: SessionRecord) => void;
  /**
   * Token counts already made for the append's last messages (the proxy counts a request's new messages before it
   * forwards them), with the model they were counted for: used when the session's model is that one, not counted again.
   */
  precounted?: { model: string; tokens: number[] };
  /**
   * How the tenant's appended tokens per minute see the append. `reserve` (REST): counted before it is stored, refused
   * with 429 rate_limited when the minute cannot hold it, given back when nothing was stored. `charge` (the proxy, which
   * stores a request's messages only once the upstream answered, and checked the tenant's room before forwarding):
   * counted once stored, never refused here.
   */
  appendedTokens?: 'reserve' | 'charge';
  /**
   * Marks the append's stages (`count`: parse, validate and count; `write`: plan and the guarded write; when the append
   * schedules a compaction, `jobrow`: up to the job's row written, and `enqueue`: BullMQ's add or fold; `schedule`: the rest) for Server-Timing.
   */
  timing?: StageTimer;
}

function toolUseIdsOf(message: CanonicalMessage): string[] {
  return message.blocks.flatMap((b) => (b.type === 'tool_use' ? [b.id] : []));
}

@Injectable()
export class AppendService {
  constructor(
    private readonly sessions: SessionRepository,
    private readonly appends: AppendRepository,
    private readonly messages: MessageRepository,
    private readonly counter: MessageTokenCounter,
    private readonly scheduler: CompactionScheduler,
    private readonly publisher: EventPublisher,
    private readonly events: EventRepository,
    private readonly tenantDefaults: TenantDefaults,
    private readonly rateLimits: RateLimits,
  ) {}

  /** Session rows as this process's appends left them: an agent loop's next append skips the read. */
  private readonly recent = new RecentSessions();

  /** Counts the messages, taking the precounted last ones as they are when they were counted for this model. */
  private async countWith(messages: CanonicalMessage[], model: string, precounted: AppendOptions['precounted']): Promise<number[]> {
    const known = precounted && precounted.model === model && precounted.tokens.length <= messages.length ? precounted.tokens : [];
    const rest = messages.slice(0, messages.length - known.length);
    const counted = rest.length > 0 ? await this.counter.count(rest, resolveModel(model).spec) : [];
    return [...counted, ...known];
  }

  async append(tenantId: string, externalId: string, body: AppendBody, idempotencyKey?: string, options: AppendOptions = {}): Promise<AppendMessagesResponse> {
    // The row this process's last append to the session left, when there is one: not read again (the write is guarded by its version).
    const remembered = options.session === undefined ? this.recent.get(tenantId, externalId) : undefined;
    const existing = options.session !== undefined ? options.session : remembered ? remembered.session : await this.sessions.find(tenantId, externalId);
    // Messages both providers read alike take the session's previous shape: looked up only for those.
    const ambiguous = body.format === undefined && detectFormat(body.messages, 'openai') !== detectFormat(body.messages, 'anthropic');
    const previousFormat = existing && ambiguous ? ((remembered?.format ?? (await this.messages.lastFormat(existing.id))) as MessageFormat | undefined) : undefined;
    const { format, messages, raw, systemCount } = parseMessages(body, previousFormat);
    // A session this append creates without a policy takes the tenant's default policy (PATCH /v1/tenant).
    const config = resolveSessionConfig(existing || body.policy ? body : { ...body, policy: await this.tenantDefaults.policy(tenantId) });
    const warnings = existing
      ? (['model', 'contextWindow', 'outputReserve', 'policy'] as const)
          .filter((f) => body[f] !== undefined)
          .map((f) => `${f} applies only when an append creates the session; it was ignored (use PATCH /v1/sessions/${externalId})`)
      : config.warnings;

    // Counting is the expensive part: done before the transaction, big texts off the request thread.
    let countedFor = existing?.model ?? config.model;
    let tokens = await this.countWith(messages, countedFor, options.precounted);
    // The request limits the client says its model requests carry (SPEC.md "Budget"), remembered on the session.
    const toolsOf = async (model: string) => (body.tools === undefined ? undefined : await this.counter.countToolSchemas(body.tools, resolveModel(model).spec));
    let toolSchemaTokens = await toolsOf(countedFor);
    const requestLimits = body.maxTokens !== undefined || body.tools !== undefined ? { maxTokens: body.maxTokens, toolSchemaTokens } : undefined;
    // Only an Idempotency-Key needs the request's hash; it is computed without a copy of the body's JSON (a 30 MB result).
    const requestHash = idempotencyKey ? jsonSha256(body) : '';
    const appendedTokens = () => tokens.reduce((a, b) => a + b, 0);
    const refund = options.appendedTokens === 'charge' ? undefined : await this.rateLimits.reserveAppendedTokens(tenantId, appendedTokens());
    options.timing?.mark('count');

    let compactionJobId: string | undefined;
    let trigger: 'threshold' | 'watermark' | 'ingest' | undefined;
    let scheduleFor: SessionRecord | undefined;
    let snapshotTaken = false;
    const appending = this.appends.append({
      tenantId,
      externalId,
      create: { model: config.model, contextWindow: config.contextWindow, outputReserve: config.outputReserve, policy: policyJson(config.policy) },
      idempotency: idempotencyKey ? { key: idempotencyKey, requestHash } : undefined,
      observed: existing,
      observedRemembered: remembered !== undefined,
      plan: async (session, _created, knownToolUseIds) => {
        if (options.expectLastSeq !== undefined && session.lastSeq !== options.expectLastSeq) throw new HistoryMoved(options.expectLastSeq, session.lastSeq);
        if (options.expectSessionId !== undefined && session.id !== options.expectSessionId) throw new HistoryMoved(options.expectLastSeq ?? session.lastSeq, session.lastSeq);
        if (session.model !== countedFor) {
          // The model changed between the read and the lock (a concurrent PATCH): count again for it.
          countedFor = session.model;
          tokens = await this.countWith(messages, countedFor, options.precounted);
          toolSchemaTokens = await toolsOf(countedFor);
          if (requestLimits) requestLimits.toolSchemaTokens = toolSchemaTokens;
        }
        // Results for calls still open are accepted on the session row alone (validateSequence reads open ids first):
        // only the others are looked up in the stored history, so the usual tool result costs no extra round trip.
        const open = new Set(session.openToolUseIds);
        const foreign = referencedForeignToolUseIds(messages).filter((id) => !open.has(id));
        const seen = new Set(foreign.length > 0 ? await knownToolUseIds(foreign) : []);
        // The top-level system prompt was validated on its own; error fields index `messages` as posted.
        const checked = validateSequence(
          { lastRole: session.lastRole, openToolUseIds: session.openToolUseIds, seenToolUseIds: seen },
          messages.slice(systemCount),
          'messages',
        );
        if (checked.errors.length > 0) throw new ValidationFailed(checked.errors);
        // The stored policy, parsed once for the whole plan (issue #21).
        const policy = sessionPolicy(session);
        const added = tokens.reduce((a, b) => a + b, 0);
        const systemAdded = messages.reduce((sum, m, i) => sum + (m.role === 'system' && !m.inConversation ? tokens[i] : 0), 0);
        const usage = sessionUsage(
          { ...session, ...(requestLimits?.maxTokens !== undefined ? { requestMaxTokens: requestLimits.maxTokens } : {}), ...(toolSchemaTokens !== undefined ? { toolSchemaTokens } : {}) },
          session.contextTokens + added,
          session.systemTokens + systemAdded,
          undefined,
          policy,
        );
        // Crossing the threshold schedules a compaction once this append is committed.
        // Seed 001: a call of the watermark tool marks a checkpoint and compacts whatever the fill level.
        trigger = watermarkCalled(policy, messages)
          ? 'watermark'
          : compactionDue(usage.contextTokens, usage.threshold, session.compactionHoldTokens)
            ? 'threshold'
            : needsIngestRun(policy, messages, tokens)
              ? 'ingest'
              : undefined;
        compactionJobId = trigger && isPresetImplemented(policy.preset) ? randomUUID() : undefined;
        // Seed 004: goal markers in the assistant's output update the goal record.
        const markers = goalMarkersOfMessages(messages);
        const goal = markers.length > 0 ? applyGoalMarkers(goalRecordFromJson(session.goal), markers) : undefined;
        // Seed 004: an automatic snapshot when the context crosses the snapshot threshold (80% of the budget).
        const snapAt = Math.floor(snapshotFraction(policy) * usage.budget);
        const crossed = snapAt > 0 && session.contextTokens < snapAt && usage.contextTokens >= snapAt;
        snapshotTaken = crossed;
        scheduleFor = session;
        const rows: NewMessageRow[] = messages.map((m, i) => ({
          role: m.role,
          blocks: m.blocks as unknown as Prisma.InputJsonValue,
          meta: metaOf(m),
          raw: raw[i] as Prisma.InputJsonValue,
          format,
          pinned: m.pinned ?? false,
          tags: m.tags ?? [],
          tokens: tokens[i],
          toolUseIds: toolUseIdsOf(m),
        }));
        return {
          rows,
          lastRole: checked.state.lastRole,
          openToolUseIds: checked.state.openToolUseIds,
          contextTokens: usage.contextTokens,
          systemTokens: session.systemTokens + systemAdded,
          utilization: usage.utilization,
          requestLimits,
          budget: usage.budget,
          threshold: usage.threshold,
          ...(goal ? { goal: goal as unknown as Prisma.InputJsonValue } : {}),
          ...(crossed
            ? {
                snapshot: {
                  metadata: { lastSeq: session.lastSeq, contextTokens: session.contextTokens, utilization: session.utilization, compactions: session.compactions, reliability: session.reliability, contextConfidence: session.contextConfidence, reason: 'threshold' },
                  line: `Snapshot at ${Math.round(snapshotFraction(policy) * 100)}% of the budget: ${usage.contextTokens.toLocaleString('en-US')} of ${usage.budget.toLocaleString('en-US')} tokens`,
                },
              }
            : {}),
          respond: (firstSeq: number, lastSeq: number) =>
            ({
              sessionId: externalId,
              firstSeq,
              lastSeq,
              usage: { ...usage },
              compaction: compactionJobId
                ? { scheduled: true, jobId: compactionJobId }
                : {
                    scheduled: false,
                    reason:
                      trigger !== undefined
                        ? `preset-not-implemented:${policy.preset}`
                        : usage.contextTokens >= usage.threshold
                          ? `held-until:${session.compactionHoldTokens}`
                          : 'below-threshold',
                  },
              ...(warnings.length > 0 ? { warnings } : {}),
            }) satisfies AppendMessagesResponse,
        };
      },
    });
    // Tokens reserved for an append that stored nothing (refused, a replay, a conflict) go back.
    appending.catch(() => refund?.());
    const outcome = await appending;
    options.timing?.mark('write');
    if (outcome.kind === 'stale') {
      // The remembered row changed since (another replica, a compaction, a deletion): nothing was written; start again from a fresh read.
      refund?.();
      this.recent.forget(tenantId, externalId);
      return this.append(tenantId, externalId, body, idempotencyKey, { ...options, session: await this.sessions.find(tenantId, externalId) });
    }
    if (outcome.kind !== 'appended') refund?.();
    else {
      this.recent.set(tenantId, externalId, { session: outcome.session, format });
      if (options.appendedTokens === 'charge') await this.rateLimits.chargeAppendedTokens(tenantId, appendedTokens());
    }
    if (outcome.kind === 'key-reused') throw new IdempotencyKeyReused(idempotencyKey!);
    // A replay names the job the first answer named: recorded and enqueued now if that request died before it scheduled it.
    const namedJob = outcome.kind === 'replayed' ? (outcome.response as AppendMessagesResponse).compaction?.jobId : undefined;
    if (namedJob) {
      const session = existing ?? (await this.sessions.find(tenantId, externalId));
      if (session) await this.scheduler.ensureRecorded(session, namedJob);
    }
    // The threshold snapshot's event: wake the live event streams.
    if (outcome.kind === 'appended') options.onAppended?.(outcome.session);
    // A model the catalog cannot resolve gets the default window and an estimate: the operator sees why, on the session too.
    if (outcome.kind === 'appended' && outcome.created && !resolveModel(config.model).known) {
      const event = await this.events.record(outcome.session.id, tenantId, 'model-unknown', config.warnings.join('; '), { model: config.model, contextWindow: config.contextWindow });
      if (event) this.publisher.notify(outcome.session.id, event.id);
    }
    if (outcome.kind === 'appended' && snapshotTaken) this.publisher.notify(outcome.session.id);
    if (outcome.kind === 'appended' && compactionJobId && scheduleFor) {
      const scheduled = await this.scheduler.schedule(scheduleFor, trigger ?? 'threshold', { jobId: compactionJobId, timing: options.timing });
      // Redis is down: the messages are stored; the job waits queued and the workers' sweep enqueues it when Redis returns.
      if (!scheduled.queued) return { ...(outcome.response as AppendMessagesResponse), compaction: { scheduled: false, reason: 'queue-unavailable' } };
    }
    return outcome.response as AppendMessagesResponse;
  }
}

