import { UnrecoverableError } from 'bullmq';
import { JobName, JobPayload, jobPayloadSchemas } from './job-names';

/** What a handler knows of its run besides the payload. */
export interface JobRunContext {
  /** Aborted when this worker lost the job's lock (another worker may take it over): stop before the next expensive step. */
  signal?: AbortSignal;
  /** True on the last attempt BullMQ will make: a failure now ends the job for good. */
  finalAttempt?: boolean;
  /**
   * Puts the job back in the queue to run again after `delayMs`, without using up an attempt, and
   * ends this run (it throws BullMQ's DelayedError, which the handler must let through).
   */
  retryLater?: (delayMs: number) => Promise<never>;
}

export type JobHandlerFn<N extends JobName = JobName> = (payload: JobPayload<N>, context: JobRunContext) => Promise<unknown>;

export interface RegisteredHandler {
  name: JobName;
  /** Where the handler was declared, for error messages. */
  source: string;
  handler: JobHandlerFn;
}

export class JobRegistryError extends Error {
  constructor(readonly problems: string[]) {
    super(`The job registry is incomplete:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'JobRegistryError';
  }
}

/**
 * Maps every job name to exactly one handler. A worker that would start with a job
 * nobody handles, or with two handlers racing for one, refuses to start.
 */
export class JobRegistry {
  private readonly handlers: ReadonlyMap<JobName, JobHandlerFn>;

  constructor(registered: RegisteredHandler[], names: readonly JobName[] = Object.values(JobName)) {
    const problems: string[] = [];
    const map = new Map<JobName, JobHandlerFn>();
    for (const name of names) {
      const found = registered.filter((r) => r.name === name);
      if (found.length === 0) problems.push(`job "${name}" has no handler`);
      if (found.length > 1) problems.push(`job "${name}" has ${found.length} handlers: ${found.map((f) => f.source).join(', ')}`);
      if (found.length === 1) map.set(name, found[0].handler);
    }
    for (const r of registered) {
      if (!names.includes(r.name)) problems.push(`${r.source} handles unknown job "${r.name}"`);
    }
    if (problems.length > 0) throw new JobRegistryError(problems);
    this.handlers = map;
  }

  /**
   * Parses the payload and runs the handler. A payload that fails its schema can never
   * succeed, so it fails without retries; a handler error is rethrown so BullMQ retries.
   */
  async dispatch(name: string, data: unknown, context: JobRunContext = {}): Promise<unknown> {
    const handler = this.handlers.get(name as JobName);
    if (!handler) throw new UnrecoverableError(`No handler for job "${name}"`);
    const parsed = jobPayloadSchemas[name as JobName].safeParse(data);
    if (!parsed.success) {
      const fields = parsed.error.issues.map((i) => `${i.path.join('.') || '(payload)'}: ${i.message}`).join('; ');
      throw new UnrecoverableError(`Invalid payload for job "${name}": ${fields}`);
    }
    return handler(parsed.data, context);
  }

  get names(): JobName[] {
    return [...this.handlers.keys()];
  }
}
