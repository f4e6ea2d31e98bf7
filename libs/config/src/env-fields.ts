import { z } from 'zod';
import { parseRedisUrl } from './redis-url';

// Fields shared by the apps' config schemas. Each app composes its own schema from these.

const urlWithProtocols = (protocols: string[], example: string) =>
  z.string().refine(
    (value) => {
      try {
        return protocols.includes(new URL(value).protocol);
      } catch {
        return false;
      }
    },
    { message: `must be a URL like ${example}` },
  );

export const databaseUrl = urlWithProtocols(['postgres:', 'postgresql:'], 'postgresql://user:pass@host:5432/db');
/** One Redis, a Redis Cluster or a Sentinel-managed primary (redis-url.ts). */
export const redisUrl = z.string().refine(
  (value) => {
    try {
      parseRedisUrl(value);
      return true;
    } catch {
      return false;
    }
  },
  { message: 'must be a URL like redis://127.0.0.1:6379, redis+cluster://host:port,host:port or redis+sentinel://host:26379,host:26379/mymaster' },
);
export const httpUrl = urlWithProtocols(['http:', 'https:'], 'http://127.0.0.1:3000');
export const port = z.coerce.number().int().min(1).max(65535);
export const host = z.string().min(1);
export const logLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
export const positiveInt = z.coerce.number().int().positive();

/**
 * Deployment options of the database connections (issue #18), read by both apps: a read replica for
 * heavy reads (the API's analytics and export), and named statements off behind a pooler that
 * cannot keep them (PgBouncer < 1.21 in transaction mode). README "Deployment: replicas and pooling".
 */
export const databaseDeploymentFields = {
  DATABASE_REPLICA_URL: databaseUrl.optional(),
  DATABASE_REPLICA_EXPORT_WAIT_MS: z.coerce.number().int().min(0).max(60_000).default(2000),
  DATABASE_PREPARED_STATEMENTS: z.enum(['true', 'false']).default('true').transform((v) => v === 'true'),
};

const limit = (max: number) => z.coerce.number().min(0, 'must be 0 (no limit) or more').max(max).default(0);

/**
 * The operator's default tenant limits (issue #15): 0 = no limit. A tenant's own settings
 * (`PATCH /v1/tenant` → `limits`) override each; the ranges of a set value are in libs/persistence's
 * tenant-limits.ts. Both apps read them: the API rate-limits, the worker caps summarizer spend and
 * deletes idle sessions.
 */
export const tenantLimitFields = {
  COMPACTOR_LIMIT_REQUESTS_PER_MINUTE_PER_KEY: limit(1_000_000),
  COMPACTOR_LIMIT_REQUESTS_PER_MINUTE: limit(10_000_000),
  COMPACTOR_LIMIT_APPENDED_TOKENS_PER_MINUTE: limit(1_000_000_000),
  COMPACTOR_LIMIT_SUMMARIZER_TOKENS_PER_DAY: limit(10_000_000_000),
  COMPACTOR_LIMIT_SUMMARIZER_COST_PER_DAY_USD: limit(1_000_000),
  COMPACTOR_LIMIT_SESSION_RETENTION_DAYS: limit(36_500),
};
