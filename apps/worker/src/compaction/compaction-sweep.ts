import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy, Optional } from '@nestjs/common';
import { compactionDue, isPresetImplemented, PolicyInput, sessionBudget, thresholdTokens } from '@compactor/compaction';
import { JobQueue } from '@compactor/jobs';
import { probeSummarizer, SummarizerHealth } from '@compactor/llm';
import { CompactionRepository, SessionRepository } from '@compactor/persistence';
import type { Redis } from 'ioredis';
import { hostname } from 'node:os';
import { WORKER_CONFIG, WorkerConfig } from '../config/worker-config';
import { WORKER_REDIS } from '../jobs/job-runner';
import { safeFailedReason } from '../jobs/job-failure';
import { CompactionProgress } from './compaction-progress';
import { CompactionService } from './compaction.service';
import { llmHoldRetryMs } from './llm-outage';
import { MaintenanceSchedules } from '../maintenance/maintenance-schedules';
import { WorkerActivity } from '../status/worker-activity';

/** What one sweep did, for logs and tests. */
export interface SweepResult {
  /** Queued rows BullMQ did not have (Redis was down at enqueue, or lost its data), enqueued again. */
  reenqueued: number;
  /** Rows BullMQ ended (attempts used up, stalled too often) or lost while running, marked failed. */
  failed: number;
  /** Sessions over their threshold with no compaction to answer it (an API killed before enqueueing, a lost job), scheduled. */
  scheduled: number;
  /** Sessions whose llm-outage hold was lifted (the summarizer probe said up, or the hold's time ran out), compaction re-queued. */
  resumed: number;
}

const ROWS_PER_SWEEP = 200;
const SESSIONS_PER_SWEEP = 500;
const HOLDS_PER_SWEEP = 200;
/** Sessions idle longer than this are not swept: their last append's compaction has long been decided. */
const SESSION_WINDOW_MS = 24 * 3600 * 1000;

/**
 * Keeps compaction rows and BullMQ in agreement, every COMPACTION_SWEEP_INTERVAL_MS, on one
 * worker at a time (a Redis lock): a row always ends in the state BullMQ ended its job in, and
 * compactions that were due while Redis was down, or that Redis lost, are enqueued once it is back
 * (as are the maintenance schedules Redis lost).
 */
