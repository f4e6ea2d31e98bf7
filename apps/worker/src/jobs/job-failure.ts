import { isDatabaseUnavailable } from '@compactor/persistence';

/** A job attempt that failed because PostgreSQL could not be reached; the driver's error is its cause. */
export class DatabaseUnavailableForJob extends Error {
  constructor(cause: unknown) {
    super('database unavailable', { cause });
    this.name = 'DatabaseUnavailableForJob';
  }
}

/**
 * The error a failed job attempt hands to BullMQ, whose message becomes the job's failed reason
 * (and the compaction row's error, which tenants read): a database that could not be reached is
 * named as such, without the driver's text (its host and port, the query). Other errors pass as
 * they are. The worker logs the original.
 */
export function jobFailure(error: unknown): unknown {
  return isDatabaseUnavailable(error) && !(error instanceof DatabaseUnavailableForJob) ? new DatabaseUnavailableForJob(error) : error;
}
