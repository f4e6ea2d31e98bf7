import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { root } from './prisma.mjs';
import { run, step } from './run.mjs';

/** Installs dependencies when node_modules is missing or older than the lockfile. */
export async function ensureDependencies() {
  const marker = path.join(root, 'node_modules/.package-lock.json');
  const lock = path.join(root, 'package-lock.json');
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return;
  step('Installing dependencies (npm install)');
  // `npm ci` refuses this machine's lockfile (TOOLCHAIN.md); browsers come from Debian, not Playwright.
  const code = await run('npm', ['install', '--no-audit', '--no-fund'], {
    env: { ...process.env, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1' },
  });
  if (code !== 0) throw new Error('npm install failed');
}
