import { defineConfig } from '@playwright/test';
import { resolve } from 'node:path';
import { API_PORT, API_URL, DASHBOARD_NO_API_PORT, DASHBOARD_PORT, DASHBOARD_URL, DEAD_API_URL, E2E_API_KEY, E2E_QUEUE_PREFIX } from './stack';

// Playwright drives the built stack: the API from dist/ and the dashboard's `next build`
// output. Build both and migrate the e2e database before running it.
const root = resolve(__dirname, '..');
const E2E_DATABASE_URL = process.env.E2E_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/compactor_e2e';
const E2E_REDIS_URL = process.env.E2E_REDIS_URL ?? 'redis://127.0.0.1:6379';

function dashboard(port: number, apiUrl: string) {
  return {
    command: `node node_modules/next/dist/bin/next start apps/dashboard -p ${port} -H 127.0.0.1`,
    cwd: root,
    url: `http://127.0.0.1:${port}`,
    env: { COMPACTOR_API_URL: apiUrl, NEXT_TELEMETRY_DISABLED: '1' },
    reuseExistingServer: false,
    timeout: 60_000,
  };
}

export default defineConfig({
  testDir: './tests',
  outputDir: resolve(root, 'test-results/e2e'),
  fullyParallel: false,
  forbidOnly: true,
  workers: 1,
  retries: 0,
  reporter: 'list',
  timeout: 30_000,
  use: {
    browserName: 'chromium',
    baseURL: DASHBOARD_URL,
    viewport: { width: 1280, height: 800 },
    trace: 'retain-on-failure',
    launchOptions: {
      // Debian's Chromium; Playwright's own browser download is never used here.
      executablePath: '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
  webServer: [
    {
      command: 'node dist/apps/api/apps/api/src/main.js',
      cwd: root,
      url: `${API_URL}/health/ready`,
      env: {
        PORT: String(API_PORT),
        HOST: '127.0.0.1',
        DATABASE_URL: E2E_DATABASE_URL,
        REDIS_URL: E2E_REDIS_URL,
        QUEUE_PREFIX: E2E_QUEUE_PREFIX,
        COMPACTOR_INIT_API_KEY: E2E_API_KEY,
        LOG_LEVEL: 'warn',
      },
      reuseExistingServer: false,
      timeout: 60_000,
    },
    {
      // The worker: compactions run for real (offline summarizer), so pages show them live.
      command: 'node dist/apps/worker/apps/worker/src/main.js',
      cwd: root,
      wait: { stdout: /Compactor worker started/ },
      env: { DATABASE_URL: E2E_DATABASE_URL, REDIS_URL: E2E_REDIS_URL, QUEUE_PREFIX: E2E_QUEUE_PREFIX, COMPACTOR_SUMMARIZER: 'local', LOG_LEVEL: 'warn' },
      reuseExistingServer: false,
      timeout: 60_000,
    },
    dashboard(DASHBOARD_PORT, API_URL),
    dashboard(DASHBOARD_NO_API_PORT, DEAD_API_URL),
  ],
});
