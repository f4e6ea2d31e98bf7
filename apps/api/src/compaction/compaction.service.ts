import { Inject, Injectable } from '@nestjs/common';
import { advanceWatermark, sessionBudget, DomainError, thresholdTokens, ValidationFailed, VersionPrefix } from '@compactor/compaction';
import { ApiErrorCode, JobNotFound } from '../errors/http-errors';
import { EventPublisher } from '@compactor/jobs';
import { CompactionRepository, prefixOf, SUPERSEDED_BY } from '@compactor/persistence';
import { API_CONFIG, ApiConfig } from '../config/api-config';
import { ContextFormat, ContextService } from '../sessions/context.service';
import { SessionsService } from '../sessions/sessions.service';
import { CompactionScheduler } from './compaction-scheduler';
import { CompactResponse, DryRunLedgerView, JobView, WatermarkResponse } from './compaction.dto';
import { sessionPolicy } from '../sessions/session-config';

const FINISHED = new Set(['succeeded', 'skipped', 'failed']);
const POLL_MS = 100;

interface DryRunResult {
  status: string;
  throughSeq: number;
  prefix: VersionPrefix;
  ledger?: DryRunLedgerView | null;
}

/** Manual and dry-run compactions, and job reports. The work itself runs in the workers. */
@Injectable()
export class CompactionService {
  constructor(
    private readonly sessions: SessionsService,
    private readonly compactions: CompactionRepository,
    private readonly scheduler: CompactionScheduler,
    private readonly contexts: ContextService,
    private readonly publisher: EventPublisher,
    @Inject(API_CONFIG) private readonly config: ApiConfig,
  ) {}

  async compact(tenantId: string, externalId: string, input: { dryRun: boolean; format: ContextFormat }): Promise<CompactResponse> {
    const session = await this.sessions.require(tenantId, externalId);
    const { jobId } = await this.scheduler.schedule(session, 'manual', { dryRun: input.dryRun });
    if (!input.dryRun) return { job: await this.job(tenantId, jobId) };

    const deadline = Date.now() + this.config.DRY_RUN_TIMEOUT_MS;
    let job = await this.job(tenantId, jobId);
    while (!FINISHED.has(job.status) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      job = await this.job(tenantId, jobId);
    }
    if (job.status !== 'succeeded') return { job };
    const dry = (await this.compactions.intermediate(jobId)).dryRun as DryRunResult | undefined;
    if (!dry) return { job };
    const context = await this.contexts.preview(tenantId, externalId, dry.prefix, dry.throughSeq, input.format);
    return {
      job,
      savedTokens: (job.tokensBefore ?? 0) - (job.tokensAfter ?? 0),
      context: context as unknown as Record<string, unknown>,
      ...(dry.ledger ? { ledger: dry.ledger } : {}),
    };
  }

  /**
   * Seed 001's watermark, set over the API: a new context version with the watermark at `seq`
   * (default: the latest message), then a compaction with trigger `watermark`. It only advances.
   */
  async advanceWatermark(tenantId: string, externalId: string, seq?: number): Promise<WatermarkResponse> {
    const session = await this.sessions.require(tenantId, externalId);
    const target = seq ?? session.lastSeq;
    if (target < 1 || target > session.lastSeq) {
      throw new ValidationFailed([{ field: 'seq', message: `must be a message of the session (1..${session.lastSeq})` }]);
    }
    const head = await this.compactions.head(session.id, session.headVersionId);
    const prefix = prefixOf(head);
    const advanced = advanceWatermark(prefix, target);
    if (!advanced.advanced) return { advanced: false, reason: advanced.reason ?? null, watermarkSeq: prefix.watermarkSeq ?? null, jobId: null };
    const policy = sessionPolicy(session);
    const budget = sessionBudget(session);
    const versionId = await this.compactions.commit({
      sessionId: session.id,
      tenantId,
      cause: 'watermark',
      baseVersionId: session.headVersionId,
      coversThroughSeq: prefix.coversThroughSeq,
      treatments: prefix.treatments,
      checkpoints: prefix.checkpoints,
      watermarkSeq: target,
      goalBlock: prefix.goalBlock,
      artifactIds: Object.values(prefix.treatments).flatMap((t) => (t.kind === 'offloaded' ? t.artifactIds : [])),
      prefixTokens: prefix.checkpoints.reduce((n, c) => n + c.tokens, 0),
      loadedThroughSeq: session.lastSeq,
      budget: budget.budget,
      threshold: thresholdTokens(budget, policy),
      events: [{ type: 'watermark-advanced', line: `Watermark advanced to message ${target}${prefix.watermarkSeq ? ` (was ${prefix.watermarkSeq})` : ''}` }],
    });
    if (!versionId) throw new DomainError(ApiErrorCode.Conflict, 'A compaction or restore changed the context meanwhile; send the request again');
    this.publisher.notify(session.id);
    const { jobId } = await this.scheduler.schedule(session, 'watermark');
    return { advanced: true, reason: null, watermarkSeq: target, jobId };
  }

  async job(tenantId: string, jobId: string): Promise<JobView> {
    const job = await this.compactions.findJobView(tenantId, jobId);
    if (!job) throw new JobNotFound(jobId);
    return {
      id: job.id,
      sessionId: job.sessionExternalId,
      trigger: job.trigger,
      status: job.status,
      dryRun: job.dryRun,
      reason: job.reason,
      supersededBy: job.status === 'skipped' && job.reason?.startsWith(SUPERSEDED_BY) ? job.reason.slice(SUPERSEDED_BY.length) : null,
      steps: Array.isArray(job.steps) ? (job.steps as string[]) : [],
      tokensBefore: job.tokensBefore,
      tokensAfter: job.tokensAfter,
      llmCalls: job.llmCalls,
      llmInputTokens: job.llmInputTokens,
      llmOutputTokens: job.llmOutputTokens,
      llmCostUsd: Number(job.llmCostUsd),
      durationMs: job.durationMs,
      error: job.error,
      resultVersion: job.resultVersion,
      createdAt: job.createdAt.toISOString(),
      startedAt: job.startedAt?.toISOString() ?? null,
      finishedAt: job.finishedAt?.toISOString() ?? null,
    };
  }
}
