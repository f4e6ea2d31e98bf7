import { connectRedis } from './redis-connection';

/** Resolves to undefined when Redis answers PING at the URL, or to the reason it does not. */
export async function checkRedis(url: string, timeoutMs = 5000): Promise<string | undefined> {
  const redis = connectRedis(
    url,
    {
      lazyConnect: true,
      connectTimeout: timeoutMs,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    },
    { retry: false },
  );
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message || error.name : String(error);
  } finally {
    redis.disconnect();
  }
}
