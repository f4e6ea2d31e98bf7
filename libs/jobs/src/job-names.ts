import { z } from 'zod';

export enum QueueName {
  Maintenance = 'maintenance',
}

export enum JobName {
  ExpireIdempotencyRecords = 'idempotency.expire',
}

/** Payload schemas, parsed when a job is consumed: payloads are never trusted by type alone. */
export const jobPayloadSchemas = {
  [JobName.ExpireIdempotencyRecords]: z.object({
    /** Keys older than this are forgotten; a retried append after that applies again. */
    olderThanHours: z.number().int().positive().max(24 * 365),
  }),
} satisfies Record<JobName, z.ZodType>;

export const jobQueues: Record<JobName, QueueName> = {
  [JobName.ExpireIdempotencyRecords]: QueueName.Maintenance,
};

export type JobPayload<N extends JobName> = z.infer<(typeof jobPayloadSchemas)[N]>;
