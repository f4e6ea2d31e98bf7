import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class LivenessResponse {
  @ApiProperty({ enum: ['ok'] })
  status!: 'ok';
}

export class DependencyCheck {
  @ApiProperty({ enum: ['up', 'down'] })
  status!: 'up' | 'down';

  @ApiPropertyOptional({ description: 'Round-trip time of the check, when it succeeded.' })
  latencyMs?: number;

  @ApiPropertyOptional({ description: 'Why the check failed (no credentials).' })
  error?: string;
}

export class DependencyChecks {
  @ApiProperty({ type: DependencyCheck })
  postgres!: DependencyCheck;

  @ApiProperty({ type: DependencyCheck })
  redis!: DependencyCheck;
}

export class ReadinessResponse {
  @ApiProperty({ enum: ['ready'] })
  status!: 'ready';

  @ApiProperty({ type: DependencyChecks })
  checks!: DependencyChecks;
}
