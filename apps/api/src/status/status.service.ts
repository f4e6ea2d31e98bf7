import { Inject, Injectable } from '@nestjs/common';
import { DEFAULT_PRESET, PRESET_NAMES, presetTrigger } from '@compactor/compaction';
import { ServiceNotReady } from '../errors/http-errors';
import { getMany, JobQueue, QueueName, scanKeys, WorkerHeartbeat, workerHeartbeatPattern, workerHeartbeatSchema } from '@compactor/jobs';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { QueueDepth } from '../analytics/analytics.dto';
import type { AuthContext } from '../auth/scopes';
import { API_CONFIG, ApiConfig } from '../config/api-config';
import { LOGGER } from '../logging/logger';
import { REDIS } from '../redis.provider';
import { PresetView, StatusResponse, WorkerStatusView } from './status.dto';
import { summarizerHealth } from './summarizer-health';

/** Far more workers than any deployment runs; keeps one status request bounded. */
const MAX_WORKERS = 500;

export function toWorkerView(beat: WorkerHeartbeat): WorkerStatusView {
  const health = summarizerHealth(beat);
  return {
    id: beat.id,
    hostname: beat.hostname,
    pid: beat.pid,
    startedAt: beat.startedAt,
    lastSeenAt: beat.beatAt,
    concurrency: beat.concurrency,
    summarizer: { ...beat.summarizer, health: health.state, healthDetail: health.detail },
    jobs: beat.jobs,
    llm: beat.llm,
  };
}

export function presetViews(): PresetView[] {
  return PRESET_NAMES.map((name) => ({ name, isDefault: name === DEFAULT_PRESET, trigger: presetTrigger({ preset: name, overrides: {} }) }));
}

/**
 * What runs behind the API: the live workers (each one's heartbeat in Redis, written by the worker
 * every 10 s with a 30 s TTL) with their summarizer and its health, the compaction queue's depth,
 * and the policy presets.
 */
@Injectable()
export class StatusService {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(API_CONFIG) private readonly config: ApiConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly queue: JobQueue,
  ) {}

  async status(auth: AuthContext): Promise<StatusResponse> {
    let workers: WorkerStatusView[];
    let queueDepth: QueueDepth;
    try {
      [workers, queueDepth] = await Promise.all([this.workers(), this.queueDepth()]);
    } catch (error) {
      // Both live in Redis: while it is down the answer is a 503 naming it, not the driver's text (which goes to the log).
      this.logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'status: Redis did not answer');
      throw new ServiceNotReady(['redis'], { checks: { redis: { status: 'down', error: 'unreachable' } } });
    }
    return {
      checkedAt: new Date().toISOString(),
      caller: { tenantId: auth.tenantId, keyId: auth.keyId, scopes: auth.scopes },
      workers,
      queueDepth,
      presets: presetViews(),
    };
  }

  private async workers(): Promise<WorkerStatusView[]> {
    // Each primary's keys on a Redis Cluster (scanKeys), at most MAX_WORKERS.
    const keys = await scanKeys(this.redis, workerHeartbeatPattern(this.config.QUEUE_PREFIX), MAX_WORKERS);
    if (keys.length === 0) return [];
    // A key can expire between SCAN and the read: that worker is gone, its null is skipped.
    const values = await getMany(this.redis, [...new Set(keys.slice(0, MAX_WORKERS))]);
    const beats: WorkerHeartbeat[] = [];
    for (const value of values) {
      if (value === null) continue;
      let json: unknown;
      try {
        json = JSON.parse(value);
      } catch {
        json = undefined;
      }
      const parsed = workerHeartbeatSchema.safeParse(json);
      // A worker of another version may write another shape: it is left out, not a failure of the request.
      if (parsed.success) beats.push(parsed.data);
      else this.logger.warn({ issues: parsed.error.issues.slice(0, 3).map((i) => `${i.path.join('.')}: ${i.message}`) }, 'unreadable worker heartbeat');
    }
    return beats.sort((a, b) => a.startedAt.localeCompare(b.startedAt) || a.id.localeCompare(b.id)).map(toWorkerView);
  }

  private queueDepth(): Promise<QueueDepth> {
    return this.queue.depth(QueueName.Compaction);
  }
}
