import { z } from 'zod';

export enum QueueName {
  Maintenance = 'maintenance',
  Compaction = 'compaction',
}

export enum JobName {
  ExpireIdempotencyRecords = 'idempotency.expire',
  ExpireIdleSessions = 'sessions.expire',
  Compact = 'session.compact',
}

/** Payload schemas, parsed when a job is consumed: payloads are never trusted by type alone. */
export const jobPayloadSchemas = {
  [JobName.ExpireIdempotencyRecords]: z.object({
    /** Keys older than this are forgotten; a retried append after that applies again. */
    olderThanHours: z.number().int().positive().max(24 * 365),
  }),
  [JobName.ExpireIdleSessions]: z.object({
    /** Sessions deleted per transaction, so one run never holds its locks for long. */
    batchSize: z.number().int().positive().max(5000),
  }),
  [JobName.Compact]: z.object({
    /** The compaction_jobs row this run reports to. */
    jobId: z.uuid(),
    sessionId: z.uuid(),
    tenantId: z.uuid(),
  }),
} satisfies Record<JobName, z.ZodType>;

export const jobQueues: Record<JobName, QueueName> = {
  [JobName.ExpireIdempotencyRecords]: QueueName.Maintenance,
  [JobName.ExpireIdleSessions]: QueueName.Maintenance,
  [JobName.Compact]: QueueName.Compaction,
};

/**
 * One compaction per session at a time, and no trigger lost: while a session's compaction
 * runs, the latest trigger waits as one job that starts when the running one ends
 * (BullMQ deduplication with keepLastIfActive).
 */
export function compactionJobOptions(sessionId: string) {
  return { deduplication: { id: compactionDeduplicationId(sessionId), keepLastIfActive: true } };
}

export const compactionDeduplicationId = (sessionId: string) => `compact:${sessionId}`;

export type JobPayload<N extends JobName> = z.infer<(typeof jobPayloadSchemas)[N]>;
