import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { PRESET_NAMES } from '@compactor/compaction';
import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';
import { sessionIdSchema } from '../common/validation';
import { sessionConfigFields } from './session-config';

export class PolicyView {
  @ApiProperty({ enum: PRESET_NAMES })
  preset!: string;

  @ApiProperty({ type: 'object', additionalProperties: true })
  overrides!: Record<string, unknown>;
}

export class UsageView {
  @ApiProperty({ description: 'Tokens of the context as it would be sent now.' })
  contextTokens!: number;

  @ApiProperty({ description: 'window − output reserve − tool schemas − safety margin.' })
  budget!: number;

  @ApiProperty({ description: 'budget − system prompt − goal block − checkpoints.' })
  available!: number;

  @ApiProperty({ description: 'contextTokens / budget.' })
  utilization!: number;

  @ApiProperty({ description: "Token count at which the policy schedules a compaction." })
  threshold!: number;
}

export class ReliabilityFactors {
  @ApiProperty({ description: "From the model's size tier (≥ 70B 0.95 … smaller 0.30)." })
  modelFactor!: number;

  @ApiProperty({ description: 'max(1 − 0.15 × compactions, 0.30).' })
  compressionPenalty!: number;

  @ApiProperty({ description: 'Share of the facts ledger that survived the last compaction (1 before any).' })
  contextConfidence!: number;
}

export class ReliabilityView {
  @ApiProperty({ description: '0–100.' })
  score!: number;

  @ApiProperty({ enum: ['high', 'medium', 'low', 'critical'] })
  level!: string;

  @ApiProperty({ example: '🟢' })
  emoji!: string;

  @ApiProperty({ example: 'High' })
  label!: string;

  @ApiPropertyOptional({ nullable: true, type: String, description: "Seed 004's warning text below 60." })
  warning!: string | null;

  @ApiProperty({ type: ReliabilityFactors })
  factors!: ReliabilityFactors;
}

export class SessionView {
  @ApiProperty({ example: 'agent-run-42' })
  id!: string;

  @ApiProperty({ example: 'claude-sonnet-4-5' })
  model!: string;

  @ApiProperty()
  contextWindow!: number;

  @ApiProperty()
  outputReserve!: number;

  @ApiProperty({ type: PolicyView })
  policy!: PolicyView;

  @ApiProperty({ enum: ['exact', 'approx'], description: "exact: the model's own tokenizer; approx: calibrated estimate." })
  tokenCounting!: 'exact' | 'approx';

  @ApiProperty({ description: 'Messages in the full history (= the last seq).' })
  messageCount!: number;

  @ApiProperty({ description: 'Tokens of the full history.' })
  historyTokens!: number;

  @ApiProperty({ type: UsageView })
  usage!: UsageView;

  @ApiProperty()
  compactions!: number;

  @ApiProperty({ type: ReliabilityView, description: 'Seed 004: model-size factor × compression penalty × context confidence.' })
  reliability!: ReliabilityView;

  @ApiProperty({ format: 'date-time' })
  createdAt!: string;

  @ApiProperty({ format: 'date-time' })
  updatedAt!: string;

  @ApiProperty({ format: 'date-time' })
  lastActivityAt!: string;
}

export class BudgetView {
  @ApiProperty({ description: "The model's context window." })
  window!: number;

  @ApiProperty({ description: "The larger of the session's output reserve and its requests' max_tokens." })
  reserve!: number;

  @ApiProperty({ nullable: true, type: Number, description: 'The max_tokens its requests send (the proxy records it; a REST append may pass maxTokens); null when none was seen.' })
  requestMaxTokens!: number | null;

  @ApiProperty({ description: 'Tokens of the tool schemas its requests send (the proxy records them; a REST append may pass tools).' })
  toolSchemaTokens!: number;

  @ApiProperty({ description: '2% of the window, at least 256: estimates drift.' })
  safetyMargin!: number;

  @ApiProperty({ description: "The upstream's reported prompt tokens over Compactor's estimate of the same requests (1: never reported)." })
  calibration!: number;

