import { host, httpUrl, loadConfig, port, type Env } from '@compactor/config';
import { z } from 'zod';

const dashboardEnvSchema = z.object({
  /** Base URL of the Compactor API; only the dashboard's server code calls it. */
  COMPACTOR_API_URL: httpUrl.default('http://127.0.0.1:3000').transform((url) => url.replace(/\/+$/, '')),
  DASHBOARD_PORT: port.default(3001),
  DASHBOARD_HOST: host.default('127.0.0.1'),
});

export type DashboardConfig = z.infer<typeof dashboardEnvSchema>;

/** Validates an environment; throws one ConfigError listing every bad variable. */
export function parseDashboardConfig(env: Env): DashboardConfig {
  return loadConfig('dashboard', dashboardEnvSchema, env);
}

let cached: DashboardConfig | undefined;

/**
 * The dashboard's configuration, read from process.env on first use. Lazy, so that
 * `next build` does not need the runtime environment. The only module that reads process.env.
 */
export function getDashboardConfig(): DashboardConfig {
  cached ??= parseDashboardConfig(process.env);
  return cached;
}
