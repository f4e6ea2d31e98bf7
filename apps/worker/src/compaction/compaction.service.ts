import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  checkpointFacts,
  goalBlockMessage,
  goalBlockText,
  computeBudget,
  ingestTransform,
  toolNamesOf,
  isPresetImplemented,
  messageCounter,
  PolicyInput,
  runPreset,
  SessionMessage,
  Summarizer,
  thresholdTokens,
  ValidationFailed,
  VersionPrefix,
} from '@compactor/compaction';
import { compactionJobOptions, JobName, JobPayload, JobQueue, OnJob } from '@compactor/jobs';
import { canonicalOf, CompactionRepository, MessageRepository, Prisma, SessionRecord, SessionRepository } from '@compactor/persistence';
import { resolveModel } from '@compactor/tokens';
import { MemoizedSummarizer } from './memoized-summarizer';

/** The goal's text from the session's goal record (set with PUT goal or from goal markers). */
function sessionGoalText(goal: unknown): string | undefined {
  if (typeof goal === 'string') return goal || undefined;
  if (goal && typeof goal === 'object' && typeof (goal as { goal?: unknown }).goal === 'string') return (goal as { goal: string }).goal || undefined;
  return undefined;
}

export const SUMMARIZER = Symbol('SUMMARIZER');
/** Preset parameters from `COMPACTOR_COMPACT_*` (seed 003), already mapped to parameter paths. */
export const COMPACTION_ENV_PARAMS = Symbol('COMPACTION_ENV_PARAMS');

/**
 * Runs one compaction job: loads the session's head and history through a fixed seq, runs the
 * preset's stages (pure, libs/compaction), and applies the result as a new context version by
 * compare-and-swap of the head (Guarantee 6). A failure leaves the head in place and records the
 * error; a head that moved meanwhile re-queues; a dry run stores its result on the job only.
 */
@Injectable()
export class CompactionService {
  private readonly logger = new Logger(CompactionService.name);

  constructor(
    private readonly sessions: SessionRepository,
    private readonly messages: MessageRepository,
    private readonly compactions: CompactionRepository,
    private readonly queue: JobQueue,
    @Inject(SUMMARIZER) private readonly summarizer: Summarizer,
    @Inject(COMPACTION_ENV_PARAMS) private readonly envParams: Record<string, Record<string, unknown>>,
  ) {}

