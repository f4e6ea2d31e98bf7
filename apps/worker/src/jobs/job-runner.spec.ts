import { Inject, Injectable } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { JobName, JobQueue, JobRegistryError, OnJob } from '@compactor/jobs';
import { WORKER_CONFIG } from '../config/worker-config';
import { JobRunner, WORKER_REDIS } from './job-runner';
import { MaintenanceSchedules } from '../maintenance/maintenance-schedules';

@Injectable()
class FirstHandler {
  @OnJob(JobName.ExpireIdempotencyRecords)
  async run() {
    return 1;
  }
}

@Injectable()
class SecondHandler {
  @OnJob(JobName.ExpireIdempotencyRecords)
  async run() {
    return 2;
  }
}

@Injectable()
class ExpireSessionsHandler {
  @OnJob(JobName.ExpireIdleSessions)
  async run() {
    return 0;
  }
}

@Injectable()
class CompactHandler {
  @OnJob(JobName.Compact)
  async run() {
    return 'compacted';
  }
}

/** A handler whose dependency resolves late: Nest instantiates it after JobRunner's constructor ran. */
@Injectable()
class LateHandler {
  constructor(@Inject('LATE_DEPENDENCY') private readonly dependency: string) {}

  @OnJob(JobName.Compact)
  async run() {
    return `compacted with ${this.dependency}`;
  }
}

async function compile(providers: unknown[]) {
  return Test.createTestingModule({
    imports: [DiscoveryModule],
    providers: [
      { provide: WORKER_CONFIG, useValue: {} },
      { provide: WORKER_REDIS, useValue: {} },
      { provide: JobQueue, useValue: {} },
      { provide: MaintenanceSchedules, useValue: {} },
      JobRunner,
      ...(providers as []),
    ],
  }).compile();
}

describe('JobRunner discovery', () => {
  it('refuses to start when a job has no handler', async () => {
    await expect(compile([])).rejects.toThrow(JobRegistryError);
  });

  it('refuses to start when a job has two handlers, naming both', async () => {
    await expect(compile([FirstHandler, SecondHandler, ExpireSessionsHandler, CompactHandler])).rejects.toThrow('FirstHandler.run, SecondHandler.run');
  });

  it('finds the one handler of each job', async () => {
    const moduleRef = await compile([FirstHandler, ExpireSessionsHandler, CompactHandler]);
    const runner = moduleRef.get(JobRunner);
    expect([...runner.registry.names].sort()).toEqual([JobName.ExpireIdempotencyRecords, JobName.ExpireIdleSessions, JobName.Compact].sort());
    await expect(runner.registry.dispatch(JobName.ExpireIdempotencyRecords, { olderThanHours: 1 })).resolves.toBe(1);
  });

  it('dispatches to the instance Nest finished, even when it was built after the runner', async () => {
    const late = { provide: 'LATE_DEPENDENCY', useFactory: () => new Promise<string>((resolve) => setTimeout(() => resolve('its dependency'), 20)) };
    const moduleRef = await compile([FirstHandler, ExpireSessionsHandler, LateHandler, late]);
    await expect(moduleRef.get(JobRunner).registry.dispatch(JobName.Compact, { jobId: '00000000-0000-4000-8000-000000000000', sessionId: '00000000-0000-4000-8000-000000000001', tenantId: '00000000-0000-4000-8000-000000000002' })).resolves.toBe('compacted with its dependency');
  });
});
