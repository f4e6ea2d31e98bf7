import { databaseUrl, Env, loadConfig, logLevel, positiveInt, redisUrl, tenantLimitFields, databaseDeploymentFields } from '@compactor/config';
import { offloadCompactEnvLayer } from '@compactor/compaction';
import { summarizerConfigSchema } from '@compactor/llm';
import { z } from 'zod';

export const workerConfigSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  DATABASE_URL: databaseUrl.default('postgresql://postgres@127.0.0.1:5432/compactor'),
  /** The worker runs no heavy reads, so no replica; named statements follow the API's setting. */
  DATABASE_PREPARED_STATEMENTS: databaseDeploymentFields.DATABASE_PREPARED_STATEMENTS,
  REDIS_URL: redisUrl.default('redis://127.0.0.1:6379'),
  LOG_LEVEL: logLevel.default('info'),
  /** BullMQ key prefix, shared with the API. */
  QUEUE_PREFIX: z.string().regex(/^[A-Za-z0-9:_-]+$/, 'letters, digits, ":", "_" or "-" only').default('compactor'),
  /** Jobs one worker process runs at once, per queue. */
  WORKER_CONCURRENCY: positiveInt.max(256).default(4),
  /** Idempotency keys are kept this long; the maintenance job forgets older ones. */
  IDEMPOTENCY_TTL_HOURS: positiveInt.max(24 * 365).default(24),
  /**
   * How often one worker checks compaction rows against BullMQ: queued jobs Redis lost or never
   * took are enqueued again, jobs BullMQ gave up on are marked failed, sessions over their
   * threshold with no compaction get one. Also how old a row or an append must be to be swept.
   */
  COMPACTION_SWEEP_INTERVAL_MS: positiveInt.min(1000).max(3600 * 1000).default(30000),
  // An unreachable summarizer (connection refused, 5xx, 429, timeout) puts the compaction back in the queue,
  // delayed by this much doubled per run (capped at 60 s, jittered), until it has waited COMPACTION_LLM_RETRY_WINDOW_MS.
  COMPACTION_LLM_RETRY_DELAY_MS: positiveInt.min(100).max(600_000).default(5_000),
  COMPACTION_LLM_RETRY_WINDOW_MS: z.coerce.number().int().min(0).max(24 * 3600 * 1000).default(15 * 60 * 1000),
  // A compaction that failed on an unreachable summarizer past the retry window holds the session's automatic
  // compactions ('llm-outage'); the sweep lifts the hold once a probe of the summarizer's list-models endpoint answers,
  // or, when the probe cannot tell (`unknown`), after this long, doubled per hold in a row (capped at 6 h).
  COMPACTION_LLM_HOLD_RETRY_MS: positiveInt.min(1000).max(6 * 3600 * 1000).default(5 * 60 * 1000),
  /** How often the session retention job runs (each tenant's `sessionRetentionDays`; the first run starts with the worker). */
  SESSION_RETENTION_INTERVAL_MS: positiveInt.min(1000).max(7 * 24 * 3600 * 1000).default(3600 * 1000),
  /** Sessions the retention job deletes per transaction (with their messages, versions, artifacts, …): bounds how long one holds its locks. */
  SESSION_RETENTION_BATCH_SIZE: positiveInt.max(5000).default(500),
  /** How long a shutdown waits for running jobs before exiting. */
  SHUTDOWN_TIMEOUT_MS: positiveInt.default(30000),
  /**
   * A running job's lock in Redis (BullMQ `lockDuration`): a killed worker's job is taken over
   * once its lock expired and a stalled check saw it, so within lock + one or two stalled intervals.
   */
  WORKER_LOCK_DURATION_MS: positiveInt.min(1000).max(600_000).default(8_000),
  /**
   * How often a running job's lock is renewed (BullMQ `lockRenewTime`; default a quarter of the
   * lock). Renewal needs a free event loop: work that blocks it longer than lock − renew loses the lock.
   */
  WORKER_LOCK_RENEW_MS: positiveInt.optional(),
  /** How often jobs whose lock expired are looked for (BullMQ `stalledInterval`; one check per interval across all workers). */
  WORKER_STALLED_INTERVAL_MS: positiveInt.min(500).max(600_000).default(2_000),
  /** Times a job may stall (its worker died or lost the lock) and still run again; one more stall fails it (BullMQ `maxStalledCount`). */
  WORKER_MAX_STALLED_COUNT: z.coerce.number().int().min(0).max(100).default(2),
  /** Seed 003's parameters for the `offload-compact` preset (session overrides still win); checked by the preset. */
  COMPACTOR_COMPACT_TRIGGER_THRESHOLD: z.string().optional(),
  COMPACTOR_COMPACT_TARGET_TOKENS: z.string().optional(),
  COMPACTOR_COMPACT_PRESERVE_COUNT: z.string().optional(),
  COMPACTOR_COMPACT_MODEL: z.string().optional(),
  COMPACTOR_COMPACT_RETRY_COUNT: z.string().optional(),
  ...tenantLimitFields,
}).extend(summarizerConfigSchema.shape);

