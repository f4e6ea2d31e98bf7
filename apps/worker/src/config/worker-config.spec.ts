import { ConfigError } from '@compactor/config';
import { loadWorkerConfig } from './worker-config';

describe('worker config', () => {
  it('has working defaults', () => {
    expect(loadWorkerConfig({})).toMatchObject({ WORKER_CONCURRENCY: 4, IDEMPOTENCY_TTL_HOURS: 24, QUEUE_PREFIX: 'compactor' });
  });

  it('reports every bad variable at once', () => {
    const load = () => loadWorkerConfig({ WORKER_CONCURRENCY: '0', REDIS_URL: 'localhost:6379' });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/WORKER_CONCURRENCY[\s\S]*REDIS_URL|REDIS_URL[\s\S]*WORKER_CONCURRENCY/);
  });
});
