import { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createRedisConnection, JobName, JobQueue, QueueName } from '@compactor/jobs';
import { PrismaService } from '@compactor/persistence';
import { createTestDatabase, pollUntil, TestDatabase, testRedisUrl, uniqueQueuePrefix } from '@compactor/testing';
import { Redis } from 'ioredis';
import { loadWorkerConfig } from '../config/worker-config';
import { WorkerModule } from '../worker.module';

describe('idempotency expiry job, end to end through Redis', () => {
  let db: TestDatabase;
  let worker: INestApplicationContext;
  let producerRedis: Redis;
  let producer: JobQueue;
  let prisma: PrismaService;

  beforeAll(async () => {
    db = await createTestDatabase('worker');
    const config = loadWorkerConfig({
      DATABASE_URL: db.url,
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: uniqueQueuePrefix('worker'),
      IDEMPOTENCY_TTL_HOURS: '24',
    });
    worker = await NestFactory.createApplicationContext(WorkerModule.forRoot(config), { logger: false });
    await worker.init();
    prisma = worker.get(PrismaService);
    // The producer side is a separate connection, as the API would be.
    producerRedis = createRedisConnection(testRedisUrl());
    producer = new JobQueue(producerRedis, config.QUEUE_PREFIX);
  });

  afterAll(async () => {
    await producer.close();
    producerRedis.disconnect();
    await worker.close();
    await db.drop();
  });

  it('deletes only the keys older than the cutoff', async () => {
    // The hourly schedule's first run starts with the worker: let it finish first, or it may be the one that deletes the old keys.
    const maintenance = producer.queue(QueueName.Maintenance);
    // (The retention schedule's first run completes on the same queue: wait for this job's own.)
    await pollUntil(async () => ((await maintenance.getCompleted()).some((j) => j.name === JobName.ExpireIdempotencyRecords) ? true : undefined), {
      what: "the schedule's first run",
    });
    const tenant = await prisma.tenant.create({ data: { name: `t-${Date.now()}` } });
    const session = await prisma.session.create({
      data: { tenantId: tenant.id, externalId: 's1', model: 'gpt-4o', contextWindow: 128000, outputReserve: 4096, policy: { preset: 'balanced' } },
    });
    const hoursAgo = (h: number) => new Date(Date.now() - h * 3600 * 1000);
    await prisma.idempotencyRecord.createMany({
      data: [
        { sessionId: session.id, key: 'old-1', requestHash: 'h', status: 201, response: {}, createdAt: hoursAgo(30) },
        { sessionId: session.id, key: 'old-2', requestHash: 'h', status: 201, response: {}, createdAt: hoursAgo(25) },
        { sessionId: session.id, key: 'fresh', requestHash: 'h', status: 201, response: {}, createdAt: hoursAgo(1) },
      ],
    });

    const jobId = await producer.enqueue(JobName.ExpireIdempotencyRecords, { olderThanHours: 24 });
    const job = producer.queue(QueueName.Maintenance);
    const state = await pollUntil(
      async () => {
        const s = await job.getJobState(jobId);
        return s === 'completed' || s === 'failed' ? s : undefined;
      },
      { what: 'the job to finish' },
    );
    expect(state).toBe('completed');
    expect((await job.getJob(jobId))?.returnvalue).toEqual({ deleted: 2 });
    const left = await prisma.idempotencyRecord.findMany({ select: { key: true } });
    expect(left).toEqual([{ key: 'fresh' }]);
  });

  it('fails a job whose payload breaks its schema, without retrying it', async () => {
    const queue = producer.queue(QueueName.Maintenance);
    // Bypasses JobQueue.enqueue's own validation, as a foreign or stale producer would.
    const job = await queue.add(JobName.ExpireIdempotencyRecords, { olderThanHours: 'soon' }, { attempts: 3 });
    const failed = await pollUntil(async () => ((await queue.getJobState(job.id!)) === 'failed' ? queue.getJob(job.id!) : undefined), {
      what: 'the job to fail',
    });
    expect(failed?.failedReason).toContain('olderThanHours');
    expect(failed?.attemptsMade).toBe(1);
  });

  it('scheduled the hourly expiry when it started', async () => {
    const schedulers = await producer.queue(QueueName.Maintenance).getJobSchedulers();
    expect(schedulers.map((s) => s.key)).toContain('expire-idempotency-hourly');
  });
});
