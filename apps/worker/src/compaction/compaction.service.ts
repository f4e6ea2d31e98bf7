import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  compactedLedgerCheck,
  FactsLedger,
  finalizeCompaction,
  LedgerState,
  ledgerSummary,
  goalPromptOf,
  goalRecordFromJson,
  compactionDue,
  compactionHold,
  sessionBudget,
  ingestTransform,
  toolNamesOf,
  isPresetImplemented,
  messageCounter,
  PolicyInput,
  runPreset,
  EMPTY_PREFIX,
  Summarizer,
  thresholdTokens,
  ValidationFailed,
} from '@compactor/compaction';
import { JobName, JobPayload, JobQueue, JobRunContext, OnJob, QueueUnavailable } from '@compactor/jobs';
import { CompactionRepository, ContextLoader, JobRecord, JobTakenOver, Prisma, SessionRecord, SessionRepository } from '@compactor/persistence';
import { resolveModel } from '@compactor/tokens';
import { DelayedError } from 'bullmq';
import { jobFailure } from '../jobs/job-failure';
import { WORKER_CONFIG, WorkerConfig } from '../config/worker-config';
import { isLlmOutage, llmRetryDelayMs } from './llm-outage';
import { MemoizedSummarizer } from './memoized-summarizer';
import { SpendCapReached, SpendCaps } from './spend-caps';
import { CompactionProgress } from './compaction-progress';


