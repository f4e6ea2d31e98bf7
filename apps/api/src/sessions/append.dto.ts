import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';
import { sessionConfigFields } from './session-config';
import { UsageView } from './sessions.dto';

export const MAX_MESSAGES_PER_APPEND = 500;

/** A message, tool schema or system block as the body carries it: checked by the append itself (its format's parser), documented as an object. */
const jsonObject = () => z.unknown().meta({ type: 'object', additionalProperties: true });

export const appendBodySchema = z.strictObject({
  messages: z
    .array(jsonObject())
    .min(1, 'must contain at least 1 message')
    .max(MAX_MESSAGES_PER_APPEND, `must contain at most ${MAX_MESSAGES_PER_APPEND} messages`)
    .meta({ description: '1-500 messages in Anthropic Messages, OpenAI Chat Completions or canonical shape.' }),
  format: z.enum(['anthropic', 'openai', 'canonical']).optional().meta({ description: 'Detected from the messages when absent.' }),
  /** Anthropic's top-level system prompt (OpenAI sends system messages inside `messages`). */
  system: z
    .unknown()
    .optional()
    .meta({ description: "Anthropic's top-level system prompt: a string or text blocks.", oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'object', additionalProperties: true } }] }),
  model: sessionConfigFields.model.optional().meta({ description: 'For a new session: the model id.' }),
  contextWindow: sessionConfigFields.contextWindow.optional().meta({ description: 'For a new session: its context window (default from the model catalog).' }),
  outputReserve: sessionConfigFields.outputReserve.optional().meta({ description: 'For a new session: its output reserve (default from the model catalog).' }),
  policy: sessionConfigFields.policy.optional().meta({ description: 'For a new session: a preset name or { preset, overrides }.' }),
  /** What the session's requests to the model send besides the context (SPEC.md "Budget"): remembered on the session. */
  maxTokens: z
    .number()
    .int('must be an integer')
    .min(1, 'must be at least 1')
    .max(10_000_000)
    .optional()
    .meta({
      description:
        "The max_tokens your requests to the model send: the budget reserves the larger of it and the session's output reserve. Remembered on the session until another append or proxied request says otherwise.",
    }),
  tools: z
    .array(jsonObject())
    .max(10_000, 'must contain at most 10000 tools')
    .optional()
    .meta({ description: 'The tool schemas your requests send: their tokens come off the budget. Remembered on the session; [] clears them.' }),
});

export type AppendBody = z.infer<typeof appendBodySchema>;

export const idempotencyKeySchema = z.string().min(1).max(255, 'must be at most 255 characters');

/** The body of POST /v1/sessions/:id/messages: its schema validates it and is its OpenAPI schema. */
export class AppendMessagesRequest extends createZodDto(appendBodySchema) {}

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
