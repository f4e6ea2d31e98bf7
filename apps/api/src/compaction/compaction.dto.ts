import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';
import { EMPTY_BODY_IS_EMPTY_OBJECT } from '../common/zod-body';

export const compactSchema = z.strictObject({
  dryRun: z.boolean().default(false).meta({ description: 'Return the would-be context and its savings without applying it.' }),
  format: z.enum(['anthropic', 'openai', 'canonical']).default('anthropic').meta({ description: 'Shape of the would-be context of a dry run.' }),
});

/** The body of POST /v1/sessions/:id/compact (may be left out); its schema validates it and is its OpenAPI schema. */
export class CompactRequest extends createZodDto(compactSchema) {
  static readonly [EMPTY_BODY_IS_EMPTY_OBJECT] = true;
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

  @ApiPropertyOptional({
    nullable: true,
    type: String,
    format: 'uuid',
    description:
      'The job this trigger was folded into (`skipped`, reason `superseded-by:<id>`): that run covers its messages. To wait for the compaction, wait for that job.',
  })
  supersededBy!: string | null;

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

const LEDGER_KINDS = ['constraint', 'decision', 'task', 'error', 'test', 'path', 'url', 'setting', 'version', 'identifier', 'command'];

export class LedgerEntryView {
  @ApiProperty({ enum: LEDGER_KINDS })
  kind!: string;

  @ApiProperty({ description: 'The entry as a Facts section writes it (settings with their latest value and `was`, paths with their last operation, …).' })
  text!: string;

  @ApiProperty({ description: 'The seq of its latest mention.' })
  seq!: number;
}

export class LedgerCheckView {
  @ApiProperty({ description: 'Entries of everything the compaction would compact (the highest 300 by weight).' })
  total!: number;

  @ApiProperty({ description: 'Those the would-be context still holds.' })
  survived!: number;

  @ApiProperty({ type: [LedgerEntryView], description: 'The facts the would-be context would no longer hold (at most 60).' })
  missing!: LedgerEntryView[];
}

export class DryRunLedgerView {
  @ApiPropertyOptional({ description: 'Entries of the span its checkpoint would summarize (absent when it would summarize nothing).' })
  listed?: number;

  @ApiPropertyOptional({ description: 'Of those, the ones its summary (or the rest of the context) holds.' })
  kept?: number;

  @ApiPropertyOptional({ description: "Appended to the checkpoint's Facts section: the summary lacked them." })
  repaired?: number;

  @ApiPropertyOptional({ description: 'Left out for lack of room in the ledger share of the budget.' })
  dropped?: number;

  @ApiPropertyOptional({ type: [LedgerEntryView], description: 'At most 40.' })
  keptEntries?: LedgerEntryView[];

  @ApiPropertyOptional({ type: [LedgerEntryView], description: 'At most 40.' })
  repairedEntries?: LedgerEntryView[];

  @ApiPropertyOptional({ type: [LedgerEntryView], description: 'At most 40.' })
  droppedEntries?: LedgerEntryView[];

  @ApiProperty({ type: LedgerCheckView })
  check!: LedgerCheckView;
}

export class CompactResponse {
  @ApiProperty({ type: JobView })
  job!: JobView;

  @ApiPropertyOptional({ description: 'Dry run: tokens the compaction would save.' })
  savedTokens?: number;

  @ApiPropertyOptional({ type: () => DryRunLedgerView, description: 'Dry run: what the compaction would do with the facts ledger (docs/compaction.md).' })
  ledger?: DryRunLedgerView;

  @ApiPropertyOptional({ description: 'Dry run: the would-be context, in the requested format (same shape as GET context).', type: 'object', additionalProperties: true })
  context?: Record<string, unknown>;
}

export const watermarkSchema = z.strictObject({
  seq: z.number().int('must be an integer').min(1).optional().meta({ description: 'The seq the watermark moves to (default: the latest message). It only advances.' }),
});

/** The body of POST /v1/sessions/:id/watermarks (may be left out); its schema validates it and is its OpenAPI schema. */
export class WatermarkRequest extends createZodDto(watermarkSchema) {
  static readonly [EMPTY_BODY_IS_EMPTY_OBJECT] = true;
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
