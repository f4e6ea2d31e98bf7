import { ConfigError } from '@compactor/config';
import { loadApiConfig } from './api-config';

describe('api config', () => {
  it('defaults to the ports and hosts SPEC.md names', () => {
    const config = loadApiConfig({});
    expect(config.PORT).toBe(3000);
    expect(config.HOST).toBe('127.0.0.1');
    expect(config.BODY_LIMIT_MB).toBe(32);
  });

  it('reports every bad variable at once', () => {
    let error: ConfigError | undefined;
    try {
      loadApiConfig({ PORT: 'abc', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud', QUEUE_PREFIX: 'a b' });
    } catch (e) {
      error = e as ConfigError;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(error?.problems.map((p) => p.split(':')[0]).sort()).toEqual(['DATABASE_URL', 'LOG_LEVEL', 'PORT', 'QUEUE_PREFIX']);
  });
});
