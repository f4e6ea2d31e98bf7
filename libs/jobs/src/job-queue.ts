import { JobsOptions, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { compactionDeduplicationId, compactionJobOptions, JobName, JobPayload, jobPayloadSchemas, jobQueues, QueueName } from './job-names';

/** How long an enqueue may take before the caller treats the queue as unavailable (a Redis that accepts connections but does not answer). */
export const ENQUEUE_TIMEOUT_MS = 2000;

export class QueueUnavailable extends Error {
  constructor(cause: unknown) {
    super(`queue unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** The command's result, or QueueUnavailable when it fails or Redis does not answer within `ms` (a Redis that accepts connections but does not answer). */
export async function withinTimeout<T>(command: Promise<T>, ms: number = ENQUEUE_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis did not answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([command, timeout]);
  } catch (error) {
    throw error instanceof QueueUnavailable ? error : new QueueUnavailable(error);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Where a compaction trigger went. BullMQ keeps one job per session (deduplication with
 * keepLastIfActive): a trigger is its own job, or waits as the one run after the running job,
 * or was folded into a job that is still waiting (and will see its messages).
 */
export type CompactionEnqueue = { kind: 'enqueued' } | { kind: 'after-running' } | { kind: 'folded'; into: string };

/** A compaction job's state in BullMQ, for reconciling its row; `missing` when BullMQ does not know it. */
export type QueuedJobState =
  | { state: 'missing' | 'pending-next' }
  | { state: 'waiting' | 'active' | 'delayed' | 'completed' | 'unknown' }
  | { state: 'failed'; reason: string };

/** Default retry policy for infrastructure failures (LLM retries happen inside providers). */
export const defaultJobOptions: JobsOptions = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: { age: 24 * 3600, count: 10000 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

/** Enqueues typed jobs; payloads are validated before they reach Redis. */
export class JobQueue {
  private readonly queues = new Map<QueueName, Queue>();

  constructor(
    private readonly connection: Redis,
    readonly prefix: string,
    /** Set when the connection is the queue's own (createProducerConnection): close() closes it too. */
    private readonly ownsConnection = false,
  ) {}

  queue(name: QueueName): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(name, { connection: this.connection, prefix: this.prefix, defaultJobOptions });
      // Connection errors reach the callers' commands (enqueue throws QueueUnavailable); without a listener BullMQ
      // prints every reconnection attempt's error to stderr while Redis is down.
      queue.on('error', () => undefined);
      this.queues.set(name, queue);
    }
    return queue;
  }

  /** Adds a job; throws QueueUnavailable when Redis does not take it within ENQUEUE_TIMEOUT_MS. Returns BullMQ's id (an existing job's when deduplicated). */
  async enqueue<N extends JobName>(name: N, payload: JobPayload<N>, options: JobsOptions = {}): Promise<string> {
    const data = jobPayloadSchemas[name].parse(payload);
    const job = await withinTimeout(this.queue(jobQueues[name]).add(name, data, options), ENQUEUE_TIMEOUT_MS);
    if (!job.id) throw new QueueUnavailable(new Error(`BullMQ returned no id for job ${name}`));
    return job.id;
  }

  /**
   * Enqueues a compaction under its row's id (so a row can always be found in BullMQ) and says
   * where the trigger went; a dry run is never deduplicated. Throws QueueUnavailable.
   */
  async enqueueCompaction(payload: JobPayload<JobName.Compact>, options: { dryRun?: boolean } = {}): Promise<CompactionEnqueue> {
    const id = await this.enqueue(JobName.Compact, payload, { jobId: payload.jobId, ...(options.dryRun ? {} : compactionJobOptions(payload.sessionId)) });
    if (id === payload.jobId) return { kind: 'enqueued' };
    return (await this.compactionState(payload.jobId, payload.sessionId)).state === 'pending-next' ? { kind: 'after-running' } : { kind: 'folded', into: id };
  }

  /** Where BullMQ has a compaction job: its state, waiting as the run after the running one, or missing. QueueUnavailable when Redis does not answer within ENQUEUE_TIMEOUT_MS. */
  compactionState(jobId: string, sessionId: string): Promise<QueuedJobState> {
    return withinTimeout(this.readCompactionState(jobId, sessionId));
  }

  private async readCompactionState(jobId: string, sessionId: string): Promise<QueuedJobState> {
    const queue = this.queue(QueueName.Compaction);
    const job = await queue.getJob(jobId);
    if (job) {
      const state = await job.getState();
      // A job BullMQ failed between the two reads (its stalled check, say) has its reason only in a fresh read of it:
      // without it the sweep closed a stalled job's row as `internal-error` (job-failures.int-spec, once in a fresh clone).
      if (state === 'failed') return { state: 'failed', reason: job.failedReason || (await queue.getJob(jobId))?.failedReason || 'failed in the queue' };
      if (state === 'waiting' || state === 'prioritized' || state === 'waiting-children') return { state: 'waiting' };
      if (state === 'active' || state === 'delayed' || state === 'completed') return { state };
      return { state: 'unknown' };
    }
    const client = await queue.backend.client;
    const next = await client.hget(queue.toKey(`dn:${compactionDeduplicationId(sessionId)}`), 'jid');
    return next === jobId ? { state: 'pending-next' } : { state: 'missing' };
  }

  /** How many jobs of a queue wait (prioritized ones included), run, wait for a retry, or failed for good. */
  /** Jobs of a queue by state; throws QueueUnavailable when Redis does not answer within `timeoutMs` (its connection may have no command timeout). */
  async depth(name: QueueName, timeoutMs = ENQUEUE_TIMEOUT_MS): Promise<{ waiting: number; active: number; delayed: number; failed: number }> {
    const counts = await withinTimeout(this.queue(name).getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed'), timeoutMs);
    return { waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0), active: counts.active ?? 0, delayed: counts.delayed ?? 0, failed: counts.failed ?? 0 };
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    if (this.ownsConnection) await this.connection.quit().catch(() => this.connection.disconnect());
  }
}
