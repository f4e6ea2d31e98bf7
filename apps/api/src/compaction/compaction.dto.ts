import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class CompactRequest {
  @ApiPropertyOptional({ description: 'Return the would-be context and its savings without applying it.', default: false })
  dryRun?: boolean;

  @ApiPropertyOptional({ enum: ['anthropic', 'openai', 'canonical'], default: 'anthropic', description: 'Shape of the would-be context of a dry run.' })
  format?: 'anthropic' | 'openai' | 'canonical';
}

export class JobView {
  @ApiProperty({ format: 'uuid' })
  id!: string;

  @ApiProperty({ example: 'agent-run-42' })
  sessionId!: string;

  @ApiProperty({ enum: ['threshold', 'manual', 'watermark', 'ingest'] })
  trigger!: string;

  @ApiProperty({ enum: ['queued', 'running', 'succeeded', 'skipped', 'failed'] })
  status!: string;

  @ApiProperty()
  dryRun!: boolean;

  @ApiPropertyOptional({ nullable: true, type: String, example: 'history-too-short' })
  reason!: string | null;

  @ApiProperty({ type: [String], example: ['mask', 'summarize'] })
  steps!: string[];

  @ApiPropertyOptional({ nullable: true, type: Number })
  tokensBefore!: number | null;

  @ApiPropertyOptional({ nullable: true, type: Number })
  tokensAfter!: number | null;

  @ApiProperty({ description: 'LLM calls made, retries included.' })
  llmCalls!: number;

  @ApiProperty()
  llmInputTokens!: number;

  @ApiProperty()
  llmOutputTokens!: number;

  @ApiProperty({ description: 'USD, from the model catalog prices.' })
  llmCostUsd!: number;

  @ApiPropertyOptional({ nullable: true, type: Number })
  durationMs!: number | null;

  @ApiPropertyOptional({ nullable: true, type: String })
  error!: string | null;

  @ApiPropertyOptional({ nullable: true, type: Number, description: 'The context version the job produced.' })
  resultVersion!: number | null;

  @ApiProperty()
  createdAt!: string;

  @ApiPropertyOptional({ nullable: true, type: String })
  startedAt!: string | null;

  @ApiPropertyOptional({ nullable: true, type: String })
  finishedAt!: string | null;
}

export class CompactResponse {
  @ApiProperty({ type: JobView })
  job!: JobView;

  @ApiPropertyOptional({ description: 'Dry run: tokens the compaction would save.' })
  savedTokens?: number;

  @ApiPropertyOptional({
    description:
      'Dry run: what the compaction would do with the facts ledger (docs/compaction.md). `listed`, `kept`, `repaired`, `dropped`: entries of the span it would summarize, those its summary holds, those appended to the checkpoint\'s Facts section, those left out for room (with `keptEntries`, `repairedEntries`, `droppedEntries`: `{ kind, text, seq }`, at most 40 each). `check`: `{ total, survived, missing }`, the entries of everything it compacts that the would-be context no longer holds (the facts it would drop).',
    type: 'object',
    additionalProperties: true,
  })
  ledger?: Record<string, unknown>;

  @ApiPropertyOptional({ description: 'Dry run: the would-be context, in the requested format (same shape as GET context).', type: 'object', additionalProperties: true })
  context?: Record<string, unknown>;
}

export class WatermarkRequest {
  @ApiPropertyOptional({ description: 'The seq the watermark moves to (default: the latest message). It only advances.' })
  seq?: number;
}

export class WatermarkResponse {
  @ApiProperty()
  advanced!: boolean;

  @ApiPropertyOptional({ nullable: true, type: String, enum: ['invalid-seq', 'not-after-current'] })
  reason!: string | null;

  @ApiPropertyOptional({ nullable: true, type: Number })
  watermarkSeq!: number | null;

  @ApiPropertyOptional({ nullable: true, type: String, description: 'The compaction it scheduled (trigger `watermark`).' })
  jobId!: string | null;
}
