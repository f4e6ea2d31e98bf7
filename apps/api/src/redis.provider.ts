import { Inject, Injectable, OnApplicationShutdown, Provider } from '@nestjs/common';
import { createRedisConnection } from '@compactor/jobs';
import type { Redis } from 'ioredis';
import { API_CONFIG, ApiConfig } from './config/api-config';

export const REDIS = Symbol('REDIS');

export const redisProvider: Provider = {
  provide: REDIS,
  inject: [API_CONFIG],
  useFactory: (config: ApiConfig) => createRedisConnection(config.REDIS_URL, { lazyConnect: true }),
};

@Injectable()
export class RedisLifecycle implements OnApplicationShutdown {
  constructor(@Inject(REDIS) private readonly redis: Redis) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.redis.status === 'ready') await this.redis.quit();
    else this.redis.disconnect();
  }
}
