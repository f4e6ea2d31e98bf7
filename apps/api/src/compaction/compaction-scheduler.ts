import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { compactionJobOptions, JobName, JobQueue } from '@compactor/jobs';
import { CompactionRepository, CompactionTrigger, Prisma } from '@compactor/persistence';

/** Records a compaction job and hands it to the workers (one running per session; the latest trigger waits). */
@Injectable()
export class CompactionScheduler implements OnApplicationShutdown {
  private readonly logger = new Logger(CompactionScheduler.name);

  constructor(
    private readonly compactions: CompactionRepository,
    @Inject(JobQueue) private readonly queue: JobQueue,
  ) {}

  async schedule(
    session: { id: string; tenantId: string; policy: unknown },
    trigger: CompactionTrigger,
    options: { jobId?: string; dryRun?: boolean } = {},
  ): Promise<string> {
    const id = await this.compactions.createJob({
      sessionId: session.id,
      tenantId: session.tenantId,
      trigger,
      policy: session.policy as Prisma.InputJsonValue,
      dryRun: options.dryRun ?? false,
      ...(options.jobId ? { id: options.jobId } : {}),
    });
    try {
      // A dry run changes nothing, so it never folds into (or displaces) a real run.
      await this.queue.enqueue(JobName.Compact, { jobId: id, sessionId: session.id, tenantId: session.tenantId }, options.dryRun ? {} : compactionJobOptions(session.id));
    } catch (error) {
      // Redis is down: the job is recorded as failed; the next append over the threshold schedules again.
      await this.compactions.finishJob(id, { status: 'failed', error: `could not enqueue: ${(error as Error).message}` });
      this.logger.warn(`Could not enqueue compaction ${id}: ${(error as Error).message}`);
    }
    return id;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.queue.close();
  }
}
