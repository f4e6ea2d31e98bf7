import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';
import { EMPTY_BODY_IS_EMPTY_OBJECT } from '../common/zod-body';

export const createSnapshotSchema = z.strictObject({
  label: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters').optional().meta({ example: 'before the refactor' }),
});

/** The body of POST /v1/sessions/:id/snapshots (may be left out); its schema validates it and is its OpenAPI schema. */
export class CreateSnapshotRequest extends createZodDto(createSnapshotSchema) {
  static readonly [EMPTY_BODY_IS_EMPTY_OBJECT] = true;
}

export class SnapshotView {
  @ApiProperty({ format: 'uuid' })
  id!: string;

  @ApiProperty({ enum: ['pre-compaction', 'threshold', 'manual'] })
  kind!: string;

  @ApiPropertyOptional({ nullable: true, type: String })
  label!: string | null;

  @ApiProperty({ description: 'The context version it pins (0 = the uncompacted history).' })
  version!: number;

  @ApiPropertyOptional({ nullable: true, type: String, description: 'The compaction it was taken before (pre-compaction snapshots).' })
  compactionJobId!: string | null;

  @ApiProperty({ type: 'object', additionalProperties: true, description: 'lastSeq, contextTokens, utilization and compactions at the time.' })
  metadata!: Record<string, unknown>;

  @ApiProperty({ format: 'date-time' })
  createdAt!: string;
}

export class SnapshotList {
  @ApiProperty({ type: [SnapshotView] })
  snapshots!: SnapshotView[];

  @ApiPropertyOptional({ nullable: true, type: String, description: 'Pass as `before` for the next (older) page.' })
  nextCursor!: string | null;
}

export class RestoreResponse {
  @ApiProperty({ format: 'uuid' })
  snapshotId!: string;

  @ApiProperty({ description: 'The version the snapshot pinned.' })
  restoredVersion!: number;

  @ApiProperty({ description: 'The new head version, equal to the restored one.' })
  version!: number;

  @ApiProperty()
  contextTokens!: number;
}

class DiffEntry {
  @ApiProperty()
  seq!: number;

  @ApiPropertyOptional({ nullable: true, type: String, description: "The message's treatment in version a (null: verbatim)." })
  was!: string | null;
}

class SummarizedEntry extends DiffEntry {
  @ApiProperty()
  checkpointId!: string;
}

class OffloadedEntry extends DiffEntry {
  @ApiProperty({ type: [String] })
  artifactIds!: string[];
}

class DiffMessages {
  @ApiProperty({ type: [DiffEntry] })
  masked!: DiffEntry[];

  @ApiProperty({ type: [OffloadedEntry] })
  offloaded!: OffloadedEntry[];

  @ApiProperty({ type: [SummarizedEntry] })
  summarized!: SummarizedEntry[];

  @ApiProperty({ type: [DiffEntry] })
  compressed!: DiffEntry[];

  @ApiProperty({ type: [DiffEntry] })
  dropped!: DiffEntry[];

  @ApiProperty({ type: [DiffEntry], description: 'Treated in a, verbatim in b.' })
  restored!: { seq: number; was: string }[];
}

class DiffCheckpoint {
  @ApiProperty()
  id!: string;

  @ApiProperty()
  fromSeq!: number;

  @ApiProperty()
  toSeq!: number;

  @ApiProperty()
  level!: number;

  @ApiProperty()
  tokens!: number;
}

class DiffCheckpoints {
  @ApiProperty({ type: [DiffCheckpoint] })
  added!: DiffCheckpoint[];

  @ApiProperty({ type: [DiffCheckpoint] })
  removed!: DiffCheckpoint[];
}

class Pair {
  @ApiPropertyOptional({ nullable: true, type: Number })
  a!: number | null;

  @ApiPropertyOptional({ nullable: true, type: Number })
  b!: number | null;
}

export class VersionDiff {
  @ApiProperty()
  sessionId!: string;

  @ApiProperty()
  a!: number;

  @ApiProperty()
  b!: number;

  @ApiProperty({ type: Pair })
  coversThroughSeq!: { a: number; b: number };

  @ApiProperty({ type: Pair })
  watermarkSeq!: { a: number | null; b: number | null };

  @ApiProperty()
  goalBlockChanged!: boolean;

  @ApiProperty({ type: DiffMessages })
  messages!: DiffMessages;

  @ApiProperty({ type: DiffCheckpoints })
  checkpoints!: DiffCheckpoints;
}

export class CheckpointView {
  @ApiProperty({ example: 'ckpt_1f0c…', description: 'Content hash, as named in the context.' })
  id!: string;

  @ApiProperty()
  fromSeq!: number;

  @ApiProperty()
  toSeq!: number;

  @ApiProperty({ enum: ['recent', 'old', 'ancient', 'ultra'] })
  level!: string;

  @ApiProperty({ description: 'The summary (aging shortens it).' })
  text!: string;

  @ApiProperty({ nullable: true, type: String, description: 'The Facts section: facts-ledger entries of its span that the summary lacked, appended verbatim (aging keeps it).' })
  facts!: string | null;

  @ApiProperty()
  tokens!: number;

  @ApiProperty({ description: 'Tokens of the messages it replaced.' })
  originalTokens!: number;

  @ApiPropertyOptional({ nullable: true, type: String, description: 'The checkpoint this one was aged or merged from.' })
  agedFrom!: string | null;

  @ApiProperty({ description: 'Whether the current context uses it.' })
  inContext!: boolean;

  @ApiProperty({ type: [String] })
  keyDecisions!: string[];

  @ApiProperty({ type: [String] })
  filesModified!: string[];

  @ApiProperty({ type: [String] })
  nextSteps!: string[];

  @ApiPropertyOptional({ nullable: true, type: Number, description: 'Share of the facts ledger of its span found in the context it was written into.' })
  factsSurvived!: number | null;

  @ApiProperty({ format: 'date-time' })
  createdAt!: string;
}

export class CheckpointList {
  @ApiProperty()
  sessionId!: string;

  @ApiProperty({ type: [CheckpointView] })
  checkpoints!: CheckpointView[];
}
