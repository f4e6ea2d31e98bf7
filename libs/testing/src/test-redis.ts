import { randomBytes } from 'node:crypto';

/** Redis for integration tests: the machine's real server; isolation comes from unique key prefixes. */
export function testRedisUrl(): string {
  return process.env.TEST_REDIS_URL || process.env.REDIS_URL || 'redis://127.0.0.1:6379';
}

/** A BullMQ prefix nobody else uses, so tests never see each other's queues. */
export function uniqueQueuePrefix(label = 'test'): string {
  return `compactor-test-${label}-${randomBytes(4).toString('hex')}`;
}
