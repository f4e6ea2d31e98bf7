import { parseRedisUrl } from '@compactor/config';
import { Cluster, Redis, RedisOptions } from 'ioredis';

/**
 * A connection to what REDIS_URL names: one server, a Redis Cluster (`redis+cluster://`) or a
 * primary found through Sentinel (`redis+sentinel://`), with the given per-connection options.
 * A Cluster is typed as Redis: every command this project sends is key-based or pub/sub, which
 * ioredis's Cluster routes; the one exception, SCAN, is handled where it is used (`scanNodes`).
 */
export function connectRedis(url: string, options: RedisOptions, cluster: { retry?: boolean } = {}): Redis {
  const target = parseRedisUrl(url);
  if (target.kind === 'cluster') {
    const auth = { ...(target.username ? { username: target.username } : {}), ...(target.password ? { password: target.password } : {}) };
    const { enableOfflineQueue, lazyConnect, ...perNode } = options;
    const connection = new Cluster(target.nodes, {
      redisOptions: { ...perNode, ...auth },
      ...(enableOfflineQueue !== undefined ? { enableOfflineQueue } : {}),
      ...(lazyConnect !== undefined ? { lazyConnect } : {}),
      ...(cluster.retry === false ? { clusterRetryStrategy: () => null } : {}),
    });
    return connection as unknown as Redis;
  }
  if (target.kind === 'sentinel') {
    return new Redis({
      ...options,
      sentinels: target.sentinels,
      name: target.name,
      db: target.db,
      ...(target.username ? { username: target.username } : {}),
      ...(target.password ? { password: target.password } : {}),
    });
  }
  return new Redis(target.url, options);
}

/** Whether REDIS_URL names a Redis Cluster: BullMQ's keys then need a hash tag ({prefix}) so each queue's keys share a slot. */
export function isClusterUrl(url: string): boolean {
  return parseRedisUrl(url).kind === 'cluster';
}

/** The queue prefix as BullMQ must see it: `{prefix}` on a Redis Cluster (one slot per queue), the prefix itself otherwise. */
export function queuePrefixFor(url: string, prefix: string): string {
  return isClusterUrl(url) && !prefix.startsWith('{') ? `{${prefix}}` : prefix;
}

const isCluster = (redis: Redis) => (redis as unknown as { isCluster?: boolean }).isCluster === true;

/** The values of `keys`: one MGET on one server; on a Cluster, where keys of different slots cannot share a command, one GET each. */
export async function getMany(redis: Redis, keys: string[]): Promise<(string | null)[]> {
  if (keys.length === 0) return [];
  return isCluster(redis) ? Promise.all(keys.map((k) => redis.get(k))) : redis.mget(...keys);
}

/** Every key matching `pattern`: SCAN on one server, on each primary of a Cluster. */
export async function scanKeys(redis: Redis, pattern: string, limit = Infinity, count = 200): Promise<string[]> {
  const nodes = isCluster(redis) ? (redis as unknown as Cluster).nodes('master') : [redis];
  const keys: string[] = [];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', count);
      keys.push(...batch);
      cursor = next;
    } while (cursor !== '0' && keys.length < limit);
  }
  return keys;
}

/**
 * One ioredis connection as BullMQ needs it (maxRetriesPerRequest: null). Connection
 * errors surface through callers' commands; the 'error' listener only keeps an
 * unreachable Redis from crashing the process with an unhandled event.
 */
export function createRedisConnection(url: string, options: { lazyConnect?: boolean } = {}): Redis {
  const redis = connectRedis(url, {
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
  const redis = connectRedis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2000, ...(commandTimeout !== undefined ? { commandTimeout } : {}) });
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
