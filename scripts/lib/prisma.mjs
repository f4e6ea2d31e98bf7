// Runs the Prisma CLI offline: Migrate uses its WebAssembly engine through the pg adapter
// (prisma.config.ts), and these variables stop the CLI from downloading native engines.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export function prismaEnv(databaseUrl) {
  return {
    ...process.env,
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    PRISMA_HIDE_UPDATE_MESSAGE: '1',
    PRISMA_QUERY_ENGINE_LIBRARY: '/bin/true',
    PRISMA_SCHEMA_ENGINE_BINARY: '/bin/true',
  };
}

/** Runs `prisma ...args`; returns { status, stdout, stderr }. */
export function prisma(args, { databaseUrl, inherit = false } = {}) {
  const result = spawnSync(path.join(root, 'node_modules/.bin/prisma'), args, {
    cwd: root,
    env: prismaEnv(databaseUrl),
    encoding: 'utf8',
    stdio: inherit ? 'inherit' : 'pipe',
  });
  return { status: result.status ?? 1, stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
}
