import { Inject, Injectable } from '@nestjs/common';
import { ServiceNotReady } from '../errors/http-errors';
import { HealthRepository } from '@compactor/persistence';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { LOGGER } from '../logging/logger';
import { REDIS } from '../redis.provider';
import { DependencyCheck, DependencyChecks, ReadinessResponse } from './health.dto';

const CHECK_TIMEOUT_MS = 2000;

/** Timeout of the check itself, told apart from the dependency's own errors. */
class CheckTimeout extends Error {}

/**
 * Runs one check. A failure answers only what failed (`unreachable`, or no answer in time): a
 * driver's error text can name hosts, users or databases, so it goes to the log, never to the caller.
 */
async function timed(name: string, logger: Logger, run: () => Promise<unknown>): Promise<DependencyCheck> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      run(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new CheckTimeout(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
      }),
    ]);
    return { status: 'up', latencyMs: Math.round(performance.now() - started) };
  } catch (error) {
    logger.warn({ dependency: name, err: error instanceof Error ? error.message : String(error) }, 'readiness check failed');
    return { status: 'down', error: error instanceof CheckTimeout ? error.message : 'unreachable' };
  } finally {
    clearTimeout(timer);
  }
}

@Injectable()
export class HealthService {
  constructor(
    private readonly health: HealthRepository,
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async readiness(): Promise<ReadinessResponse> {
    const [postgres, redis] = await Promise.all([timed('postgres', this.logger, () => this.health.ping()), timed('redis', this.logger, () => this.redis.ping())]);
    const checks: DependencyChecks = { postgres, redis };
    const failed = (Object.keys(checks) as (keyof DependencyChecks)[]).filter((k) => checks[k].status === 'down');
    if (failed.length > 0) throw new ServiceNotReady(failed, { checks });
    return { status: 'ready', checks };
  }
}
