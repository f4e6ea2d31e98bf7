import { Inject, Injectable } from '@nestjs/common';
import { JobQueue, QueueName } from '@compactor/jobs';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** How long a scrape waits for Redis's queue counts before it leaves them out. */
const QUEUE_DEPTH_TIMEOUT_MS = 1000;

/** One registry per app instance, so tests that start several apps never collide. */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  readonly httpDuration = new Histogram({
    name: 'compactor_http_request_duration_seconds',
    help: 'HTTP request duration by method, route and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly rateLimited = new Counter({
    name: 'compactor_rate_limited_total',
    help: 'Requests refused with 429 rate_limited, by the limit that refused them.',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });
  /**
   * The queues' depth, read from Redis at each scrape (what a worker autoscaler scales on: the
   * Helm chart's KEDA ScaledObject). Every API process reports the same queues, so aggregate
   * with `max`, not `sum`. Left out of a scrape while Redis does not answer within 1 s.
   */
  readonly queueJobs = new Gauge({
    name: 'compactor_queue_jobs',
    help: 'Jobs in each queue by state (waiting includes prioritized; delayed includes retries waiting their backoff), read from Redis at each scrape. Every API process reports the same queues: aggregate with max.',
    labelNames: ['queue', 'state'] as const,
    registers: [this.registry],
    collect: () => this.collectQueueDepth(),
  });

  constructor(@Inject(JobQueue) private readonly queue: JobQueue) {
    collectDefaultMetrics({ register: this.registry, prefix: 'compactor_' });
  }

  private async collectQueueDepth(): Promise<void> {
    this.queueJobs.reset();
    for (const name of Object.values(QueueName)) {
      const depth = await this.queue.depth(name, QUEUE_DEPTH_TIMEOUT_MS).catch(() => null);
      if (!depth) return;
      for (const [state, count] of Object.entries(depth)) this.queueJobs.set({ queue: name, state }, count);
    }
  }
}
