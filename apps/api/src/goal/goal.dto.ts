import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

class GoalCheckpointDto {
  @ApiProperty()
  text!: string;

  @ApiProperty({ enum: ['completed', 'in-progress', 'pending'] })
  status!: 'completed' | 'in-progress' | 'pending';
}

class GoalDecisionDto {
  @ApiProperty()
  text!: string;

  @ApiProperty({ description: 'A locked decision is never compressed; only a goal update unlocks it.' })
  locked!: boolean;
}

class GoalArtifactDto {
  @ApiProperty({ example: 'Created src/auth/login.ts' })
  text!: string;

  @ApiPropertyOptional({ enum: ['created', 'modified', 'deleted'] })
  action?: 'created' | 'modified' | 'deleted';

  @ApiPropertyOptional()
  path?: string;
}

export class GoalRequest {
  @ApiPropertyOptional({ maxLength: 2000 })
  goal?: string;

  @ApiPropertyOptional({ enum: ['high', 'medium', 'low'] })
  priority?: 'high' | 'medium' | 'low';

  @ApiPropertyOptional({ enum: ['active', 'paused', 'completed'] })
  status?: 'active' | 'paused' | 'completed';

  @ApiPropertyOptional({ type: [GoalCheckpointDto] })
  checkpoints?: GoalCheckpointDto[];

  @ApiPropertyOptional({ type: [GoalDecisionDto] })
  decisions?: GoalDecisionDto[];

  @ApiPropertyOptional({ type: [GoalArtifactDto] })
  artifacts?: GoalArtifactDto[];

  @ApiPropertyOptional({ type: [String], description: 'User constraints, part of the goal block.' })
  constraints?: string[];

  @ApiPropertyOptional()
  nextStep?: string;
}

class GoalBlockView {
  @ApiProperty()
  text!: string;

  @ApiProperty()
  tokens!: number;

  @ApiProperty({ description: 'The context version the block is frozen in.' })
  version!: number;
}

export class GoalView extends GoalRequest {
  @ApiProperty()
  sessionId!: string;

  @ApiPropertyOptional({ type: GoalBlockView, nullable: true, description: 'The goal block in the current context (null when there is none yet).' })
  goalBlock!: GoalBlockView | null;
}
