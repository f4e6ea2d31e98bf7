import { Inject, Injectable } from '@nestjs/common';
import { workersAliveKey } from '@compactor/jobs';
import { CompactionRepository, SessionRecord, SessionRepository } from '@compactor/persistence';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { API_CONFIG, ApiConfig } from '../config/api-config';
import { LOGGER } from '../logging/logger';
import { REDIS } from '../redis.provider';

/** How long a yes to "is a worker alive" is reused: heartbeats live 30 s, so a second's staleness changes little. */
const WORKERS_SEEN_MS = 1_000;
const FIRST_POLL_MS = 5;
const MAX_POLL_MS = 50;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The answer to a race the agent loop makes (docs/compaction.md "The budget band"): an append that crosses the trigger
 * schedules a compaction that runs on a worker, and a read that comes before it lands finds the context over the
 * budget and is served through the read-time fallback (Guarantee 4), which cuts the oldest turns for that read only.
 * Through the proxy, a request's new messages are stored once the upstream answered and the next request often
 * comes before the worker is done. Instead, while a compaction of the session is queued or running and a worker is
 * alive, the read waits for it (the proxy: at most COMPACTOR_PROXY_COMPACTION_WAIT_MS; a REST read: its `waitMs`)
 * and is then served compacted. A compaction that does not land in time, no live worker, or a check that fails
 * leaves the fallback as it was.
 */
@Injectable()
export class CompactionWait {
  private workersCheckedAt = -Infinity;
  private workersAlive = false;

  constructor(
    private readonly compactions: CompactionRepository,
    private readonly sessions: SessionRepository,
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(API_CONFIG) private readonly config: ApiConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * The session as the compaction it waited for left it (a new head version, the same messages), or undefined when
   * there was nothing to wait for, it did not finish in time, or the session moved on meanwhile.
   */
  async settled(session: SessionRecord, limit = this.config.COMPACTOR_PROXY_COMPACTION_WAIT_MS): Promise<SessionRecord | undefined> {
    if (limit <= 0) return undefined;
    try {
      return await this.waitFor(session, limit);
    } catch (error) {
      // Redis or PostgreSQL refused a check: the request goes on with the context it has (the fallback), never fails for it.
      this.logger.warn({ err: error, session: session.id }, 'compaction wait skipped: a check failed');
      return undefined;
    }
  }

  private async waitFor(session: SessionRecord, limit: number): Promise<SessionRecord | undefined> {
    const deadline = performance.now() + limit;
    if ((await this.compactions.hasPendingJob(session.id)) && (await this.workerAlive())) {
      let pause = FIRST_POLL_MS;
      for (;;) {
        const left = deadline - performance.now();
        if (left <= 0) return undefined;
        await sleep(Math.min(pause, left));
        pause = Math.min(pause * 2, MAX_POLL_MS);
        if (!(await this.compactions.hasPendingJob(session.id))) break;
      }
    }
    // Also when nothing was pending: a compaction may have landed between the context's read and the check.
    const fresh = await this.sessions.findById(session.id);
    // Another process appended meanwhile (the request's own messages would no longer follow the stored ones), or no
    // compaction changed the head (skipped, failed, none): the context the request already has stands.
    if (!fresh || fresh.lastSeq !== session.lastSeq || fresh.headVersionId === session.headVersionId) return undefined;
    return fresh;
  }

  /** Whether a worker beat within the heartbeat's TTL (one key every worker refreshes): with none, a queued job would not run within any wait. */
  private async workerAlive(): Promise<boolean> {
    const now = performance.now();
    // Only a live answer is reused: a worker that has just started is waited for on the next read, not a second later
    // (proxy-compaction-wait.int-spec started one within 0.8 s of a read that found none, and its read did not wait).
    if (this.workersAlive && now - this.workersCheckedAt < WORKERS_SEEN_MS) return true;
    this.workersAlive = (await this.redis.exists(workersAliveKey(this.config.QUEUE_PREFIX))) === 1;
    this.workersCheckedAt = now;
    return this.workersAlive;
  }
}
