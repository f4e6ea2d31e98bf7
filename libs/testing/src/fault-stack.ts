import { RunningApp, startBuiltApp, startWorkerFor } from './built-app';
import { createTestDatabase, TestDatabase } from './test-database';
import { testRedisUrl, uniqueQueuePrefix } from './test-redis';
import { randomBytes } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { Pool } from 'pg';

/** A loopback port nobody listens on right now. */
export const freeLoopbackPort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });

/** A built API process and where it listens. */
export interface BuiltApi {
  url: string;
  app: RunningApp;
}

/**
 * Built API and worker processes on one test database and queue prefix, as production runs them,
 * for fault tests that kill them (SIGKILL) and start new ones. Every API authenticates the same
 * key (COMPACTOR_INIT_API_KEY on the default tenant); `query` reads the database directly.
 */
export interface FaultStack {
  readonly db: TestDatabase;
  readonly config: { DATABASE_URL: string; REDIS_URL: string; QUEUE_PREFIX: string };
  readonly key: string;
  startApi(env?: Record<string, string>): Promise<BuiltApi>;
  startWorker(env?: Record<string, string>): Promise<RunningApp>;
  query<T extends Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Stops every process still running (SIGTERM), then drops the database. */
  close(): Promise<void>;
}

export async function startFaultStack(label: string, redisUrl = testRedisUrl()): Promise<FaultStack> {
  const db = await createTestDatabase(label);
  const config = { DATABASE_URL: db.url, REDIS_URL: redisUrl, QUEUE_PREFIX: uniqueQueuePrefix(label) };
  const key = `ck_${label.replace(/[^a-z0-9]/gi, '')}_${randomBytes(16).toString('hex')}`;
  const pool = new Pool({ connectionString: db.url, max: 2 });
  // An idle connection the server ended (a terminated backend) is dropped; the next query opens another.
  pool.on('error', () => undefined);
  const processes: RunningApp[] = [];
  return {
    db,
    config,
    key,
    startApi: async (env = {}) => {
      const port = await freeLoopbackPort();
      const app = await startBuiltApp('api', { ...config, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', COMPACTOR_INIT_API_KEY: key, ...env }, /Compactor API listening/);
      processes.push(app);
      return { url: `http://127.0.0.1:${port}`, app };
    },
    startWorker: async (env = {}) => {
      const worker = await startWorkerFor(config, env);
      processes.push(worker);
      return worker;
    },
    query: async (sql, params = []) => (await pool.query(sql, params)).rows,
    close: async () => {
      await Promise.all(processes.map((p) => p.stop()));
      await pool.end();
      await db.drop();
    },
  };
}