  @ApiProperty({ description: 'Window tokens the calibration takes back (negative: gives) from the budget.' })
  calibrationTokens!: number;

  @ApiProperty({ description: 'window − reserve − tool schemas − safety margin − calibration: what the context may hold.' })
  budget!: number;

  @ApiProperty({ nullable: true, type: Number, description: 'A compaction could not bring the context under its trigger: automatic ones wait until the context reaches this many tokens; null: no hold.' })
  compactionHoldTokens!: number | null;
}

export class CompactionHoldView {
  @ApiProperty({ enum: ['llm-outage', 'context-still-over-trigger'], description: "Why automatic compactions are held: 'llm-outage' (a compaction failed on an unreachable summarizer past its retry window; the worker lifts the hold once the summarizer answers again), 'context-still-over-trigger' (a compaction could not bring the context under its trigger)." })
  reason!: 'llm-outage' | 'context-still-over-trigger';

  @ApiProperty({ nullable: true, type: String, format: 'date-time', description: 'When the hold was set.' })
  since!: string | null;

  @ApiProperty({ description: 'Automatic compactions wait until the context reaches this many tokens (or, for llm-outage, until the hold is lifted).' })
  untilTokens!: number;

  @ApiProperty({ description: "llm-outage holds in a row (0 for another reason)." })
  consecutive!: number;
}

export class SessionDetail extends SessionView {
  @ApiProperty({ type: CompactionHoldView, nullable: true, description: 'Why automatic compactions are held, if they are (null: they are not).' })
  compactionHold!: CompactionHoldView | null;

  @ApiProperty({ type: BudgetView, description: 'How the budget is made up (SPEC.md "Budget"): the API, the worker and the proxy use this one.' })
  budget!: BudgetView;

  @ApiProperty({ nullable: true, type: String, description: 'The session this one was forked from (the proxy forks a conversation whose history diverged); null when it is not a fork.' })
  forkedFrom!: string | null;

  @ApiProperty({ type: String, isArray: true, description: "The sessions forked from this one, oldest first." })
  forks!: string[];
}

export class SessionWithWarnings extends SessionView {
  @ApiProperty({ type: String, isArray: true })
  warnings!: string[];
}

export class SessionPage {
  @ApiProperty({ type: SessionView, isArray: true })
  sessions!: SessionView[];

  @ApiPropertyOptional({ nullable: true, type: String, description: 'Pass as `cursor` for the next page; null on the last page.' })
  nextCursor!: string | null;
}

export const createSessionSchema = z.strictObject({
  id: sessionIdSchema.meta({ description: '1-128 characters of [A-Za-z0-9._:-], unique within the tenant.' }),
  model: sessionConfigFields.model.optional().meta({ description: 'Model id; sets the tokenizer, window and reserve from the catalog.' }),
  contextWindow: sessionConfigFields.contextWindow.optional(),
  outputReserve: sessionConfigFields.outputReserve.optional(),
  policy: sessionConfigFields.policy.optional().meta({ description: 'A preset name, or { preset, overrides }.' }),
});

/** The body of POST /v1/sessions: its schema validates it and is its OpenAPI schema. */
export class CreateSessionRequest extends createZodDto(createSessionSchema) {}

export const updateSessionSchema = z
  .strictObject({
    model: sessionConfigFields.model.optional(),
    contextWindow: sessionConfigFields.contextWindow.optional(),
    outputReserve: sessionConfigFields.outputReserve.optional(),
    policy: sessionConfigFields.policy.optional(),
  })
  .refine((v) => Object.keys(v).length > 0, { message: 'must change at least one of model, contextWindow, outputReserve, policy' });

/** The body of PATCH /v1/sessions/:id: its schema validates it and is its OpenAPI schema. */
export class UpdateSessionRequest extends createZodDto(updateSessionSchema) {}

export class DeletedSession {
  @ApiProperty()
  id!: string;

  @ApiProperty({ enum: [true] })
  deleted!: true;
}
