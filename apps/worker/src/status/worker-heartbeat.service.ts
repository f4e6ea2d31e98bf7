import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { WORKER_HEARTBEAT_INTERVAL_MS, WORKER_HEARTBEAT_TTL_S, workerHeartbeatKey, workersAliveKey } from '@compactor/jobs';
import type { Redis } from 'ioredis';
import { WORKER_CONFIG, WorkerConfig } from '../config/worker-config';
import { WORKER_PRODUCER_REDIS } from '../jobs/job-runner';
import { WorkerActivity } from './worker-activity';

/**
 * Writes this worker's heartbeat (WorkerActivity) to `${QUEUE_PREFIX}:workers:<id>` every 10 s
 * with a 30 s TTL, so `GET /v1/status` lists the live workers and their summarizer, and refreshes
 * `${QUEUE_PREFIX}:workers-alive` (any worker alive, for the proxy's CompactionWait). Stopped and
 * its own key deleted on shutdown; a crashed worker's key simply expires.
 */
@Injectable()
export class WorkerHeartbeatService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(WorkerHeartbeatService.name);
  private timer: NodeJS.Timeout | undefined;
  private failing = false;

  constructor(
    @Inject(WORKER_CONFIG) private readonly config: WorkerConfig,
    @Inject(WORKER_PRODUCER_REDIS) private readonly redis: Redis,
    private readonly activity: WorkerActivity,
  ) {}

  private get key(): string {
    return workerHeartbeatKey(this.config.QUEUE_PREFIX, this.activity.id);
  }

  /** One beat. Never throws: a Redis hiccup must not stop the worker, the next beat retries. */
  async beat(): Promise<void> {
    try {
      await this.redis.set(this.key, JSON.stringify(this.activity.heartbeat()), 'EX', WORKER_HEARTBEAT_TTL_S);
      // Two commands, not a transaction: on a Redis Cluster the two keys may live on different nodes.
      await this.redis.set(workersAliveKey(this.config.QUEUE_PREFIX), this.activity.id, 'EX', WORKER_HEARTBEAT_TTL_S);
      if (this.failing) this.logger.log('Heartbeat written again');
      this.failing = false;
    } catch (error) {
      if (!this.failing) this.logger.warn(`Heartbeat not written: ${(error as Error).message}`);
      this.failing = true;
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.beat();
    this.timer = setInterval(() => void this.beat(), WORKER_HEARTBEAT_INTERVAL_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    // Gone at once rather than after the TTL; best effort, the TTL covers a failure here.
    await this.redis.del(this.key).catch(() => undefined);
  }
}
