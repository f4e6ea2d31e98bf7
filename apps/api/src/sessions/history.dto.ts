import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class HistoryMessage {
  @ApiProperty()
  seq!: number;

  @ApiProperty({ enum: ['system', 'user', 'assistant', 'tool'] })
  role!: string;

  @ApiProperty({ enum: ['anthropic', 'openai', 'canonical'], description: 'The shape it arrived in.' })
  format!: string;

  @ApiProperty({ type: 'object', additionalProperties: true, description: 'The message exactly as appended.' })
  message!: unknown;

  @ApiProperty({ type: 'array', items: { type: 'object' }, description: 'Canonical blocks.' })
  blocks!: unknown[];

  @ApiProperty()
  tokens!: number;

  @ApiProperty()
  pinned!: boolean;

  @ApiProperty({ type: String, isArray: true })
  tags!: string[];

  @ApiProperty({ format: 'date-time' })
  createdAt!: string;
}

export class HistoryPage {
  @ApiProperty()
  sessionId!: string;

  @ApiProperty({ type: HistoryMessage, isArray: true })
  messages!: HistoryMessage[];

  @ApiPropertyOptional({ nullable: true, type: Number, description: 'Pass as `after` for the next page; null on the last page.' })
  nextAfter!: number | null;
}
