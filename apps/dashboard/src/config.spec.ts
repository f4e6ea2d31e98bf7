import { ConfigError } from '@compactor/config';
import { parseDashboardConfig } from './config';

describe('parseDashboardConfig', () => {
  it('applies the documented defaults', () => {
    expect(parseDashboardConfig({})).toEqual({
      COMPACTOR_API_URL: 'http://127.0.0.1:3000',
      DASHBOARD_PORT: 3001,
      DASHBOARD_HOST: '127.0.0.1',
    });
  });

  it('reads set values, coerces the port and drops a trailing slash from the API URL', () => {
    expect(
      parseDashboardConfig({
        COMPACTOR_API_URL: 'https://compactor.internal:8443/',
        DASHBOARD_PORT: '4001',
        DASHBOARD_HOST: '0.0.0.0',
      }),
    ).toEqual({ COMPACTOR_API_URL: 'https://compactor.internal:8443', DASHBOARD_PORT: 4001, DASHBOARD_HOST: '0.0.0.0' });
  });

  it('treats empty strings as unset', () => {
    expect(parseDashboardConfig({ COMPACTOR_API_URL: '', DASHBOARD_PORT: '' })).toMatchObject({
      COMPACTOR_API_URL: 'http://127.0.0.1:3000',
      DASHBOARD_PORT: 3001,
    });
  });

  it('lists every bad variable in one error', () => {
    let error: unknown;
    try {
      parseDashboardConfig({ COMPACTOR_API_URL: 'ftp://example.com', DASHBOARD_PORT: '70000' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const { message, problems } = error as ConfigError;
    expect(problems).toHaveLength(2);
    expect(message).toContain('Invalid configuration for dashboard');
    expect(message).toContain('COMPACTOR_API_URL: must be a URL like http://');
    expect(message).toMatch(/DASHBOARD_PORT: .*65535/);
  });

  it('rejects a port that is not a number', () => {
    expect(() => parseDashboardConfig({ DASHBOARD_PORT: 'abc' })).toThrow(/DASHBOARD_PORT/);
  });
});
