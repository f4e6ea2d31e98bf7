import { z } from 'zod';
import { ConfigError, loadConfig } from './load-config';
import { databaseUrl, port, redisUrl } from './env-fields';
import { maskUrl } from './mask-url';

const schema = z.object({ DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, PORT: port.default(3000) });

describe('loadConfig', () => {
  it('returns typed values with defaults applied', () => {
    const config = loadConfig('api', schema, {
      DATABASE_URL: 'postgresql://u:p@localhost:5432/db',
      REDIS_URL: 'redis://localhost:6379',
    });
    expect(config).toEqual({
      DATABASE_URL: 'postgresql://u:p@localhost:5432/db',
      REDIS_URL: 'redis://localhost:6379',
      PORT: 3000,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('lists every problem in one error', () => {
    let error: unknown;
    try {
      loadConfig('api', schema, { REDIS_URL: 'http://nope', PORT: '70000' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const { message, problems } = error as ConfigError;
    expect(problems).toHaveLength(3);
    expect(message).toContain('DATABASE_URL: is required but not set');
    expect(message).toContain('REDIS_URL: must be a URL like redis://');
    expect(message).toContain('PORT:');
  });

  it('treats empty strings as unset', () => {
    expect(() => loadConfig('api', schema, { DATABASE_URL: '', REDIS_URL: 'redis://x:1' })).toThrow(
      'DATABASE_URL: is required but not set',
    );
  });
});

describe('maskUrl', () => {
  it('hides passwords', () => {
    expect(maskUrl('postgresql://app:s3cret@db:5432/x')).toBe('postgresql://app:***@db:5432/x');
    expect(maskUrl('redis://:hunter2@cache:6379')).toBe('redis://:***@cache:6379');
    expect(maskUrl('redis://token@cache:6379')).toBe('redis://***@cache:6379');
    expect(maskUrl('postgresql://root@127.0.0.1:5432/db')).toBe('postgresql://root@127.0.0.1:5432/db');
    expect(maskUrl('::nope')).toBe('<unparseable URL>');
  });
});
