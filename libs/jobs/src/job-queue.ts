import { JobsOptions, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { JobName, JobPayload, jobPayloadSchemas, jobQueues, QueueName } from './job-names';

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
  ) {}

  queue(name: QueueName): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(name, { connection: this.connection, prefix: this.prefix, defaultJobOptions });
      this.queues.set(name, queue);
    }
    return queue;
  }

  async enqueue<N extends JobName>(name: N, payload: JobPayload<N>, options: JobsOptions = {}): Promise<string> {
    const data = jobPayloadSchemas[name].parse(payload);
    const job = await this.queue(jobQueues[name]).add(name, data, options);
    if (!job.id) throw new Error(`BullMQ returned no id for job ${name}`);
    return job.id;
  }

  /** How many jobs of a queue wait (prioritized ones included), run, wait for a retry, or failed for good. */
  async depth(name: QueueName): Promise<{ waiting: number; active: number; delayed: number; failed: number }> {
    const counts = await this.queue(name).getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed');
    return { waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0), active: counts.active ?? 0, delayed: counts.delayed ?? 0, failed: counts.failed ?? 0 };
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
  }
}
