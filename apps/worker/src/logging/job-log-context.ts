import { AsyncLocalStorage } from 'node:async_hooks';

/** The job a log line belongs to: every line written while a job runs carries it. */
export interface JobLogFields {
  jobId: string;
  job: string;
  sessionId?: string;
}

const store = new AsyncLocalStorage<JobLogFields>();

/** Runs `run` with its job's fields on every log line it (and what it awaits) writes. */
export function withJobLogFields<T>(fields: JobLogFields, run: () => Promise<T>): Promise<T> {
  return store.run(fields, run);
}

/** pino's mixin: the running job's fields, or nothing outside a job. */
export function jobLogFields(): Partial<JobLogFields> {
  return store.getStore() ?? {};
}
