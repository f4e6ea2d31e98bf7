import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class UsageCompactionMarker {
  @ApiProperty({ format: 'uuid' })
  jobId!: string;

  @ApiPropertyOptional({ nullable: true, type: Number, description: 'Context tokens before the compaction.' })
  tokensBefore!: number | null;

  @ApiPropertyOptional({ nullable: true, type: Number, description: 'Context tokens of the compacted part right after it (messages appended meanwhile not included).' })
  tokensAfter!: number | null;

  @ApiPropertyOptional({ nullable: true, type: String, enum: ['threshold', 'manual', 'watermark', 'ingest'] })
  trigger!: string | null;
}

export class UsagePoint {
  @ApiProperty({ description: 'The last seq of the history at this point.' })
  seq!: number;

  @ApiProperty({
    enum: ['append', 'compaction', 'restore', 'goal_update'],
    description: 'What changed the context: an append, a compaction (a marker; a watermark advance counts as one), a restore, or a goal update (a new goal block).',
  })
  kind!: string;

  @ApiProperty({ description: 'Tokens of the context as it would be sent after this change.' })
  contextTokens!: number;

  @ApiProperty({ description: 'The budget line at that time (it moves when the session config changes).' })
  budget!: number;

  @ApiProperty({ description: 'The trigger line at that time: context tokens at which the policy schedules a compaction.' })
  threshold!: number;

  @ApiProperty({ format: 'date-time' })
  at!: string;

  @ApiPropertyOptional({ type: UsageCompactionMarker, description: 'On compaction points: the job that compacted.' })
  compaction?: UsageCompactionMarker;

  @ApiPropertyOptional({ description: "With `maxPoints`: the point's 0-based position in the whole series (where to draw it)." })
  position?: number;
}

export class UsageSeries {
  @ApiProperty({ example: 'agent-run-42' })
  sessionId!: string;

  @ApiProperty({ description: "The session's budget now." })
  budget!: number;

  @ApiProperty({ description: "The session's trigger line now (tokens)." })
  threshold!: number;

  @ApiProperty({ description: 'Context tokens now.' })
  contextTokens!: number;

  @ApiProperty({ description: 'contextTokens / budget now.' })
  utilization!: number;

  @ApiProperty({
    type: UsagePoint,
    isArray: true,
    description: 'Oldest first. Without `maxPoints`: every point, one page (page with `after`). With it: the whole series, downsampled when longer (see `maxPoints`).',
  })
  points!: UsagePoint[];

  @ApiPropertyOptional({ nullable: true, type: String, description: 'Pass as `after` for the next page; null on the last page (always null with `maxPoints`).' })
  nextCursor!: string | null;

  @ApiPropertyOptional({ description: 'With `maxPoints`: the points of the whole series (more than `points` holds when it was downsampled).' })
  totalPoints?: number;

  @ApiPropertyOptional({ description: 'With `maxPoints`, when downsampled: the stretches of equal length the series was split into, each keeping its highest and lowest append.' })
  stretches?: number;
}

export class CompactionCounts {
  @ApiProperty({ description: 'Compaction jobs created in the range (dry runs excluded), whatever their status.' })
  total!: number;

  @ApiProperty()
  succeeded!: number;

  @ApiProperty({ description: 'Saved less than the policy minimum, history too short, or superseded.' })
  skipped!: number;

  @ApiProperty()
  failed!: number;

  @ApiProperty()
  queued!: number;

  @ApiProperty()
  running!: number;
}

export class RatioBucketView {
  @ApiProperty({ description: 'Inclusive lower bound of tokensAfter / tokensBefore.' })
  from!: number;

  @ApiProperty({ description: 'Exclusive upper bound (the last bucket includes 1).' })
  to!: number;

  @ApiProperty()
  count!: number;
}

export class CompressionRatios {
  @ApiProperty({ type: RatioBucketView, isArray: true, description: 'Ten buckets of width 0.1 over succeeded, non-dry-run compactions.' })
  buckets!: RatioBucketView[];

  @ApiPropertyOptional({ nullable: true, type: Number, description: 'Median tokensAfter / tokensBefore; null without succeeded compactions.' })
  median!: number | null;
}

export class CompactionDay {
  @ApiProperty({ example: '2026-11-23', description: 'UTC day.' })
  day!: string;

  @ApiProperty({ description: 'Compaction jobs created that day (dry runs excluded).' })
  count!: number;