export const SUMMARIZER = Symbol('SUMMARIZER');
/** A session's stored ledger keeps at most this many entries (the lightest go first; constraints and locked decisions never). */
const MAX_LEDGER_ENTRIES = 5_000;

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
    private readonly loader: ContextLoader,
    private readonly compactions: CompactionRepository,
    private readonly queue: JobQueue,
    private readonly progress: CompactionProgress,
    @Inject(SUMMARIZER) private readonly summarizer: Summarizer,
    @Inject(COMPACTION_ENV_PARAMS) private readonly envParams: Record<string, Record<string, unknown>>,
    private readonly spendCaps: SpendCaps,
    @Inject(WORKER_CONFIG) private readonly config: WorkerConfig,
  ) {}

  @OnJob(JobName.Compact)
  async compact(payload: JobPayload<JobName.Compact>, context: JobRunContext = {}) {
    const job = await this.compactions.startJob(payload.jobId);
    if (!job) return { status: 'already-finished' };
    try {
      return await this.run(payload, job, context.signal, context.retryLater);
    } catch (error) {
      // Another worker runs this job now (this one stalled or lost its lock): it reports; this run writes nothing more.
      if (error instanceof JobTakenOver || context.signal?.aborted) {
        this.logger.warn(`Compaction ${payload.jobId}: run ${job.attempts} stopped, the job was taken over`);
        return { status: 'taken-over' };
      }
      if (error instanceof DelayedError) throw error; // back in the queue (retryLater): not a failure
      // BullMQ gives up after this attempt: the row ends failed with the error's code instead of staying running
      // (the job runner logs the original; the row, which tenants read, never holds it).
      if (context.finalAttempt) await this.compactions.finishJob(payload.jobId, { status: 'failed', error: jobFailure(error).message }, job.attempts);
      throw error; // infrastructure: BullMQ retries
    }
  }

  private async run({ jobId, sessionId, tenantId }: JobPayload<JobName.Compact>, job: JobRecord, signal: AbortSignal | undefined, retryLater: JobRunContext['retryLater']) {
    const started = Date.now();
    const attempt = job.attempts;
    const finish = (data: Parameters<CompactionRepository['finishJob']>[1]) => this.compactions.finishJob(jobId, { ...data, durationMs: Date.now() - started }, attempt);
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
    // The same loader as the API's context reads: the head version and the stored messages.
    const head = await this.loader.head(session);
    // The run covers a fixed seq range: messages appended from now on stay live (Guarantee 6).
    const throughSeq = session.lastSeq;
    const stored = await this.loader.messagesBetween(session.id, 0, throughSeq);
    // The facts ledger (SPEC.md "Facts ledger") is kept up to date run by run: only the messages after the stored one are read.
    const savedLedger = await this.compactions.ledger(session.id);
    const ledger = FactsLedger.from(savedLedger?.state as LedgerState | undefined).addAll(stored);
    if (!job.dryRun && ledger.throughSeq > (savedLedger?.throughSeq ?? 0)) {
      await this.compactions.saveLedger(session.id, ledger.throughSeq, ledger.prune(MAX_LEDGER_ENTRIES).state() as unknown as Prisma.InputJsonValue);
    }
    // The preset's per-result ingest step (seed 000's post-processing): the run starts from the context form readers see.
    const ingest = ingestTransform(policy);
    const names = toolNamesOf(stored);
    const history = ingest ? stored.map((m) => ingest(m, counter.countMessage, names)) : stored;
    const prefix = head?.prefix ?? EMPTY_PREFIX;
    const budget = sessionBudget(session);
    const run = { sessionId: session.id, tenantId, jobId };
    if (!job.dryRun) await this.progress.started({ ...run, trigger: job.trigger, preset: policy.preset, fromSeq: stored[0]?.seq ?? 0, throughSeq, tokens: session.contextTokens });
    const summarizer = new MemoizedSummarizer(
      job.dryRun ? this.summarizer : this.progress.announcing(this.summarizer, run),
      await this.compactions.intermediate(jobId),
      (key, result) => this.compactions.saveIntermediate(jobId, key, result as unknown as Prisma.InputJsonValue),
      // Fencing before each paid call: a run taken over (stalled, lock lost) stops instead of paying twice.
      // Then the tenant's daily summarizer caps (a deterministic local summarizer spends nothing and is never capped).
      async (spent) => {
        if (signal?.aborted || !(await this.compactions.ownsJob(jobId, attempt))) throw new JobTakenOver(jobId, attempt);
        if (!this.summarizer.deterministic) await this.spendCaps.check(tenantId, spent);
      },
      signal,
    );

    let outcome;
    try {
      outcome = await runPreset(
        policy,
        {
          history,
          prefix,
          // One budget (SPEC.md "Budget"): seed 004's dynamic budget starts from it, not from the raw window, so the engine's
          // trigger is the API's (the window would ignore max_tokens and the tool schemas the next request carries).
          budget: budget.budget,
          summarizer,
          ledger,
          countMessage: counter.countMessage,
          countText: counter.countText,
          // Seed 004's goal-aware summary: the whole goal record (goal, locked decisions, constraints, next step).
          goal: goalPromptOf(goalRecordFromJson(session.goal)),
          // Deduplication keeps only the latest trigger: an ingest run over the threshold does the threshold's work too.
          trigger: job.trigger === 'ingest' && session.contextTokens >= thresholdTokens(budget, policy) ? 'threshold' : job.trigger,
        },
        this.envParams[policy.preset] ?? {},
      );
    } catch (error) {
      if (error instanceof SpendCapReached) return this.capped(session, tenantId, budget, policy, job, error, summarizer.spent, finish);
      if (!(error instanceof ValidationFailed)) throw error; // infrastructure: BullMQ retries
      // A policy override that no longer validates: nothing to retry, the head stays.
      await this.progress.record(session.id, tenantId, [{ type: 'compression-error', line: `Compaction failed: invalid policy (${error.message})`, data: { jobId } }]);
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
        // What the compaction would do with the facts ledger: the entries its checkpoint would keep, append and leave
        // out, and every entry of the compacted span the would-be context no longer holds ("the facts it would drop").
        ledger: {
          ...(outcome.ledger ? ledgerSummary(outcome.ledger) : {}),
          check: compactedLedgerCheck(ledger, stored, history, prefix, outcome.prefix, prefix.goalBlock, counter.countMessage).ledger,
        } as unknown as Prisma.InputJsonValue,
      });
      await finish({ ...record, status: outcome.status, reason: outcome.reason, error: outcome.status === 'failed' ? outcome.reason : undefined });
      return { status: 'dry-run' };
    }
    // An LLM outage (refused, 5xx, 429, timeout): the job goes back to the queue and runs again later, within the retry
    // window; the summaries answered so far are saved (intermediate) and replayed then, never paid twice.
    if (outcome.status === 'failed' && isLlmOutage(outcome.reason) && retryLater && Date.now() - job.createdAt.getTime() < this.config.COMPACTION_LLM_RETRY_WINDOW_MS) {
      const delay = llmRetryDelayMs(attempt, this.config.COMPACTION_LLM_RETRY_DELAY_MS);
      this.logger.warn(`Compaction ${jobId}: the summarizer is unreachable (${outcome.reason}); run ${attempt} goes back to the queue for ${delay} ms`);
      await this.progress.record(session.id, tenantId, [{ type: 'warning', line: `Summarizer unreachable (${outcome.reason}); the compaction runs again in ${Math.ceil(delay / 1000)} s`, data: { jobId } }]);
      await retryLater(delay);
    }
    if (outcome.status !== 'succeeded') {
      await this.progress.record(session.id, tenantId, outcome.events.map((e) => ({ type: e.type, line: e.line, data: { jobId } })));
      // An automatic run that could not compact is not run again on every append (no compaction loops).
      const threshold = thresholdTokens(budget, policy);
      if ((job.trigger === 'threshold' || job.trigger === 'ingest') && session.contextTokens >= threshold) {
        // An LLM outage past the retry window: the hold says so, and the sweep lifts it once the summarizer answers again.
        const outage = outcome.status === 'failed' && isLlmOutage(outcome.reason);
        await this.hold(session, tenantId, budget, session.contextTokens, threshold, `the compaction was ${outcome.status}: ${outcome.reason ?? 'no reason given'}`, outage ? 'llm-outage' : null);
      }
      await finish({ ...record, status: outcome.status, reason: outcome.reason, error: outcome.status === 'failed' ? outcome.reason : undefined });
      return { status: outcome.status };
    }

    // The pure part (goal block, facts-ledger check, reliability, new checkpoints' fields, the event's figures): libs/compaction.
    const final = finalizeCompaction({
      outcome,
      stored,
      history,
      before: prefix,
      ledger,
      goal: goalRecordFromJson(session.goal),
      budget: budget.budget,
      model: spec,
      compactionsBefore: session.compactions,
      figures: record,
      countMessage: counter.countMessage,
      countText: counter.countText,
    });
    const versionId = await this.compactions.commit({
      sessionId: session.id,
      tenantId,
      jobId,
      attempt,
      baseVersionId: session.headVersionId,
      coversThroughSeq: outcome.prefix.coversThroughSeq,
      treatments: outcome.prefix.treatments,
      checkpoints: final.checkpoints.map(({ factsLedger, ...c }) => (factsLedger ? { ...c, factsLedger: factsLedger as unknown as Prisma.InputJsonValue } : c)),
      reliability: final.reliability,
      watermarkSeq: outcome.prefix.watermarkSeq,
      goalBlock: final.goalBlock,
      artifacts: outcome.artifacts,
      artifactIds: final.artifactIds,
      prefixTokens: final.prefixTokens,
      contextTokens: final.contextTokens,
      loadedThroughSeq: throughSeq,
      budget: budget.budget,
      threshold: thresholdTokens(budget, policy),
      events: final.events,
      // SPEC.md "Snapshot": taken before every compaction, so every compaction can be undone.
      snapshotBefore: {
        metadata: { lastSeq: session.lastSeq, contextTokens: session.contextTokens, utilization: session.utilization, compactions: session.compactions, reliability: session.reliability, contextConfidence: session.contextConfidence, versionNumber: head?.number ?? 0 },
        line: `Snapshot before compaction: version ${head?.number ?? 0} (${session.contextTokens.toLocaleString('en-US')} tokens)`,
      },
    });
    if (!versionId) {
      // Another compaction or a restore moved the head: this result is stale. Run again on the new head.
      await finish({ ...record, status: 'skipped', reason: 'head-moved' });
      await this.progress.record(session.id, tenantId, [{ type: 'compression-skipped', line: 'Compaction skipped: the context changed meanwhile (another compaction or a restore); running again on the new one', data: { jobId } }]);
      await this.requeue(session, tenantId);
      return { status: 'skipped' };
    }
    // A result still over the trigger would call for another run at the next append: wait for enough new tokens instead.
    // The hold is in place before the job reads as finished, here and on every branch: a client that waits for the job
    // and then appends must find it (written after, the quality bench's next append raced it).
    const threshold = thresholdTokens(budget, policy);
    const contextAfter = final.contextTokens;
    if (contextAfter >= threshold) await this.hold(session, tenantId, budget, contextAfter, threshold, 'the protected part and the newest turns alone stay above the trigger');
    // Success ends a hold, and a run of llm-outage holds (the next one waits COMPACTION_LLM_HOLD_RETRY_MS from scratch).
    else if (session.compactionHoldTokens !== null || session.compactionHoldCount > 0) await this.sessions.holdCompactions(session.id, null);
    await finish({ ...record, status: 'succeeded', resultVersionId: versionId });
    this.progress.committed(session.id);
    // Seed 003 deletes the offload files after a compaction; here only what no version refers to goes.
    await this.compactions.deleteUnreferencedArtifacts(session.id);
    this.logger.log(`Session ${session.externalId}: ${outcome.events.at(-1)?.line ?? 'compacted'}`);
    // Threshold re-check: appends that arrived during the run may call for another one.
    const after = await this.sessions.findById(session.id);
    if (after && after.lastSeq > throughSeq && compactionDue(after.contextTokens, thresholdTokens(sessionBudget(after), policy), after.compactionHoldTokens)) await this.requeue(after, tenantId);
    return { status: 'succeeded', versionId };
  }

  /** Holds automatic compactions until the context grows past where this run left it, and says why in an event. */
  /**
   * The tenant's daily summarizer cap stopped the run before an LLM call: nothing is committed, the
   * job ends `skipped` (reason `spend-cap`) with what it spent, the session gets an event, and
   * automatic compactions wait as after any run that could not compact (the read-time fallback
   * keeps the context within its budget meanwhile). Summaries already paid for stay saved on the job.
   */
  private async capped(
    session: SessionRecord,
    tenantId: string,
    budget: ReturnType<typeof sessionBudget>,
    policy: PolicyInput,
    job: JobRecord,
    cap: SpendCapReached,
    spent: { tokens: number; costUsd: number },
    finish: (data: Parameters<CompactionRepository['finishJob']>[1]) => Promise<unknown>,
  ) {
    const what = cap.limit === 'summarizerTokensPerDay' ? `${cap.spent.toLocaleString('en-US')} of ${cap.cap.toLocaleString('en-US')} summarizer tokens` : `$${cap.spent} of $${cap.cap}`;
    this.logger.warn(`Compaction ${job.id}: skipped, the tenant's daily spend cap is reached (${cap.limit})`);
    if (!job.dryRun) {
      await this.progress.record(session.id, tenantId, [
        {
          type: 'spend-cap',
          line: `Compaction skipped: the tenant's daily summarizer cap is reached (${what} today, UTC); it resumes tomorrow or when an admin raises limits.${cap.limit}`,
          data: { jobId: job.id, limit: cap.limit, cap: cap.cap, spent: cap.spent },
        },
      ]);
    }
    const threshold = thresholdTokens(budget, policy);
    if (!job.dryRun && (job.trigger === 'threshold' || job.trigger === 'ingest') && session.contextTokens >= threshold) {
      await this.hold(session, tenantId, budget, session.contextTokens, threshold, 'the spend cap is reached');
    }
    await finish({ status: 'skipped', reason: 'spend-cap', llmInputTokens: spent.tokens, llmOutputTokens: 0, llmCostUsd: spent.costUsd });
    return { status: 'skipped' };
  }

  private async hold(session: SessionRecord, tenantId: string, budget: ReturnType<typeof sessionBudget>, contextTokens: number, threshold: number, why: string, reason: 'llm-outage' | null = null) {
    const until = compactionHold(budget, contextTokens);
    await this.sessions.holdCompactions(session.id, until, reason);
    const fmt = (n: number) => n.toLocaleString('en-US');
    await this.progress.record(session.id, tenantId, [
      {
        type: 'compaction-held',
        line: `Compaction left the context at ${fmt(contextTokens)} tokens, above the ${fmt(threshold)}-token trigger (${why}): the next automatic one waits until ${fmt(until)} tokens`,
        data: { contextTokens, threshold, holdUntilTokens: until, ...(reason ? { reason } : {}) },
      },
    ]);
  }

  /** Records and enqueues an automatic compaction (the sweep uses it too); a trigger folded into a waiting job is answered by it. */
  async requeue(session: { id: string; policy: unknown }, tenantId: string): Promise<string> {
    const jobId = await this.compactions.createJob({ sessionId: session.id, tenantId, trigger: 'threshold', policy: session.policy as Prisma.InputJsonValue });
    try {
      const where = await this.queue.enqueueCompaction({ jobId, sessionId: session.id, tenantId });
      if (where.kind === 'folded') await this.compactions.supersede(jobId, where.into);
    } catch (error) {
      // Redis is away: the row stays queued and the sweep enqueues it when Redis returns.
      if (!(error instanceof QueueUnavailable)) throw error;
      this.logger.warn(`Compaction ${jobId} stays queued for the sweep: ${error.message}`);
    }
    return jobId;
  }
}
