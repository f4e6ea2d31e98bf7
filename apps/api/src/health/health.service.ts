import { Inject, Injectable } from '@nestjs/common';
import { ServiceNotReady } from '@compactor/compaction';
import { HealthRepository } from '@compactor/persistence';
import type { Redis } from 'ioredis';
import { REDIS } from '../redis.provider';
import { DependencyCheck, DependencyChecks, ReadinessResponse } from './health.dto';

const CHECK_TIMEOUT_MS = 2000;

async function timed(run: () => Promise<unknown>): Promise<DependencyCheck> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      run(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
      }),
    ]);
    return { status: 'up', latencyMs: Math.round(performance.now() - started) };
  } catch (error) {
    return { status: 'down', error: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
  }
}

@Injectable()
export class HealthService {
  constructor(
    private readonly health: HealthRepository,
    @Inject(REDIS) private readonly redis: Redis,
  ) {}

  async readiness(): Promise<ReadinessResponse> {
    const [postgres, redis] = await Promise.all([timed(() => this.health.ping()), timed(() => this.redis.ping())]);
    const checks: DependencyChecks = { postgres, redis };
    const failed = (Object.keys(checks) as (keyof DependencyChecks)[]).filter((k) => checks[k].status === 'down');
    if (failed.length > 0) throw new ServiceNotReady(failed, { checks });
    return { status: 'ready', checks };
  }
}
