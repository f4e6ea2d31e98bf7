import { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { eventChannel, EventPublisher, JobQueue, QueueUnavailable, workerHeartbeatKey } from '@compactor/jobs';
import { createTestDatabase, pollUntil, startRedisServer, TestDatabase, TestRedisServer, uniqueQueuePrefix } from '@compactor/testing';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { loadWorkerConfig } from '../config/worker-config';
import { WORKER_PRODUCER_REDIS } from '../jobs/job-runner';
import { WorkerActivity } from '../status/worker-activity';
import { WorkerHeartbeatService } from '../status/worker-heartbeat.service';
import { WorkerModule } from '../worker.module';

/**
 * Issue #15 ("Outages"): what the worker sends to Redis on its own (re-queues, event wake-ups,
 * heartbeats, schedules) fails at once while Redis is down, instead of waiting in ioredis's
 * offline queue and running late, out of order, when it returns. A redis-server of the test's
 * own is stopped and started; the worker runs in-process on the real PostgreSQL.
 */
describe('worker while Redis is down', () => {
  let db: TestDatabase;
  let redis: TestRedisServer;
  let worker: INestApplicationContext | undefined;

  beforeAll(async () => {
    db = await createTestDatabase('worker');
    redis = await startRedisServer();
  });

  afterAll(async () => {
    await worker?.close();
    await redis.stop();
    await db.drop();
  });

  const offlineQueue = (connection: Redis) => (connection as unknown as { offlineQueue: { length: number } }).offlineQueue.length;

  it('starts while Redis is down, refuses its own commands at once with nothing queued in memory, and writes them again once Redis returns', async () => {
    await redis.stop();
    const config = loadWorkerConfig({ DATABASE_URL: db.url, REDIS_URL: redis.url, QUEUE_PREFIX: uniqueQueuePrefix('wkout') });
    // Start-up does not wait for Redis (the schedules are left to the sweep).
    worker = await NestFactory.createApplicationContext(WorkerModule.forRoot(config), { logger: false });
    await worker.init();
    const producer = worker.get<Redis>(WORKER_PRODUCER_REDIS);
    const queue = worker.get(JobQueue);
    const publisher = worker.get(EventPublisher);
    const heartbeat = worker.get(WorkerHeartbeatService);

    // A re-queue is refused as unavailable (the job row stays queued for the sweep), not left waiting.
    const sessionId = randomUUID();
    await expect(queue.enqueueCompaction({ jobId: randomUUID(), sessionId, tenantId: randomUUID() })).rejects.toBeInstanceOf(QueueUnavailable);
    // Wake-ups and heartbeats are fire-and-forget and never throw; none of them waits in memory.
    for (let i = 0; i < 50; i += 1) publisher.notify(sessionId, BigInt(i));
    await heartbeat.beat();
    expect(offlineQueue(producer)).toBe(0);

    await redis.start();
    const probe = new Redis(redis.url, { maxRetriesPerRequest: null });
    try {
      // The heartbeat is written again by the next beat (driven here, not waited for), once the connection is back.
      const key = workerHeartbeatKey(config.QUEUE_PREFIX, worker.get(WorkerActivity).id);
      await pollUntil(
        async () => {
          await heartbeat.beat();
          return (await probe.get(key)) ? true : undefined;
        },
        { timeoutMs: 15_000, what: 'the heartbeat written once Redis is back' },
      );
      // Wake-ups deliver again.
      const subscriber = probe.duplicate();
      const received: string[] = [];
      try {
        await subscriber.subscribe(eventChannel(config.QUEUE_PREFIX, sessionId));
        subscriber.on('message', (_channel, message) => received.push(message));
        publisher.notify(sessionId, 999n);
        await pollUntil(async () => (received.length > 0 ? true : undefined), { timeoutMs: 10_000, what: 'the wake-up published after Redis returned' });
        expect(received).toEqual([JSON.stringify({ id: '999' })]);
      } finally {
        subscriber.disconnect();
      }
      // Enqueues work again.
      await expect(queue.enqueueCompaction({ jobId: randomUUID(), sessionId: randomUUID(), tenantId: randomUUID() })).resolves.toEqual({ kind: 'enqueued' });
    } finally {
      probe.disconnect();
    }
  }, 60_000);
});
