import { Inject, Injectable, Logger } from '@nestjs/common';
import { JobName, JobPayload, OnJob } from '@compactor/jobs';
import { effectiveLimits, IdempotencyRepository, limitDefaults, SessionRepository, TenantLimits, TenantRepository } from '@compactor/persistence';
import { WORKER_CONFIG, WorkerConfig } from '../config/worker-config';

const DAY_MS = 24 * 3600 * 1000;

/** What one retention run deleted, for the job's return value and tests. */
export interface RetentionResult {
  /** Sessions deleted, all tenants together. */
  deleted: number;
  /** Tenants with a retention in force (not 0). */
  tenants: number;
}

@Injectable()
export class MaintenanceService {
  private readonly logger = new Logger(MaintenanceService.name);
  private readonly limitDefaults: TenantLimits;

  constructor(
    @Inject(IdempotencyRepository) private readonly idempotency: IdempotencyRepository,
    @Inject(SessionRepository) private readonly sessions: SessionRepository,
    @Inject(TenantRepository) private readonly tenants: TenantRepository,
    @Inject(WORKER_CONFIG) config: WorkerConfig,
  ) {
    this.limitDefaults = limitDefaults(config);
  }

  /** Forgets idempotency keys past their retention, so the table does not grow without bound. */
  @OnJob(JobName.ExpireIdempotencyRecords)
  async expireIdempotencyRecords({ olderThanHours }: JobPayload<JobName.ExpireIdempotencyRecords>) {
    const cutoff = new Date(Date.now() - olderThanHours * 3600 * 1000);
    const deleted = await this.idempotency.deleteOlderThan(cutoff);
    this.logger.log(`Forgot ${deleted} idempotency key(s) older than ${olderThanHours} h`);
    return { deleted };
  }

  /**
   * Session retention (issue #15 item 6): deletes each tenant's sessions idle (no append) for
   * longer than its `sessionRetentionDays` (0: kept forever), in batches of `batchSize` sessions
   * per transaction so a big delete never holds its locks for long. A session with a compaction
   * running is left for a later run.
   */
  @OnJob(JobName.ExpireIdleSessions)
  async expireIdleSessions({ batchSize }: JobPayload<JobName.ExpireIdleSessions>): Promise<RetentionResult> {
    const result: RetentionResult = { deleted: 0, tenants: 0 };
    const now = Date.now();
    for (const tenant of await this.tenants.listSettings()) {
      const days = effectiveLimits(tenant.settings, this.limitDefaults).sessionRetentionDays;
      if (days === 0) continue;
      result.tenants += 1;
      const idleBefore = new Date(now - days * DAY_MS);
      for (;;) {
        const batch = await this.sessions.deleteIdle(tenant.id, idleBefore, batchSize, { retentionDays: days });
        if (batch.deleted.length > 0) {
          result.deleted += batch.deleted.length;
          const messages = batch.deleted.reduce((sum, s) => sum + s.lastSeq, 0);
          this.logger.log(
            `Retention: deleted ${batch.deleted.length} session(s) of tenant ${tenant.id} idle for more than ${days} day(s) (${messages} message(s))`,
          );
        }
        // Fewer idle sessions than asked: none left, or the rest run a compaction (kept) or take an append.
        if (batch.candidates < batchSize || batch.deleted.length === 0) break;
      }
    }
    return result;
  }
}
