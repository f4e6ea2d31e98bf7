import { Redis } from 'ioredis';

/**
 * One ioredis connection as BullMQ needs it (maxRetriesPerRequest: null). Connection
 * errors surface through callers' commands; the 'error' listener only keeps an
 * unreachable Redis from crashing the process with an unhandled event.
 */
export function createRedisConnection(url: string, options: { lazyConnect?: boolean } = {}): Redis {
  const redis = new Redis(url, {
    maxRetriesPerRequest: null,
    lazyConnect: options.lazyConnect ?? false,
    enableOfflineQueue: true,
  });
  redis.on('error', () => undefined);
  return redis;
}

/**
 * A connection for enqueueing from a request (BullMQ's "failing fast when Redis is down"):
 * commands are refused at once while Redis is unreachable instead of waiting in ioredis's
 * offline queue for a reconnection, so an append never hangs on a Redis outage. It still
 * reconnects in the background; not for workers, which block on their connection.
 */
export function createProducerConnection(url: string): Redis {
  const redis = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2000 });
  redis.on('error', () => undefined);
  return redis;
}
