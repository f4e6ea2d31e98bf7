import { Inject, Injectable } from '@nestjs/common';
import { JobName, JobQueue, QueueName, withinTimeout } from '@compactor/jobs';
import { WORKER_CONFIG, WorkerConfig } from '../config/worker-config';

export const IDEMPOTENCY_EXPIRY_SCHEDULER = 'expire-idempotency-hourly';
/** The repeatable job of session retention (one schedule however many workers start; the last one started sets its interval). */
export const SESSION_RETENTION_SCHEDULER = 'expire-idle-sessions';

/**
 * The repeating maintenance jobs, kept by BullMQ's job schedulers in Redis. Every worker upserts
 * them when it starts (one schedule per id however many workers start); the compaction sweep puts
 * back those Redis no longer has (it restarted empty), so maintenance does not wait for a restart.
 */
@Injectable()
export class MaintenanceSchedules {
  constructor(
    @Inject(WORKER_CONFIG) private readonly config: WorkerConfig,
    private readonly queue: JobQueue,
  ) {}

  private all() {
    return [
      {
        id: IDEMPOTENCY_EXPIRY_SCHEDULER,
        every: 3600 * 1000,
        job: { name: JobName.ExpireIdempotencyRecords, data: { olderThanHours: this.config.IDEMPOTENCY_TTL_HOURS } },
      },
      {
        id: SESSION_RETENTION_SCHEDULER,
        every: this.config.SESSION_RETENTION_INTERVAL_MS,
        job: { name: JobName.ExpireIdleSessions, data: { batchSize: this.config.SESSION_RETENTION_BATCH_SIZE } },
      },
    ];
  }

  /** Creates or updates every schedule; QueueUnavailable when Redis does not take one within ENQUEUE_TIMEOUT_MS (BullMQ waits for a connection). */
  async upsertAll(): Promise<void> {
    const queue = this.queue.queue(QueueName.Maintenance);
    for (const s of this.all()) await withinTimeout(queue.upsertJobScheduler(s.id, { every: s.every }, s.job));
  }

  /** Creates the schedules Redis does not have; returns their ids. QueueUnavailable as upsertAll. */
  async restoreMissing(): Promise<string[]> {
    const queue = this.queue.queue(QueueName.Maintenance);
    const restored: string[] = [];
    for (const s of this.all()) {
      if (await withinTimeout(queue.getJobScheduler(s.id))) continue;
      await withinTimeout(queue.upsertJobScheduler(s.id, { every: s.every }, s.job));
      restored.push(s.id);
    }
    return restored;
  }
}
