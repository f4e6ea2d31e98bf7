import { spawn, spawnSync, SpawnSyncReturns } from 'node:child_process';
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

export interface RunningApp {
  /** Everything the process wrote so far (stdout and stderr). */
  output(): string;
  /** The exit code once the process ended (null while it runs): an outage must never end it. */
  exitCode(): number | null;
  /** The process id (for a test that kills it as an operator or the kernel would). */
  readonly pid: number;
  /** Sends a signal and resolves once the process ended (`SIGKILL`: no shutdown hook runs, as when a machine dies). */
  kill(signal: NodeJS.Signals): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts a built app's entry point (dist/) as its own process, as production runs it, and
 * resolves once it printed `ready` (a worker next to a test API shares its database and queue
 * prefix through `env`). Fails with the output if it exits or stays silent past the deadline.
 */
export async function startBuiltApp(app: 'api' | 'worker', env: Record<string, string>, ready: RegExp, timeoutMs = 30000): Promise<RunningApp> {
  const main = join(root, `dist/apps/${app}/apps/${app}/src/main.js`);
  if (!existsSync(main)) throw new Error(`${main} is missing: build first (npx nx run ${app}:build)`);
  const child = spawn(process.execPath, [main], { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += String(d)));
  child.stderr.on('data', (d) => (output += String(d)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${app} did not start within ${timeoutMs} ms:\n${output}`)), timeoutMs);
    const check = () => {
      if (ready.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', check);
    child.stderr.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${app} exited with ${code} before it was ready:\n${output}`));
    });
  });
  return {
    output: () => output,
    exitCode: () => child.exitCode ?? (child.signalCode ? -1 : null),
    pid: child.pid ?? -1,
    kill: async (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * The built worker on an API's database, Redis and queue prefix (the offline summarizer unless
 * `env` says otherwise), resolved once it says it started.
 */
export function startWorkerFor(config: { DATABASE_URL: string; REDIS_URL: string; QUEUE_PREFIX: string }, env: Record<string, string> = {}): Promise<RunningApp> {
  return startBuiltApp(
    'worker',
    { DATABASE_URL: config.DATABASE_URL, REDIS_URL: config.REDIS_URL, QUEUE_PREFIX: config.QUEUE_PREFIX, COMPACTOR_SUMMARIZER: 'local', LOG_LEVEL: 'info', ...env },
    /Compactor worker started/,
  );
}
