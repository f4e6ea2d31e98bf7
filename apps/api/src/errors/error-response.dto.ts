import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class ErrorBody {
  @ApiProperty({ example: 'validation_failed', description: 'Stable machine-readable code.' })
  code!: string;

  @ApiProperty({ example: 'messages[0].role: must be one of user, assistant, tool' })
  message!: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true })
  details?: Record<string, unknown>;
}

/** Every error the API returns has this shape. */
export class ErrorResponse {
  @ApiProperty({ type: ErrorBody })
  error!: ErrorBody;
}
