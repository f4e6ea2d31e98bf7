import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { z } from 'zod';

/** Largest id a Postgres bigint holds. */
const MAX_EVENT_ID = 9_223_372_036_854_775_807n;

/** An event id as clients send it (`after`, `before`, `Last-Event-ID`): a decimal string, since ids are bigints. */
export const eventIdSchema = z
  .string()
  .regex(/^\d{1,19}$/, 'must be an event id (a non-negative integer)')
  .transform((v) => BigInt(v))
  .refine((v) => v <= MAX_EVENT_ID, 'must be an event id (a non-negative integer)');

const eventTypeSchema = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'must be an event type such as compressed or compression-error');

/** `?type=a,b` or `?type=a&type=b`. */
const typesSchema = z
  .union([z.string(), z.array(z.string())])
  .transform((v) => (Array.isArray(v) ? v : [v]).flatMap((t) => t.split(',')).filter((t) => t !== ''))
  .pipe(z.array(eventTypeSchema).max(32, 'at most 32 types'));

export const eventsQuerySchema = z.strictObject({
  after: eventIdSchema.optional(),
  before: eventIdSchema.optional(),
  limit: z.coerce.number().int('must be an integer').min(1).max(500).default(100),
  type: typesSchema.optional(),
  order: z.enum(['asc', 'desc']).default('asc'),
});

export type EventsQuery = z.infer<typeof eventsQuerySchema>;

export class EventView {
  @ApiProperty({ description: 'Monotonic per session; a decimal string (the id is a Postgres bigint). SSE clients resume with it as Last-Event-ID.', example: '1042' })
  id!: string;

  @ApiProperty({ example: 'compressed', description: 'compaction-started, compaction-progress, compressed, compression-skipped, compression-error, checkpoint-created, checkpoint-aged, snapshot-created, snapshot-restored, watermark-advanced, offloaded, budget-too-small, …' })
  type!: string;

  @ApiProperty({ example: 'Summarized 8 messages → 1 summary (saved ~1,200 tokens)' })
  line!: string;

  @ApiProperty({ type: 'object', additionalProperties: true, description: 'Structured details, e.g. the compaction job id.' })
  data!: unknown;

  @ApiProperty({ format: 'date-time' })
  createdAt!: string;
}

export class EventPage {
  @ApiProperty()
  sessionId!: string;

  @ApiProperty({ type: EventView, isArray: true })
  events!: EventView[];

  @ApiPropertyOptional({
    nullable: true,
    type: String,
    description: 'The id to pass as `after` (order=asc) or `before` (order=desc) for the next page; null when this page reached the end.',
  })
  nextCursor!: string | null;
}
