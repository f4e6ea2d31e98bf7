import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { JobQueue, QueueName } from '@compactor/jobs';
import { CompactionRepository, CompactionTrigger, JobAlreadyRecorded, Prisma } from '@compactor/persistence';

/** A recorded compaction and whether it reached the queue. */
export interface ScheduledCompaction {
  jobId: string;
  /** False when Redis did not take it: an automatic trigger's row stays queued and the workers' sweep enqueues it when Redis returns. */
  queued: boolean;
}

/** Records a compaction job and hands it to the workers (one running per session; the latest trigger waits). */
@Injectable()
export class CompactionScheduler implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(CompactionScheduler.name);

  constructor(
    private readonly compactions: CompactionRepository,
    @Inject(JobQueue) private readonly queue: JobQueue,
  ) {}

  /**
   * Opens the queue at startup, while Redis answers (the API does not start without it): BullMQ
   * waits for Redis to be ready when a queue is first opened, so a queue first opened during an
   * outage would make every enqueue wait for its timeout instead of failing at once.
   */
  onModuleInit(): void {
    this.queue.queue(QueueName.Compaction);
  }

  async schedule(
    session: { id: string; tenantId: string; policy: unknown },
    trigger: CompactionTrigger,
    options: { jobId?: string; dryRun?: boolean; timing?: { mark(stage: string): void } } = {},
  ): Promise<ScheduledCompaction> {
    const id = await this.compactions.createJob({
      sessionId: session.id,
      tenantId: session.tenantId,
      trigger,
      policy: session.policy as Prisma.InputJsonValue,
      dryRun: options.dryRun ?? false,
      ...(options.jobId ? { id: options.jobId } : {}),
    });
    // An append's Server-Timing (issue #21: what a compaction scheduled on the request path costs): the job row, then the queue.
    options.timing?.mark('jobrow');
    try {
      // A dry run changes nothing, so it never folds into (or displaces) a real run.
      const where = await this.queue.enqueueCompaction({ jobId: id, sessionId: session.id, tenantId: session.tenantId }, { dryRun: options.dryRun });
      // Folded into a job that has not started: that run covers this trigger's messages, and the row says which it is.
      if (where.kind === 'folded') await this.compactions.supersede(id, where.into);
      options.timing?.mark('enqueue');
      return { jobId: id, queued: true };
    } catch (error) {
      this.logger.warn(`Could not enqueue compaction ${id}: ${(error as Error).message}`);
      // An automatic trigger stays queued for the sweep; one a client asked for fails now, so the client sees why.
      if (trigger === 'manual' || options.dryRun) await this.compactions.finishJob(id, { status: 'failed', error: `could not enqueue: ${(error as Error).message}` });
      return { jobId: id, queued: false };
    }
  }

  /** The job an earlier answer named, recorded and scheduled when that request ended before it could (a killed API). */
  async ensureRecorded(session: { id: string; tenantId: string; policy: unknown }, jobId: string): Promise<void> {
    if (await this.compactions.jobExists(jobId)) return;
    await this.schedule(session, 'threshold', { jobId }).catch((error: unknown) => {
      // Two replays at once: the other one recorded it.
      if (!(error instanceof JobAlreadyRecorded)) throw error;
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.queue.close();
  }
}
