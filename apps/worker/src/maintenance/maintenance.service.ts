import { Inject, Injectable, Logger } from '@nestjs/common';
import { JobName, JobPayload, OnJob } from '@compactor/jobs';
import { IdempotencyRepository } from '@compactor/persistence';

@Injectable()
export class MaintenanceService {
  private readonly logger = new Logger(MaintenanceService.name);

  constructor(@Inject(IdempotencyRepository) private readonly idempotency: IdempotencyRepository) {}

  /** Forgets idempotency keys past their retention, so the table does not grow without bound. */
  @OnJob(JobName.ExpireIdempotencyRecords)
  async expireIdempotencyRecords({ olderThanHours }: JobPayload<JobName.ExpireIdempotencyRecords>) {
    const cutoff = new Date(Date.now() - olderThanHours * 3600 * 1000);
    const deleted = await this.idempotency.deleteOlderThan(cutoff);
    this.logger.log(`Forgot ${deleted} idempotency key(s) older than ${olderThanHours} h`);
    return { deleted };
  }
}
