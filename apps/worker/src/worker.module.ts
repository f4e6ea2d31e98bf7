import { DynamicModule, Inject, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { createProducerConnection, createRedisConnection, EventPublisher, JobQueue, queuePrefixFor, settled } from '@compactor/jobs';
import { createSummarizer, describeSummarizerConfig, parseSummarizerConfig } from '@compactor/llm';
import { PersistenceModule } from '@compactor/persistence';
import type { Redis } from 'ioredis';
import { compactionEnvParams, WORKER_CONFIG, WorkerConfig } from './config/worker-config';
import { JobRunner, WORKER_PRODUCER_REDIS, WORKER_REDIS } from './jobs/job-runner';
import { MaintenanceService } from './maintenance/maintenance.service';
import { MaintenanceSchedules } from './maintenance/maintenance-schedules';
import { COMPACTION_ENV_PARAMS, CompactionService, SUMMARIZER } from './compaction/compaction.service';
import { SpendCaps } from './compaction/spend-caps';
import { CompactionProgress } from './compaction/compaction-progress';
import { CompactionSweep } from './compaction/compaction-sweep';
import { WorkerActivity } from './status/worker-activity';
import { WorkerHeartbeatService } from './status/worker-heartbeat.service';

/** This worker's activity record, with its summarizer described without secrets (for the heartbeat). */
function workerActivity(config: WorkerConfig): WorkerActivity {
  const summarizer = describeSummarizerConfig(parseSummarizerConfig(config));
  return new WorkerActivity(
    { provider: summarizer.provider, model: summarizer.model, endpoint: summarizer.endpoint ?? null, keyConfigured: summarizer.keyConfigured, timeoutMs: summarizer.timeoutMs },
    config.WORKER_CONCURRENCY,
    [config.OPENAI_API_KEY, config.ANTHROPIC_API_KEY],
  );
}

@Module({})
export class WorkerModule implements OnApplicationShutdown {
  constructor(
    @Inject(WORKER_REDIS) private readonly redis: Redis,
    @Inject(WORKER_PRODUCER_REDIS) private readonly producer: Redis,
  ) {}

  static forRoot(config: WorkerConfig): DynamicModule {
    return {
      module: WorkerModule,
      imports: [DiscoveryModule, PersistenceModule.forRoot({ databaseUrl: config.DATABASE_URL, preparedStatements: config.DATABASE_PREPARED_STATEMENTS })],
      providers: [
        { provide: WORKER_CONFIG, useValue: config },
        // The BullMQ workers' connection (duplicated per queue): it waits for Redis, as a blocking consumer must.
        { provide: WORKER_REDIS, useFactory: () => createRedisConnection(config.REDIS_URL) },
        // Everything the worker sends on its own (re-queues, wake-ups, heartbeats, schedules) fails fast while Redis is down
        // instead of piling up in ioredis's offline queue and running late when it returns: the sweep re-enqueues what was due.
        // Connected before the worker starts (a Redis Cluster takes a moment to learn its slots), or failed once.
        {
          provide: WORKER_PRODUCER_REDIS,
          useFactory: async () => {
            const connection = createProducerConnection(config.REDIS_URL);
            await settled(connection);
            return connection;
          },
        },
        {
          provide: JobQueue,
          inject: [WORKER_PRODUCER_REDIS],
          useFactory: (redis: Redis) => new JobQueue(redis, queuePrefixFor(config.REDIS_URL, config.QUEUE_PREFIX)),
        },
        { provide: WorkerActivity, useFactory: () => workerActivity(config) },
        // Every summarizer call goes through the activity record, so the heartbeat tells whether the LLM answers.
        { provide: SUMMARIZER, inject: [WorkerActivity], useFactory: (activity: WorkerActivity) => activity.watch(createSummarizer(config)) },
        { provide: COMPACTION_ENV_PARAMS, useValue: compactionEnvParams(config) },
        {
          provide: EventPublisher,
          inject: [WORKER_PRODUCER_REDIS],
          useFactory: (redis: Redis) =>
            new EventPublisher(redis, config.QUEUE_PREFIX, (e) => new Logger('EventPublisher').warn(`event wake-up not published: ${e.message}`)),
        },
        CompactionProgress,
        JobRunner,
        MaintenanceService,
        MaintenanceSchedules,
        CompactionService,
        SpendCaps,
        CompactionSweep,
        WorkerHeartbeatService,
      ],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([this.redis, this.producer].map((c) => c.quit().catch(() => c.disconnect())));
  }
}
