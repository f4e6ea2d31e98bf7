import { Provider } from '@nestjs/common';
import { createRedisConnection, EventPublisher, EventSubscriber } from '@compactor/jobs';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { API_CONFIG, ApiConfig } from '../config/api-config';
import { LOGGER } from '../logging/logger';
import { REDIS } from '../redis.provider';
import { EventStreamService } from './event-stream.service';
import { EventsService } from './events.service';

/** The events feature's providers: JSON pages, SSE streams, and the Redis wake-ups both sides of them use. */
export const eventProviders: Provider[] = [
  EventsService,
  EventStreamService,
  {
    provide: EventPublisher,
    inject: [REDIS, API_CONFIG, LOGGER],
    useFactory: (redis: Redis, config: ApiConfig, logger: Logger) =>
      new EventPublisher(redis, config.QUEUE_PREFIX, (error) => logger.warn({ err: error }, 'event wake-up not published; SSE streams re-read on their heartbeat')),
  },
  {
    // Its own connection, opened on the first stream: a subscribed connection can run no other command.
    provide: EventSubscriber,
    inject: [API_CONFIG],
    useFactory: (config: ApiConfig) => new EventSubscriber(() => createRedisConnection(config.REDIS_URL), config.QUEUE_PREFIX),
  },
];
