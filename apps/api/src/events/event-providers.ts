import { Provider } from '@nestjs/common';
import { createFailFastSubscriberConnection, EventPublisher, EventSubscriber } from '@compactor/jobs';
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
      new EventPublisher(redis, config.QUEUE_PREFIX, (error) => logger.warn({ reason: error.message }, 'event wake-ups are not published (Redis); SSE streams re-read PostgreSQL on their heartbeat until it answers')),
  },
  {
    // Its own connection, opened on the first stream: a subscribed connection can run no other command.
    // It fails fast: a stream opened while Redis is down starts at once and subscribes when Redis returns.
    provide: EventSubscriber,
    inject: [API_CONFIG],
    useFactory: (config: ApiConfig) => new EventSubscriber(() => createFailFastSubscriberConnection(config.REDIS_URL), config.QUEUE_PREFIX),
  },
];
