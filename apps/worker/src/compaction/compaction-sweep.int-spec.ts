import { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { JobQueue } from '@compactor/jobs';
import { CompactionRepository, PrismaService, SessionRepository } from '@compactor/persistence';
import { createTestDatabase, type FakeLlm, startFakeLlm, TestDatabase, testRedisUrl, uniqueQueuePrefix } from '@compactor/testing';
import type { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { loadWorkerConfig, WORKER_CONFIG, WorkerConfig } from '../config/worker-config';
import { WORKER_REDIS } from '../jobs/job-runner';
import { MaintenanceSchedules } from '../maintenance/maintenance-schedules';
import { WorkerModule } from '../worker.module';
import { CompactionProgress } from './compaction-progress';
import { CompactionSweep } from './compaction-sweep';
import { CompactionService } from './compaction.service';

/**
 * The sweep's lift of llm-outage holds (issue #15) on a real database and Redis, with the summarizer probe going over
 * HTTP to the fake LLM upstream: up lifts once (compare-and-swap, even with two sweeps at once) and re-queues one
 * compaction; down lifts nothing; unknown lifts after COMPACTION_LLM_HOLD_RETRY_MS doubled per hold in a row.
 */
describe('CompactionSweep: compactions held by an LLM outage', () => {
  let db: TestDatabase;
  let fake: FakeLlm;
  let worker: INestApplicationContext;
  let prisma: PrismaService;
  let config: WorkerConfig;
  let tenantId: string;
  const HOLD_RETRY_MS = 300_000;

  beforeAll(async () => {
    db = await createTestDatabase('sweep_holds');
    fake = await startFakeLlm();
    config = loadWorkerConfig({
      DATABASE_URL: db.url,
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: uniqueQueuePrefix('sweep'),
      // No timer tick during the test: it calls sweep() itself.
      COMPACTION_SWEEP_INTERVAL_MS: '600000',
      COMPACTION_LLM_HOLD_RETRY_MS: String(HOLD_RETRY_MS),
      COMPACTOR_SUMMARIZER: 'openai',
      OPENAI_API_KEY: 'sk-sweep-test',
      COMPACTOR_SUMMARIZER_BASE_URL: fake.openaiBaseUrl,
    });
    worker = await NestFactory.createApplicationContext(WorkerModule.forRoot(config), { logger: false });
    await worker.init();
    prisma = worker.get(PrismaService);
    // The worker's repository writes artifacts through the pg pool (issue #15).
    expect((worker.get(CompactionRepository) as unknown as { pg?: unknown }).pg).toBeDefined();
    tenantId = (await prisma.tenant.create({ data: { name: `t-${randomBytes(4).toString('hex')}` } })).id;
  }, 60_000);

  // Closing the worker waits for its running jobs (a compaction a lifted hold re-queued) and queues: past Jest's default 5 s on
  // a loaded machine (a fresh clone's npm test hit it once).
  afterAll(async () => {
    await worker?.close();
    await fake?.close();
    await db?.drop();
  }, 60_000);

  /** A sweep over the worker's own services, with this summarizer configuration. */
  const sweepWith = (overrides: Partial<WorkerConfig> = {}) =>
    new CompactionSweep(
      { ...worker.get<WorkerConfig>(WORKER_CONFIG), ...overrides },
      worker.get<Redis>(WORKER_REDIS),
      worker.get(JobQueue),
      worker.get(CompactionRepository),
      worker.get(SessionRepository),
      worker.get(CompactionService),
      worker.get(MaintenanceSchedules),
      worker.get(CompactionProgress),
    );

  const heldSession = async (hold: { at: Date; count: number }) => {
    const session = await prisma.session.create({
      data: {
        tenantId,
        externalId: `held-${randomBytes(4).toString('hex')}`,
        model: 'gpt-4o',
        contextWindow: 128_000,
        outputReserve: 4_096,
        policy: { preset: 'balanced' },
        compactionHoldTokens: 200_000,
        compactionHoldReason: 'llm-outage',
        compactionHoldAt: hold.at,
        compactionHoldCount: hold.count,
      },
    });
    return session.id;
  };
  const state = async (id: string) => {
    const s = await prisma.session.findUniqueOrThrow({ where: { id } });
    const jobs = await prisma.compactionJob.count({ where: { sessionId: id } });
    const resumed = await prisma.event.count({ where: { sessionId: id, type: 'compaction-resumed' } });
    return { held: s.compactionHoldTokens !== null, reason: s.compactionHoldReason, jobs, resumed };
  };
  const minutesAgo = (now: Date, m: number) => new Date(now.getTime() - m * 60_000);

  it('probe up: two sweeps at once lift the hold once, re-queue one compaction and record one compaction-resumed event', async () => {
    const id = await heldSession({ at: new Date(), count: 1 });
    const before = fake.requests.length;
    const [a, b] = await Promise.all([sweepWith().sweep(), sweepWith().sweep()]);
    expect(a.resumed + b.resumed).toBe(1);
    expect(await state(id)).toEqual({ held: false, reason: null, jobs: 1, resumed: 1 });
    expect(fake.requests.slice(before).filter((r) => r.method === 'GET' && r.path === '/v1/models').length).toBeGreaterThanOrEqual(1);
    // Nothing left to lift: the next sweep neither lifts nor probes.
    const probes = fake.requests.length;
    expect((await sweepWith().sweep()).resumed).toBe(0);
    expect(fake.requests.length).toBe(probes);
    expect(await state(id)).toMatchObject({ jobs: 1, resumed: 1 });
  });

  it('probe up after a hold in a row (the models endpoint answers, the compaction failed again): waits as unknown would a hold earlier', async () => {
    const now = new Date();
    const recent = await heldSession({ at: minutesAgo(now, 4), count: 2 });
    const due = await heldSession({ at: minutesAgo(now, 6), count: 2 });
    expect((await sweepWith().sweep(now)).resumed).toBe(1);
    expect(await state(recent)).toMatchObject({ held: true, jobs: 0 });
    expect(await state(due)).toEqual({ held: false, reason: null, jobs: 1, resumed: 1 });
    await prisma.session.update({ where: { id: recent }, data: { compactionHoldTokens: null, compactionHoldReason: null } });
  });

  it('probe down (the upstream refuses connections): the hold stays, however old', async () => {
    const now = new Date();
    const id = await heldSession({ at: minutesAgo(now, 24 * 60), count: 1 });
    await fake.stop();
    try {
      expect((await sweepWith().sweep(now)).resumed).toBe(0);
    } finally {
      await fake.start();
    }
    expect(await state(id)).toEqual({ held: true, reason: 'llm-outage', jobs: 0, resumed: 0 });
    await prisma.session.update({ where: { id }, data: { compactionHoldTokens: null, compactionHoldReason: null } });
  });

  it('probe unknown (a 404 on the models endpoint): lifted after COMPACTION_LLM_HOLD_RETRY_MS, doubled per hold in a row', async () => {
    const unknown = sweepWith({ COMPACTOR_SUMMARIZER_BASE_URL: `${fake.url}/no-models-here` });
    const now = new Date();
    const young = await heldSession({ at: minutesAgo(now, 4), count: 1 });
    const due = await heldSession({ at: minutesAgo(now, 6), count: 1 });
    const secondInRow = await heldSession({ at: minutesAgo(now, 6), count: 2 });
    const secondDue = await heldSession({ at: minutesAgo(now, 11), count: 2 });
    expect((await unknown.sweep(now)).resumed).toBe(2);
    expect(await state(young)).toMatchObject({ held: true, jobs: 0 });
    expect(await state(due)).toEqual({ held: false, reason: null, jobs: 1, resumed: 1 });
    expect(await state(secondInRow)).toMatchObject({ held: true, jobs: 0 });
    expect(await state(secondDue)).toEqual({ held: false, reason: null, jobs: 1, resumed: 1 });
    for (const id of [young, secondInRow]) await prisma.session.update({ where: { id }, data: { compactionHoldTokens: null, compactionHoldReason: null } });
  });
});
