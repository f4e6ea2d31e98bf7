import { Inject, Injectable, OnApplicationShutdown, OnModuleInit, Provider } from '@nestjs/common';
import { createFailFastConnection, settled } from '@compactor/jobs';
import type { Redis } from 'ioredis';
import { API_CONFIG, ApiConfig } from './config/api-config';

export const REDIS = Symbol('REDIS');

/**
 * The API's shared connection (event wake-ups, readiness, status). It fails fast: while Redis is
 * down its commands are refused at once instead of waiting in memory for a reconnection (and one
 * with no answer in 2 s is rejected), and it reconnects by itself when Redis returns.
 */
export const redisProvider: Provider = {
  provide: REDIS,
  inject: [API_CONFIG],
  useFactory: (config: ApiConfig) => createFailFastConnection(config.REDIS_URL),
};

@Injectable()
export class RedisLifecycle implements OnModuleInit, OnApplicationShutdown {
  constructor(@Inject(REDIS) private readonly redis: Redis) {}

  /** The first readiness check after startup must not find the connection still opening (at most 2 s; Redis may be down). */
  onModuleInit(): Promise<void> {
    return settled(this.redis);
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.redis.status === 'ready') await this.redis.quit();
    else this.redis.disconnect();
  }
}
