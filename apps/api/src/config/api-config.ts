import { databaseUrl, Env, host, httpUrl, loadConfig, logLevel, port, positiveInt, redisUrl, tenantLimitFields, databaseDeploymentFields } from '@compactor/config';
import { z } from 'zod';

export const apiConfigSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  HOST: host.default('127.0.0.1'),
  PORT: port.default(3000),
  DATABASE_URL: databaseUrl.default('postgresql://postgres@127.0.0.1:5432/compactor'),
  ...databaseDeploymentFields,
  REDIS_URL: redisUrl.default('redis://127.0.0.1:6379'),
  LOG_LEVEL: logLevel.default('info'),
  /** Tool results are large: request bodies up to this many megabytes are accepted, larger ones get 413. */
  BODY_LIMIT_MB: positiveInt.max(1024).default(32),
  /** BullMQ key prefix, shared with the worker. */
  QUEUE_PREFIX: z.string().regex(/^[A-Za-z0-9:_-]+$/, 'letters, digits, ":", "_" or "-" only').default('compactor'),
  /** Headless setup: the default tenant gets exactly this API key (all scopes), stored hashed. */
  COMPACTOR_INIT_API_KEY: z
    .string()
    .regex(/^[A-Za-z0-9_-]{24,200}$/, '24-200 characters of letters, digits, "_" or "-"')
    .optional(),
  /** Per-process cache of assembled contexts (megabytes); 0 turns it off. Entries are checked against the session row on every read. */
  CONTEXT_CACHE_MB: z.coerce.number().int().min(0).max(65536).default(256),
  /**
   * How long this process remembers a key it found active, sparing the key's lookup on the next requests (0: never).
   * A key revoked through another API process or the CLI is still accepted here for at most this long.
   */
  API_KEY_CACHE_MS: z.coerce.number().int().min(0).max(60_000).default(1_000),
  /** How long `POST /v1/sessions/:id/compact` with dryRun waits for the workers before answering with the queued job. */
  DRY_RUN_TIMEOUT_MS: positiveInt.max(600_000).default(60_000),
  /** Interval of the SSE comment that keeps idle event streams open through proxies; each beat also re-reads missed events. */
  EVENTS_HEARTBEAT_MS: positiveInt.max(600_000).default(15_000),
  /** Live event streams one API key may hold open on one API process; one more is a 429. */
  EVENTS_STREAMS_PER_KEY: positiveInt.max(10_000).default(20),
  /** The proxy's upstreams (a tenant's settings may name others): provider paths are appended, e.g. `/v1/messages`. */
  COMPACTOR_PROXY_ANTHROPIC_BASE_URL: httpUrl.default('https://api.anthropic.com'),
  COMPACTOR_PROXY_OPENAI_BASE_URL: httpUrl.default('https://api.openai.com'),
  /**
   * Whether a tenant's `settings.proxy` upstream may resolve to loopback, link-local (169.254.0.0/16, cloud metadata)
   * or private addresses. Off by default: a tenant's settings must not reach the operator's internal network.
   * The environment's own upstreams above are the operator's choice and never checked.
   */
  COMPACTOR_PROXY_ALLOW_PRIVATE_UPSTREAMS: z.enum(['true', 'false']).default('false').transform((v) => v === 'true'),
  /** How long the proxy waits for the upstream: to connect and answer, and between two chunks of a streamed answer. */
  COMPACTOR_PROXY_TIMEOUT_MS: positiveInt.max(3_600_000).default(600_000),
  /**
   * How long a proxied request whose context is over the budget waits for the session's queued or running compaction
   * before it is forwarded through the read-time fallback (0: never waits). Only while a worker is alive.
   */
  COMPACTOR_PROXY_COMPACTION_WAIT_MS: z.coerce.number().int().min(0).max(600_000).default(2_000),
  /** How long a shutdown waits for in-flight requests before closing connections. */
  SHUTDOWN_TIMEOUT_MS: positiveInt.default(10000),
  ...tenantLimitFields,
});

export type ApiConfig = z.infer<typeof apiConfigSchema>;

export const API_CONFIG = Symbol('API_CONFIG');

export function loadApiConfig(env?: Env): ApiConfig {
  return loadConfig('api', apiConfigSchema, env);
}
