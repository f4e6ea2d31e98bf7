import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { UsageView } from './sessions.dto';

export class LeftOutMessage {
  @ApiProperty()
  seq!: number;

  @ApiProperty({ example: 'tool_use without its result yet' })
  reason!: string;
}

export class ContextProtection {
  @ApiPropertyOptional({ nullable: true, type: Number, description: "First seq of the policy's protected latest messages (widened so no tool exchange is split); null when none." })
  latestFromSeq!: number | null;

  @ApiProperty({ type: Number, isArray: true, description: 'Seqs of the user messages whose text the policy keeps verbatim.' })
  userTextSeqs!: number[];
}

export class ContextResponse {
  @ApiProperty()
  sessionId!: string;

  @ApiProperty({ enum: ['anthropic', 'openai', 'responses', 'canonical'] })
  format!: 'anthropic' | 'openai' | 'responses' | 'canonical';

  @ApiPropertyOptional({ description: "Anthropic's top-level system prompt (anthropic format only).", oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }] })
  system?: unknown;

  @ApiProperty({ type: 'array', items: { type: 'object', additionalProperties: true }, description: 'Ready to send as the request\'s `messages` (empty for `responses`: see `input`).' })
  messages!: unknown[];

  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'object', additionalProperties: true },
    description: "`responses` format only: ready to send as an OpenAI Responses request's `input` (items the session got from the Responses API come back as they were sent, opaque ones included).",
  })
  input?: unknown[];

  @ApiProperty({ description: 'Tokens of this context.' })
  tokens!: number;

  @ApiProperty({ type: UsageView })
  usage!: UsageView;

  @ApiPropertyOptional({ nullable: true, type: Number, description: 'The context version in force (null before the first compaction).' })
  contextVersion!: number | null;

  @ApiProperty({ type: 'array', items: { type: 'object' }, description: 'Checkpoints used.' })
  checkpoints!: unknown[];

  @ApiPropertyOptional({ nullable: true, type: String, description: "Set when Guarantee 4's fallback had to apply." })
  fallback!: string | null;

  @ApiProperty({ type: LeftOutMessage, isArray: true, description: 'History messages not sent, and why (they stay in the history).' })
  leftOut!: LeftOutMessage[];

  @ApiPropertyOptional({
    type: Number,
    isArray: true,
    description: "Canonical format only: the history seq of each message, in order (a checkpoint's is its toSeq, the goal block's 0).",
  })
  seqs?: number[];

  @ApiPropertyOptional({ type: ContextProtection, description: "Canonical format only: what the session's policy protects now (besides system prompts and pinned messages)." })
  protection?: ContextProtection;
}
