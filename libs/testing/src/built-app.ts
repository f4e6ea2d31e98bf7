import { spawnSync, SpawnSyncReturns } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '../../..');

/**
 * Runs a built app's entry point (dist/) to completion, as `npm start` would run it.
 * npm test builds before it runs Jest; run `npx nx run-many -t build` when running Jest alone.
 */
export function runBuiltApp(app: 'api' | 'worker', env: Record<string, string>, timeoutMs = 30000): SpawnSyncReturns<string> {
  const main = join(root, `dist/apps/${app}/apps/${app}/src/main.js`);
  if (!existsSync(main)) throw new Error(`${main} is missing: build first (npx nx run ${app}:build)`);
  return spawnSync(process.execPath, [main], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
    timeout: timeoutMs,
  });
}
