import { z } from 'zod';

/**
 * Worker heartbeats: each worker process writes what it runs (summarizer provider, model, its
 * endpoint without credentials) and how its last job and LLM call went to one Redis key with a
 * short TTL, so the API can list the live workers (`GET /v1/status`) without a registry: a
 * worker that stops or crashes drops out when its key expires.
 */
export const WORKER_HEARTBEAT_INTERVAL_MS = 10_000;
/** Three missed beats and the worker counts as gone. */
export const WORKER_HEARTBEAT_TTL_S = 30;

export function workerHeartbeatKey(prefix: string, workerId: string): string {
  return `${prefix}:workers:${workerId}`;
}

/**
 * One key every worker under a prefix sets on each beat, with the heartbeat's TTL: whether any worker is alive, in one
 * read, where listing them needs a SCAN of the keyspace (the proxy asks it on its request path, CompactionWait).
 * Not deleted when a worker stops (another may still beat): it expires within the TTL of the last beat.
 */
export function workersAliveKey(prefix: string): string {
  return `${prefix}:workers-alive`;
}

/** The SCAN pattern of every heartbeat under a prefix (QUEUE_PREFIX allows no glob characters). */
export function workerHeartbeatPattern(prefix: string): string {
  return `${prefix}:workers:*`;
}

const instant = z.iso.datetime();

export const workerHeartbeatSchema = z.object({
  id: z.string().min(1).max(200),
  hostname: z.string(),
  pid: z.number().int(),
  startedAt: instant,
  beatAt: instant,
  concurrency: z.number().int(),
  summarizer: z.object({
    provider: z.string(),
    model: z.string(),
    /** Base URL with user, password and query removed; null for `local`. */
    endpoint: z.string().nullable(),
    /** Whether a provider key is set (never the key). */
    keyConfigured: z.boolean(),
    timeoutMs: z.number(),
  }),
  jobs: z.object({
    completed: z.number().int(),
    failed: z.number().int(),
    last: z
      .object({
        name: z.string(),
        /** The handler's status (`succeeded`, `skipped`, `failed`, …), `completed` when it returned none, `error` when it threw. */
        outcome: z.string(),
        at: instant,
      })
      .nullable(),
  }),
  llm: z.object({
    calls: z.number().int(),
    errors: z.number().int(),
    lastSuccessAt: instant.nullable(),
    lastErrorAt: instant.nullable(),
    /** Short, fixed text from the provider adapter, secrets redacted. */
    lastError: z.object({ kind: z.string(), message: z.string() }).nullable(),
    /** The latest probe of the summarizer's list-models endpoint (the sweep probes while an LLM outage holds compactions); absent before any. */
    probe: z.object({ state: z.enum(['up', 'down', 'unknown']), at: instant }).nullable().optional(),
  }),
});

export type WorkerHeartbeat = z.infer<typeof workerHeartbeatSchema>;
