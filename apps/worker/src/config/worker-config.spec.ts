import { ConfigError } from '@compactor/config';
import { loadWorkerConfig, workerLockOptions } from './worker-config';

describe('worker config', () => {
  it('has working defaults', () => {
    expect(loadWorkerConfig({})).toMatchObject({ WORKER_CONCURRENCY: 4, IDEMPOTENCY_TTL_HOURS: 24, QUEUE_PREFIX: 'compactor' });
  });

  it('reports every bad variable at once', () => {
    const load = () => loadWorkerConfig({ WORKER_CONCURRENCY: '0', REDIS_URL: 'localhost:6379' });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/WORKER_CONCURRENCY[\s\S]*REDIS_URL|REDIS_URL[\s\S]*WORKER_CONCURRENCY/);
  });

  it('takes a dead worker\'s job over within seconds by default, and renews the lock often enough to survive a busy event loop', () => {
    expect(workerLockOptions(loadWorkerConfig({}))).toEqual({ lockDuration: 8_000, lockRenewTime: 2_000, stalledInterval: 2_000, maxStalledCount: 2 });
    expect(workerLockOptions(loadWorkerConfig({ WORKER_LOCK_DURATION_MS: '4000', WORKER_LOCK_RENEW_MS: '1000', WORKER_STALLED_INTERVAL_MS: '1000', WORKER_MAX_STALLED_COUNT: '0' }))).toEqual({
      lockDuration: 4_000,
      lockRenewTime: 1_000,
      stalledInterval: 1_000,
      maxStalledCount: 0,
    });
  });

  it('refuses a lock renewed as late as half its duration, or a lock too short to mean anything', () => {
    expect(() => loadWorkerConfig({ WORKER_LOCK_DURATION_MS: '10000', WORKER_LOCK_RENEW_MS: '5000' })).toThrow(/WORKER_LOCK_RENEW_MS/);
    expect(() => loadWorkerConfig({ WORKER_LOCK_DURATION_MS: '500' })).toThrow(/WORKER_LOCK_DURATION_MS/);
  });
});
