import { NestExpressApplication } from '@nestjs/platform-express';
import { createTestDatabase, pollUntil, startRedisServer, TestDatabase, TestRedisServer, testRedisUrl, uniqueQueuePrefix } from '@compactor/testing';
import request from 'supertest';
import { Writable } from 'node:stream';
import { ApiKeyRepository, ApiKeyScope, PgPoolService, PrismaService, TenantRepository } from '@compactor/persistence';
import { randomBytes } from 'node:crypto';
import { createApp } from './app.factory';
import { generateApiKey, hashApiKey, keyPrefix } from './auth/api-key-secret';
import { ApiConfig, loadApiConfig } from './config/api-config';

export interface TestApi {
  app: NestExpressApplication;
  config: ApiConfig;
  /** Every log line the app wrote, parsed. */
  logs: Record<string, unknown>[];
  /** A new tenant with one key of the given scopes; returns the key. */
  tenantKey(scopes?: ApiKeyScope[], tenantName?: string): Promise<string>;
  close(): Promise<void>;
}

/** The real API on its own database and queue prefix, listening on an ephemeral loopback port. */
export async function startTestApi(overrides: Record<string, string> = {}): Promise<TestApi> {
  const db: TestDatabase = await createTestDatabase('api');
  const config = loadApiConfig({
    DATABASE_URL: db.url,
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX: uniqueQueuePrefix('api'),
    LOG_LEVEL: 'info',
    PORT: '3000', // unused: the test app listens on an ephemeral port
    // The fake upstreams tenants are pointed at listen on loopback.
    COMPACTOR_PROXY_ALLOW_PRIVATE_UPSTREAMS: 'true',
    ...overrides,
  });
  const logs: Record<string, unknown>[] = [];
  const logDestination = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) logs.push(JSON.parse(line));
      done();
    },
  });
  const app = await createApp(config, { logDestination });
  await app.listen(0, '127.0.0.1');
  const prisma = app.get(PrismaService);
  const tenantKey = async (scopes: ApiKeyScope[] = ['ingest', 'read', 'admin'], tenantName?: string) => {
    const tenant = await new TenantRepository(prisma).ensure(tenantName ?? `tenant-${randomBytes(4).toString('hex')}`);
    const key = generateApiKey();
    await new ApiKeyRepository(prisma, app.get(PgPoolService)).create({ tenantId: tenant.id, name: 'test', prefix: keyPrefix(key), hash: hashApiKey(key), scopes });
    return key;
  };
  return {
    app,
    config,
    logs,
    tenantKey,
    close: async () => {
      await app.close();
      await db.drop();
    },
  };
}

export type TestApiOnOwnRedis = TestApi & { redis: TestRedisServer };

/**
 * The test API on a redis-server of its own, for tests that stop and start Redis. `close()` brings Redis back first (a
 * test that failed may have left it down, and the app closes its connections cleanly only on a live one), closes the
 * app, then stops Redis.
 */
export async function startTestApiOnOwnRedis(overrides: Record<string, string> = {}): Promise<TestApiOnOwnRedis> {
  const redis = await startRedisServer();
  let api: TestApi;
  try {
    api = await startTestApi({ REDIS_URL: redis.url, ...overrides });
  } catch (error) {
    await redis.stop();
    throw error;
  }
  return {
    ...api,
    redis,
    close: async () => {
      await redis.start();
      try {
        await api.close();
      } finally {
        await redis.stop();
      }
    },
  };
}

/** A job as GET /v1/jobs/:id shows it (the fields tests read). */
export interface FinishedJob {
  id: string;
  status: string;
  reason: string | null;
  trigger: string;
  sessionId: string;
  llmCalls: number | null;
  tokensBefore: number | null;
  tokensAfter: number | null;
  resultVersion: number | null;
}

/** Polls GET /v1/jobs/:id until the job ended (succeeded, skipped or failed); a timeout quotes the worker's last output. */
export function jobFinished(api: TestApi, key: string, jobId: string, worker?: { output(): string }, timeoutMs = 60_000): Promise<FinishedJob> {
  return pollUntil(
    async () => {
      const res = await request(api.app.getHttpServer()).get(`/v1/jobs/${jobId}`).set({ Authorization: `Bearer ${key}` }).expect(200);
      const job = res.body as FinishedJob;
      return ['succeeded', 'skipped', 'failed'].includes(job.status) ? job : undefined;
    },
    { timeoutMs, what: `job ${jobId} to finish${worker ? ` (worker output: ${worker.output().slice(-2000)})` : ''}` },
  );
}