/** The `COMPACTOR_COMPACT_*` layer of preset parameters, by preset (SPEC.md "Policies": defaults, then env, then overrides). */
export function compactionEnvParams(config: WorkerConfig): Record<string, Record<string, unknown>> {
  const env = {
    COMPACTOR_COMPACT_TRIGGER_THRESHOLD: config.COMPACTOR_COMPACT_TRIGGER_THRESHOLD,
    COMPACTOR_COMPACT_TARGET_TOKENS: config.COMPACTOR_COMPACT_TARGET_TOKENS,
    COMPACTOR_COMPACT_PRESERVE_COUNT: config.COMPACTOR_COMPACT_PRESERVE_COUNT,
    COMPACTOR_COMPACT_MODEL: config.COMPACTOR_COMPACT_MODEL,
    COMPACTOR_COMPACT_RETRY_COUNT: config.COMPACTOR_COMPACT_RETRY_COUNT,
  };
  return { 'offload-compact': offloadCompactEnvLayer(env).values };
}

export type WorkerConfig = z.infer<typeof workerConfigSchema>;

export const WORKER_CONFIG = Symbol('WORKER_CONFIG');

export function loadWorkerConfig(env?: Env): WorkerConfig {
  return loadConfig(
    'worker',
    workerConfigSchema.superRefine((config, ctx) => {
      if (config.WORKER_LOCK_RENEW_MS !== undefined && config.WORKER_LOCK_RENEW_MS >= config.WORKER_LOCK_DURATION_MS / 2) {
        ctx.addIssue({ code: 'custom', path: ['WORKER_LOCK_RENEW_MS'], message: 'must be less than half of WORKER_LOCK_DURATION_MS (a lock renewed later than that is lost to one slow renewal)' });
      }
    }),
    env,
  );
}

/**
 * The BullMQ worker options that decide how soon a dead worker's job is taken over and how long
 * a blocked event loop may keep a job's lock (docs/reliability.md "Lock").
 */
export function workerLockOptions(config: Pick<WorkerConfig, 'WORKER_LOCK_DURATION_MS' | 'WORKER_LOCK_RENEW_MS' | 'WORKER_STALLED_INTERVAL_MS' | 'WORKER_MAX_STALLED_COUNT'>) {
  return {
    lockDuration: config.WORKER_LOCK_DURATION_MS,
    lockRenewTime: config.WORKER_LOCK_RENEW_MS ?? Math.floor(config.WORKER_LOCK_DURATION_MS / 4),
    stalledInterval: config.WORKER_STALLED_INTERVAL_MS,
    maxStalledCount: config.WORKER_MAX_STALLED_COUNT,
  };
}