  @OnJob(JobName.Compact)
  async compact({ jobId, sessionId, tenantId }: JobPayload<JobName.Compact>) {
    const started = Date.now();
    const job = await this.compactions.startJob(jobId);
    if (!job) return { status: 'already-finished' };
    const finish = (data: Parameters<CompactionRepository['finishJob']>[1]) => this.compactions.finishJob(jobId, { ...data, durationMs: Date.now() - started });
    const session = await this.sessions.findById(sessionId);
    if (!session) {
      await finish({ status: 'skipped', reason: 'session-deleted' });
      return { status: 'skipped' };
    }
    const policy = session.policy as PolicyInput;
    if (!isPresetImplemented(policy.preset)) {
      await finish({ status: 'skipped', reason: `preset-not-implemented:${policy.preset}` });
      return { status: 'skipped' };
    }

    const spec = resolveModel(session.model).spec;
    const counter = messageCounter(spec);
    const head = await this.compactions.head(session.id, session.headVersionId);
    // The run covers a fixed seq range: messages appended from now on stay live (Guarantee 6).
    const throughSeq = session.lastSeq;
    const rows = await this.messages.forContext(session.id, 0, throughSeq);
    const stored: SessionMessage[] = rows.map((r) => ({ seq: r.seq, message: canonicalOf(r), tokens: r.tokens }));
    // The preset's per-result ingest step (seed 000's post-processing): the run starts from the context form readers see.
    const ingest = ingestTransform(policy);
    const names = toolNamesOf(stored);
    const history = ingest ? stored.map((m) => ingest(m, counter.countMessage, names)) : stored;
    const prefix: VersionPrefix = head
      ? {
          coversThroughSeq: head.coversThroughSeq,
          checkpoints: head.checkpoints,
          treatments: head.treatments as VersionPrefix['treatments'],
          ...(head.watermarkSeq !== undefined ? { watermarkSeq: head.watermarkSeq } : {}),
          ...(head.goalBlock ? { goalBlock: head.goalBlock } : {}),
        }
      : { coversThroughSeq: 0, checkpoints: [], treatments: {} };
    const budget = computeBudget({ contextWindow: session.contextWindow, outputReserve: session.outputReserve });
    const summarizer = new MemoizedSummarizer(this.summarizer, await this.compactions.intermediate(jobId), (key, result) =>
      this.compactions.saveIntermediate(jobId, key, result as unknown as Prisma.InputJsonValue),
    );

    let outcome;
    try {
      outcome = await runPreset(
        policy,
        {
          history,
          prefix,
          budget: budget.budget,
          contextWindow: session.contextWindow,
          summarizer,
          countMessage: counter.countMessage,
          countText: counter.countText,
          goal: sessionGoalText(session.goal),
          // Deduplication keeps only the latest trigger: an ingest run over the threshold does the threshold's work too.
          trigger: job.trigger === 'ingest' && session.contextTokens >= thresholdTokens(budget, policy) ? 'threshold' : job.trigger,
        },
        this.envParams[policy.preset] ?? {},
      );
    } catch (error) {
      if (!(error instanceof ValidationFailed)) throw error; // infrastructure: BullMQ retries
      // A policy override that no longer validates: nothing to retry, the head stays.
      await this.compactions.event(session.id, tenantId, 'compression-error', `Compaction failed: invalid policy (${error.message})`, { jobId });
      await finish({ status: 'failed', error: `invalid-policy: ${error.message}` });
      return { status: 'failed' };
    }
    const record = {
      steps: outcome.steps,
      tokensBefore: outcome.tokensBefore,
      tokensAfter: outcome.tokensAfter,
      llmCalls: outcome.llmCalls,
      llmInputTokens: outcome.usage.inputTokens,
      llmOutputTokens: outcome.usage.outputTokens,
      llmCostUsd: outcome.usage.costUsd,
      baseVersionId: session.headVersionId,
    };
    if (job.dryRun) {
      await this.compactions.saveIntermediate(jobId, 'dryRun', {
        status: outcome.status,
        reason: outcome.reason ?? null,
        throughSeq,
        prefix: outcome.prefix as unknown as Prisma.InputJsonValue,
        events: outcome.events as unknown as Prisma.InputJsonValue,
      });
      await finish({ ...record, status: outcome.status, reason: outcome.reason, error: outcome.status === 'failed' ? outcome.reason : undefined });
      return { status: 'dry-run' };
    }
    if (outcome.status !== 'succeeded') {
      for (const e of outcome.events) await this.compactions.event(session.id, tenantId, e.type, e.line, { jobId });
      await finish({ ...record, status: outcome.status, reason: outcome.reason, error: outcome.status === 'failed' ? outcome.reason : undefined });
      return { status: outcome.status };
    }

    // The goal block is frozen into the new version: the goal and what the goal markers recorded, summarized span included.
    const goalText = goalBlockText(stored.map((m) => m.message), sessionGoalText(session.goal));
    const goalBlock = goalText ? { text: goalText, tokens: counter.countMessage(goalBlockMessage(goalText)) } : undefined;
    const versionId = await this.compactions.commit({
      sessionId: session.id,
      tenantId,
      jobId,
      baseVersionId: session.headVersionId,
      coversThroughSeq: outcome.prefix.coversThroughSeq,
      treatments: outcome.prefix.treatments,
      checkpoints: outcome.prefix.checkpoints.map((c) => {
        // Seed 004: each checkpoint records its key decisions, files modified and next steps, from the span it covers.
        const covered = history.filter((m) => m.seq >= c.fromSeq && m.seq <= c.toSeq).map((m) => m.message);
        return { ...c, ...checkpointFacts(c.text, covered) };
      }),
      watermarkSeq: outcome.prefix.watermarkSeq,
      goalBlock,
      artifacts: outcome.artifacts,
      artifactIds: Object.values(outcome.prefix.treatments).flatMap((t) => (t.kind === 'offloaded' ? t.artifactIds : [])),
      prefixTokens: outcome.prefix.checkpoints.reduce((n, c) => n + c.tokens, 0) + (goalBlock?.tokens ?? 0),
      // The presets' prefixes carry no goal block: its tokens count on top of theirs.
      contextTokens: outcome.tokensAfter - (outcome.prefix.goalBlock?.tokens ?? 0) + (goalBlock?.tokens ?? 0),
      loadedThroughSeq: throughSeq,
      budget: budget.budget,
      threshold: thresholdTokens(budget, policy),
      events: outcome.events,
    });
    if (!versionId) {
      // Another compaction or a restore moved the head: this result is stale. Run again on the new head.
      await finish({ ...record, status: 'skipped', reason: 'head-moved' });
      await this.requeue(session, tenantId);
      return { status: 'skipped' };
    }
    await finish({ ...record, status: 'succeeded', resultVersionId: versionId });
    // Seed 003 deletes the offload files after a compaction; here only what no version refers to goes.
    await this.compactions.deleteUnreferencedArtifacts(session.id);
    this.logger.log(`Session ${session.externalId}: ${outcome.events.at(-1)?.line ?? 'compacted'}`);
    // Threshold re-check: appends that arrived during the run may call for another one.
    const after = await this.sessions.findById(session.id);
    if (after && after.lastSeq > throughSeq && after.contextTokens >= thresholdTokens(budget, policy)) await this.requeue(after, tenantId);
    return { status: 'succeeded', versionId };
  }

  private async requeue(session: SessionRecord, tenantId: string) {
    const jobId = await this.compactions.createJob({ sessionId: session.id, tenantId, trigger: 'threshold', policy: session.policy as Prisma.InputJsonValue });
    await this.queue.enqueue(JobName.Compact, { jobId, sessionId: session.id, tenantId }, compactionJobOptions(session.id));
  }
}
