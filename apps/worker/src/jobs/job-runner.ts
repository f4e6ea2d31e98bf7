import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, OnModuleDestroy, Optional } from '@nestjs/common';
import { withJobLogFields } from '../logging/job-log-context';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import {
  JOB_HANDLER_METADATA,
  JobName,
  JobQueue,
  jobQueues,
  JobRegistry,
  JobRunContext,
  RegisteredHandler,
  queuePrefixFor,
} from '@compactor/jobs';
import { DelayedError, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { WORKER_CONFIG, WorkerConfig, workerLockOptions } from '../config/worker-config';
import { jobFailure, jobFailureDetail } from './job-failure';
import { WorkerActivity } from '../status/worker-activity';
import { MaintenanceSchedules } from '../maintenance/maintenance-schedules';

export const WORKER_REDIS = Symbol('WORKER_REDIS');
/** The worker's fail-fast connection for what it sends on its own: re-queues, wake-ups, heartbeats, schedules. */
export const WORKER_PRODUCER_REDIS = Symbol('WORKER_PRODUCER_REDIS');

/**
 * Discovers @OnJob handlers, builds the registry (which refuses to start on a job with
 * no handler or two), and runs one BullMQ worker per queue that dispatches by job name.
 */
@Injectable()
export class JobRunner implements OnApplicationBootstrap, OnModuleDestroy, OnApplicationShutdown {
  private readonly logger = new Logger(JobRunner.name);
  private readonly workers: Worker[] = [];
  private readonly connections: Redis[] = [];
  readonly registry: JobRegistry;

  constructor(
    discovery: DiscoveryService,
    scanner: MetadataScanner,
    reflector: Reflector,
    @Inject(WORKER_CONFIG) private readonly config: WorkerConfig,
    @Inject(WORKER_REDIS) private readonly redis: Redis,
    private readonly queue: JobQueue,
    private readonly schedules: MaintenanceSchedules,
    // The heartbeat's record of job outcomes; optional so the runner also works without it.
    @Optional() private readonly activity?: WorkerActivity,
  ) {
    const found: RegisteredHandler[] = [];
    for (const wrapper of discovery.getProviders()) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      if (!instance || typeof instance !== 'object') continue;
      const prototype = Object.getPrototypeOf(instance);
      for (const method of scanner.getAllMethodNames(prototype)) {
        const name = reflector.get<JobName | undefined>(JOB_HANDLER_METADATA, prototype[method]);
        if (!name) continue;
        // The instance is looked up when a job runs: here, in the constructor, a provider Nest has not
        // built yet (its dependencies resolve later) is still a placeholder without its fields.
        const handler = (payload: unknown, context: JobRunContext) => (wrapper.instance as Record<string, (payload: unknown, context: JobRunContext) => Promise<unknown>>)[method](payload, context);
        found.push({ name, source: `${prototype.constructor.name}.${method}`, handler });
      }
    }
    this.registry = new JobRegistry(found);
  }

  async onApplicationBootstrap(): Promise<void> {
    const queues = new Set(this.registry.names.map((name) => jobQueues[name]));
    for (const queueName of queues) {
      // A worker blocks its connection while waiting for jobs, so it gets its own.
      const connection = this.redis.duplicate();
      this.connections.push(connection);
      const worker: Worker = new Worker(
        queueName,
        (job, token, signal) =>
          // Every line the job writes names it and its session (logs read with the worker's pino logger).
          withJobLogFields({ jobId: String(job.id), job: job.name, ...sessionOf(job.data) }, () =>
            this.registry.dispatch(job.name, job.data, {
              signal,
              finalAttempt: job.attemptsMade + 1 >= (job.opts.attempts ?? 1),
              // Waits outside the attempts (an LLM outage): the job goes back to the queue, delayed, and this run ends.
              retryLater: async (delayMs: number) => {
                await job.moveToDelayed(Date.now() + delayMs, token);
                throw new DelayedError();
              },
            }),
          ).catch((error: unknown) => {
            if (error instanceof DelayedError) throw error;
            const failure = jobFailure(error);
            // BullMQ keeps the failure's code and fixed message (tenants read it on the job's row); only the log has the original.
            this.logger.warn(`Job ${job.name} ${job.id}: ${failure.message} (${jobFailureDetail(error)})`);
            throw failure;
          }),
        { connection, prefix: queuePrefixFor(this.config.REDIS_URL, this.config.QUEUE_PREFIX), concurrency: this.config.WORKER_CONCURRENCY, ...workerLockOptions(this.config) },
      );
      // A lock this worker could not renew may already be another worker's: the run here stops at its next step.
      worker.on('lockRenewalFailed', (jobIds) => {
        for (const id of jobIds) worker.cancelJob(id, 'lock lost');
      });
      worker.on('completed', (job, result) => this.activity?.jobCompleted(job.name, result));
      worker.on('failed', (job, error) => {
        this.activity?.jobFailed(job?.name ?? 'unknown');
        this.logger.warn(`Job ${job?.name} ${job?.id} failed (attempt ${job?.attemptsMade}): ${error.message}`);
      });
      worker.on('error', (error) => this.logger.error(`Worker error on ${queueName}: ${error.message}`));
      this.workers.push(worker);
    }
    // Redis down at start-up: the worker starts anyway (its consumers connect when Redis returns) and the sweep puts back
    // the schedules Redis does not have once it answers.
    await this.schedules.upsertAll().catch((error: Error) => this.logger.warn(`Maintenance schedules not written yet (the sweep restores them when Redis answers): ${error.message}`));
    const lock = workerLockOptions(this.config);
    this.logger.log(
      `Handling ${this.registry.names.length} job type(s) on ${queues.size} queue(s); job locks ${lock.lockDuration} ms renewed every ${lock.lockRenewTime} ms, stalled check every ${lock.stalledInterval} ms`,
    );
  }

  /**
   * Stops taking jobs and waits for the running ones to finish (BullMQ Worker.close()), so a deploy
   * never cuts one in half. app.close() (main.ts on SIGTERM) calls it first thing: Nest destroys this
   * module before the persistence module it imports. A drain left to onApplicationShutdown ran after
   * the database pools had closed: a running job failed against them ("Cannot use a pool after calling
   * end on the pool"), was retried with backoff by the worker still open, and closing the pool waited on
   * it (compaction-sweep.int-spec's afterAll: 60 s, about one run in six).
   */
  async onModuleDestroy(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.close()));
  }

  async onApplicationShutdown(): Promise<void> {
    await this.queue.close();
    // BullMQ leaves connections it was given open; these are ours to close.
    await Promise.all(this.connections.map((c) => c.quit().catch(() => c.disconnect())));
  }
}

/** A job payload's session (internal id), when it names one. */
function sessionOf(data: unknown): { sessionId?: string } {
  const id = typeof data === 'object' && data !== null ? (data as { sessionId?: unknown }).sessionId : undefined;
  return typeof id === 'string' ? { sessionId: id } : {};
}
