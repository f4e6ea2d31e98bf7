import { PRESET_NAMES } from '@compactor/compaction';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { z } from 'zod';
import { sessionConfigFields } from './session-config';
import { UsageView } from './sessions.dto';

export const MAX_MESSAGES_PER_APPEND = 500;

export const appendBodySchema = z.strictObject({
  messages: z
    .array(z.unknown())
    .min(1, 'must contain at least 1 message')
    .max(MAX_MESSAGES_PER_APPEND, `must contain at most ${MAX_MESSAGES_PER_APPEND} messages`),
  format: z.enum(['anthropic', 'openai', 'canonical']).optional(),
  /** Anthropic's top-level system prompt (OpenAI sends system messages inside `messages`). */
  system: z.unknown().optional(),
  model: sessionConfigFields.model.optional(),
  contextWindow: sessionConfigFields.contextWindow.optional(),
  outputReserve: sessionConfigFields.outputReserve.optional(),
  policy: sessionConfigFields.policy.optional(),
  /** What the session's requests to the model send besides the context (SPEC.md "Budget"): remembered on the session. */
  maxTokens: z.number().int('must be an integer').min(1, 'must be at least 1').max(10_000_000).optional(),
  tools: z.array(z.unknown()).max(10_000, 'must contain at most 10000 tools').optional(),
});

export type AppendBody = z.infer<typeof appendBodySchema>;

export const idempotencyKeySchema = z.string().min(1).max(255, 'must be at most 255 characters');

export class AppendMessagesRequest {
  @ApiProperty({
    type: 'array',
    items: { type: 'object', additionalProperties: true },
    description: '1-500 messages in Anthropic Messages, OpenAI Chat Completions or canonical shape.',
  })
  messages!: unknown[];

  @ApiPropertyOptional({ enum: ['anthropic', 'openai', 'canonical'], description: 'Detected from the messages when absent.' })
  format?: string;

  @ApiPropertyOptional({
    description: "Anthropic's top-level system prompt: a string or text blocks.",
    oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'object', additionalProperties: true } }],
  })
  system?: unknown;

  @ApiPropertyOptional({ description: 'For a new session: the model id.' })
  model?: string;

  @ApiPropertyOptional({ description: 'For a new session: its context window (default from the model catalog).' })
  contextWindow?: number;

  @ApiPropertyOptional({ description: 'For a new session: its output reserve (default from the model catalog).' })
  outputReserve?: number;

  @ApiPropertyOptional({ description: 'For a new session: a preset name or { preset, overrides }.', oneOf: [{ type: 'string', enum: [...PRESET_NAMES] }, { $ref: '#/components/schemas/PolicyView' }] })
  policy?: unknown;

  @ApiPropertyOptional({
    description:
      "The max_tokens your requests to the model send: the budget reserves the larger of it and the session's output reserve. Remembered on the session until another append or proxied request says otherwise.",
  })
  maxTokens?: number;

  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'object', additionalProperties: true },
    description: 'The tool schemas your requests send: their tokens come off the budget. Remembered on the session; [] clears them.',
  })
  tools?: unknown[];
}

export class CompactionSchedule {
  @ApiProperty()
  scheduled!: boolean;

  @ApiPropertyOptional()
  jobId?: string;

  @ApiPropertyOptional({ example: 'below-threshold' })
  reason?: string;
}

export class AppendMessagesResponse {
  @ApiProperty()
  sessionId!: string;

  @ApiProperty()
  firstSeq!: number;

  @ApiProperty()
  lastSeq!: number;

  @ApiProperty({ type: UsageView })
  usage!: UsageView;

  @ApiProperty({ type: CompactionSchedule })
  compaction!: CompactionSchedule;

  @ApiPropertyOptional({ type: String, isArray: true })
  warnings?: string[];
}
