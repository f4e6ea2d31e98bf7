import { runBuiltApp } from '@compactor/testing';

describe('worker startup with bad configuration or unreachable dependencies', () => {
  it('lists every bad variable in one message and exits non-zero', () => {
    const result = runBuiltApp('worker', { LOG_LEVEL: 'loud', DATABASE_URL: 'mysql://x', REDIS_URL: 'nope' });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('Invalid configuration for worker');
    for (const name of ['LOG_LEVEL', 'DATABASE_URL', 'REDIS_URL']) expect(result.stderr).toContain(`  - ${name}:`);
  });

  it('names the unreachable URLs with passwords masked and exits non-zero', () => {
    const result = runBuiltApp('worker', {
      DATABASE_URL: 'postgresql://app:pg-secret@127.0.0.1:1/compactor',
      REDIS_URL: 'redis://:redis-secret@127.0.0.1:1',
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('PostgreSQL at postgresql://app:***@127.0.0.1:1/compactor');
    expect(result.stderr).toContain('Redis at redis://:***@127.0.0.1:1');
    expect(result.stderr + result.stdout).not.toMatch(/pg-secret|redis-secret/);
  });
});
