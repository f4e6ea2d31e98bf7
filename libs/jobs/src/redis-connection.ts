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
  return failFast(url);
}

/** No offline queue, one try per command, 2 s to connect; errors are the caller's to see on its commands. */
function failFast(url: string, commandTimeout?: number): Redis {
  const redis = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2000, ...(commandTimeout !== undefined ? { commandTimeout } : {}) });
  redis.on('error', () => undefined);
  return redis;
}

/**
 * A connection for request-time commands that are not enqueues (event wake-ups, readiness, status):
 * like `createProducerConnection`, commands are refused at once while Redis is unreachable (no
 * offline queue, so nothing piles up in memory during an outage) and one that gets no answer in
 * `commandTimeoutMs` (a Redis that accepts connections but does not answer) is rejected. It
 * connects at once and reconnects in the background (ioredis's default backoff, at most 2 s apart).
 */
export function createFailFastConnection(url: string, options: { commandTimeoutMs?: number } = {}): Redis {
  return failFast(url, options.commandTimeoutMs ?? 2000);
}

/**
 * A subscriber connection that fails fast: SUBSCRIBE while Redis is unreachable is refused at once
 * instead of waiting in the offline queue (the caller subscribes again once the connection is
 * ready). No command timeout: a subscribed connection waits for messages by design.
 */
export function createFailFastSubscriberConnection(url: string): Redis {
  return failFast(url);
}

/**
 * Resolves once a fail-fast connection is ready, or has failed once, or after `timeoutMs`: a
 * process waits for it at startup so its first commands are not refused only because the
 * connection was still opening (without an offline queue ioredis refuses them), yet starts while
 * Redis is down.
 */
export function settled(redis: Redis, timeoutMs = 2000): Promise<void> {
  if (redis.status === 'ready' || redis.status === 'end') return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      redis.off('ready', done);
      redis.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, timeoutMs);
    redis.once('ready', done);
    redis.once('close', done);
  });
}
