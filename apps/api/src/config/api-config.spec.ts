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

  it('the database deployment options: no replica and named statements by default; a bad replica URL or flag is refused', () => {
    const defaults = loadApiConfig({});
    expect(defaults.DATABASE_REPLICA_URL).toBeUndefined();
    expect(defaults.DATABASE_PREPARED_STATEMENTS).toBe(true);
    expect(defaults.DATABASE_REPLICA_EXPORT_WAIT_MS).toBe(2000);
    const set = loadApiConfig({ DATABASE_REPLICA_URL: 'postgresql://ro@replica:5432/compactor', DATABASE_PREPARED_STATEMENTS: 'false', DATABASE_REPLICA_EXPORT_WAIT_MS: '0' });
    expect(set).toMatchObject({ DATABASE_REPLICA_URL: 'postgresql://ro@replica:5432/compactor', DATABASE_PREPARED_STATEMENTS: false, DATABASE_REPLICA_EXPORT_WAIT_MS: 0 });
    let error: ConfigError | undefined;
    try {
      loadApiConfig({ DATABASE_REPLICA_URL: 'replica:5432', DATABASE_PREPARED_STATEMENTS: 'no' });
    } catch (e) {
      error = e as ConfigError;
    }
    expect(error?.problems.map((p) => p.split(':')[0]).sort()).toEqual(['DATABASE_PREPARED_STATEMENTS', 'DATABASE_REPLICA_URL']);
  });
});