  @ApiProperty()
  succeeded!: number;

  @ApiProperty()
  skipped!: number;

  @ApiProperty()
  failed!: number;

  @ApiProperty()
  tokensSaved!: number;

  @ApiProperty({ description: "Summarizer calls of that day's jobs, retries and dry runs included." })
  llmCalls!: number;

  @ApiProperty({ description: 'Summarizer input + output tokens of that day.' })
  llmTokens!: number;

  @ApiProperty({ description: 'Summarizer cost of that day, in US dollars.' })
  llmCostUsd!: number;
}

export class LlmUsage {
  @ApiProperty({ description: 'Summarizer calls, retries and dry runs included.' })
  calls!: number;

  @ApiProperty()
  inputTokens!: number;

  @ApiProperty()
  outputTokens!: number;

  @ApiProperty({ description: 'USD, from the model catalog prices.' })
  costUsd!: number;
}

export class FailureDay {
  @ApiProperty({ example: '2026-11-23' })
  day!: string;

  @ApiProperty()
  count!: number;
}

export class RecentFailure {
  @ApiProperty({ format: 'uuid' })
  jobId!: string;

  @ApiProperty({ example: 'agent-run-42' })
  sessionId!: string;

  @ApiProperty({ enum: ['threshold', 'manual', 'watermark', 'ingest'] })
  trigger!: string;

  @ApiPropertyOptional({ nullable: true, type: String })
  error!: string | null;

  @ApiProperty({ format: 'date-time' })
  at!: string;
}

export class Failures {
  @ApiProperty()
  total!: number;

  @ApiProperty({ type: FailureDay, isArray: true, description: 'Every UTC day of the range.' })
  perDay!: FailureDay[];

  @ApiProperty({ type: RecentFailure, isArray: true, description: 'The latest failed compactions of the range, newest first (at most 10).' })
  recent!: RecentFailure[];
}

export class QueueDepth {
  @ApiProperty({ description: 'Compaction runs waiting for a worker (prioritized included).' })
  waiting!: number;

  @ApiProperty()
  active!: number;

  @ApiProperty({ description: 'Waiting for a retry after a failure.' })
  delayed!: number;

  @ApiProperty({ description: 'Runs that failed after their last retry and are still kept by the queue.' })
  failed!: number;
}

export class NearBudgetSessionView {
  @ApiProperty({ example: 'agent-run-42' })
  id!: string;

  @ApiProperty()
  model!: string;

  @ApiProperty({ description: 'contextTokens / budget.' })
  utilization!: number;

  @ApiProperty()
  contextTokens!: number;

  @ApiProperty({ format: 'date-time' })
  lastActivityAt!: string;
}

export class SessionsNearBudget {
  @ApiProperty({ example: 0.8, description: 'Utilization from which a session counts as near its budget.' })
  threshold!: number;

  @ApiProperty({ description: 'Sessions at or above the threshold now.' })
  count!: number;

  @ApiProperty({ type: NearBudgetSessionView, isArray: true, description: 'The fullest 10, fullest first.' })
  sessions!: NearBudgetSessionView[];
}

export class AnalyticsSummary {
  @ApiProperty({ format: 'date-time', description: 'Start of the range (inclusive).' })
  from!: string;

  @ApiProperty({ format: 'date-time', description: 'End of the range (exclusive).' })
  to!: string;

  @ApiProperty({ description: 'tokensBefore − tokensAfter summed over succeeded, non-dry-run compactions of the range.' })
  tokensSaved!: number;

  @ApiProperty({ type: CompactionCounts })
  compactions!: CompactionCounts;

  @ApiProperty({ type: CompressionRatios })
  compressionRatios!: CompressionRatios;

  @ApiProperty({ type: CompactionDay, isArray: true, description: 'Every UTC day of the range, zeros included.' })
  compactionsPerDay!: CompactionDay[];

  @ApiProperty({ type: LlmUsage })
  llm!: LlmUsage;

  @ApiProperty({ type: Failures })
  failures!: Failures;

  @ApiProperty({ type: QueueDepth, description: 'The compaction queue now. It is shared by all tenants: these are how busy the workers are, not data of any tenant.' })
  queueDepth!: QueueDepth;

  @ApiProperty({ type: SessionsNearBudget, description: 'Now, whatever the range.' })
  sessionsNearBudget!: SessionsNearBudget;
}
