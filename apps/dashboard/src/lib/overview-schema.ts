import { z } from 'zod';
import type { components } from '../api/schema';

type Schemas = components['schemas'];

/**
 * The analytics summary checked at runtime before the Overview draws it. Annotated with the
 * generated types, so a change of the OpenAPI document that this schema no longer matches
 * fails the typecheck; an API answer that does not match it is reported, never drawn.
 */
const count = z.number().int().nonnegative();
const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/);
const instant = z.string().min(1);

const compactionDay: z.ZodType<Schemas['CompactionDay']> = z.object({
  day,
  count,
  succeeded: count,
  skipped: count,
  failed: count,
  tokensSaved: z.number(),
  llmCalls: count,
  llmTokens: count,
  llmCostUsd: z.number().min(0),
});

const queueDepth: z.ZodType<Schemas['QueueDepth']> = z.object({ waiting: count, active: count, delayed: count, failed: count });

export const analyticsSummarySchema: z.ZodType<Schemas['AnalyticsSummary']> = z.object({
  from: instant,
  to: instant,
  tokensSaved: z.number(),
  compactions: z.object({ total: count, succeeded: count, skipped: count, failed: count, queued: count, running: count }),
  compressionRatios: z.object({
    buckets: z.array(z.object({ from: z.number(), to: z.number(), count })),
    median: z.number().nullable().optional(),
  }),
  compactionsPerDay: z.array(compactionDay),
  llm: z.object({ calls: count, inputTokens: count, outputTokens: count, costUsd: z.number().nonnegative() }),
  failures: z.object({
    total: count,
    perDay: z.array(z.object({ day, count })),
    recent: z.array(
      z.object({
        jobId: z.string(),
        sessionId: z.string(),
        trigger: z.enum(['threshold', 'manual', 'watermark', 'ingest']),
        error: z.string().nullable().optional(),
        at: instant,
      }),
    ),
  }),
  queueDepth,
  sessionsNearBudget: z.object({
    threshold: z.number(),
    count,
    sessions: z.array(z.object({ id: z.string(), model: z.string(), utilization: z.number(), contextTokens: count, lastActivityAt: instant })),
  }),
});

export { queueDepth as queueDepthSchema };
