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