@Injectable()
export class CompactionSweep implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(CompactionSweep.name);
  private timer?: NodeJS.Timeout;
  private sweeping?: Promise<unknown>;

  constructor(
    @Inject(WORKER_CONFIG) private readonly config: WorkerConfig,
    @Inject(WORKER_REDIS) private readonly redis: Redis,
    private readonly queue: JobQueue,
    private readonly compactions: CompactionRepository,
    private readonly sessions: SessionRepository,
    private readonly compaction: CompactionService,
    private readonly schedules: MaintenanceSchedules,
    private readonly progress: CompactionProgress,
    @Optional() private readonly activity?: WorkerActivity,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => {
      if (!this.sweeping) this.sweeping = this.tick().finally(() => (this.sweeping = undefined));
    }, this.config.COMPACTION_SWEEP_INTERVAL_MS);
  }

  /**
   * No new tick, and the one running finished, before the modules it uses close (onModuleDestroy: app.close() destroys
   * this module before the persistence module): a tick left running while the database pools and the Redis connections
   * close could wait on them.
   */
  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.sweeping;
  }

  private async tick(): Promise<void> {
    // While Redis is away nothing can be enqueued (and commands would wait for it): the next tick tries again.
    if (this.redis.status !== 'ready') return;
    try {
      const lock = await this.redis.set(`${this.config.QUEUE_PREFIX}:compaction-sweep`, `${hostname()}:${process.pid}`, 'PX', Math.max(1000, this.config.COMPACTION_SWEEP_INTERVAL_MS - 500), 'NX');
      if (lock !== 'OK') return;
      // Redis restarted empty: the maintenance schedules went with its data.
      const restored = await this.schedules.restoreMissing();
      if (restored.length > 0) this.logger.log(`Maintenance schedules Redis had lost, created again: ${restored.join(', ')}`);
      const result = await this.sweep();
      if (result.reenqueued + result.failed + result.scheduled + result.resumed > 0) {
        this.logger.log(`Compaction sweep: ${result.reenqueued} re-enqueued, ${result.failed} marked failed, ${result.scheduled} scheduled, ${result.resumed} resumed after an LLM outage`);
      }
    } catch (error) {
      this.logger.warn(`Compaction sweep failed: ${(error as Error).message}`);
    }
  }

  /** One pass; rows and sessions younger than one interval are left to the API and the running jobs. */
  async sweep(now = new Date()): Promise<SweepResult> {
    const settled = new Date(now.getTime() - this.config.COMPACTION_SWEEP_INTERVAL_MS);
    const result: SweepResult = { reenqueued: 0, failed: 0, scheduled: 0, resumed: 0 };
    for (const row of await this.compactions.unfinishedSince(settled, ROWS_PER_SWEEP)) {
      const found = await this.queue.compactionState(row.id, row.sessionId);
      if (found.state === 'failed') {
        if (await this.compactions.failUnfinished(row.id, safeFailedReason(found.reason))) result.failed += 1;
      } else if (found.state === 'missing' && row.status === 'running') {
        // Redis lost the job while it ran: nothing will finish it. The session is scheduled again below.
        if (await this.compactions.failUnfinished(row.id, 'lost: the queue no longer has this job (Redis restarted or lost its data)')) result.failed += 1;
      } else if (found.state === 'missing') {
        const where = await this.queue.enqueueCompaction({ jobId: row.id, sessionId: row.sessionId, tenantId: row.tenantId }, { dryRun: row.dryRun });
        if (where.kind === 'folded') await this.compactions.supersede(row.id, where.into);
        result.reenqueued += 1;
      }
    }
    result.resumed = await this.resumeAfterLlmOutage(now);
    const since = new Date(now.getTime() - SESSION_WINDOW_MS);
    for (const { id } of await this.compactions.sessionsWithoutPendingCompaction(since, settled, SESSIONS_PER_SWEEP)) {
      const session = await this.sessions.findById(id);
      if (!session) continue;
      const policy = session.policy as PolicyInput;
      if (!isPresetImplemented(policy.preset)) continue;
      if (!compactionDue(session.contextTokens, thresholdTokens(sessionBudget(session), policy), session.compactionHoldTokens)) continue;
      await this.compaction.requeue(session, session.tenantId);
      result.scheduled += 1;
    }
    return result;
  }

  /**
   * Lifts the holds an LLM outage left (issue #15): one probe of the summarizer per sweep, only when a session is
   * held. `up`: the first hold in a row is lifted at once, the n-th after COMPACTION_LLM_HOLD_RETRY_MS × 2^(n-2);
   * `unknown`: after COMPACTION_LLM_HOLD_RETRY_MS doubled per hold in a row (cap 6 h); `down`: none. Each lift is a compare-and-swap on the hold's time (one worker, once), then the
   * compaction is re-queued through the usual path and the session gets a `compaction-resumed` event.
   */
  private async resumeAfterLlmOutage(now: Date): Promise<number> {
    const holds = await this.sessions.llmOutageHolds(HOLDS_PER_SWEEP);
    if (holds.length === 0) return 0;
    const health: SummarizerHealth = await probeSummarizer(this.config);
    // The heartbeat carries it: /v1/status stops saying "failing" once the summarizer answers again.
    this.activity?.llmProbed(health);
    if (health === 'down') return 0;
    let resumed = 0;
    for (const hold of holds) {
      // `up` lifts the first hold in a row at once; a later one (the models endpoint answered but the compaction failed
      // again: a provider whose completions alone are down) waits as an `unknown` one a hold earlier would, so a lift
      // never turns into a loop of failing compactions.
      const base = this.config.COMPACTION_LLM_HOLD_RETRY_MS;
      const waitMs = health === 'up' ? (hold.holdCount <= 1 ? 0 : llmHoldRetryMs(hold.holdCount - 1, base)) : llmHoldRetryMs(hold.holdCount, base);
      if (now.getTime() - hold.holdAt.getTime() < waitMs) continue;
      if (!(await this.sessions.liftLlmOutageHold(hold.id, hold.holdAt))) continue;
      const jobId = await this.compaction.requeue(hold, hold.tenantId);
      const why = health === 'up' ? 'the summarizer answers again' : `the summarizer's state is unknown and the hold is ${Math.round(waitMs / 60_000)} min old`;
      await this.progress.record(hold.id, hold.tenantId, [
        {
          type: 'compaction-resumed',
          line: `Automatic compaction resumed: ${why} (held since ${hold.holdAt.toISOString()} by an LLM outage)`,
          data: { jobId, probe: health, heldSince: hold.holdAt.toISOString(), holds: hold.holdCount },
        },
      ]);
      resumed += 1;
    }
    return resumed;
  }
}
