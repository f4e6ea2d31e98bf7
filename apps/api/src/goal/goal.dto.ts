import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';
import { EMPTY_BODY_IS_EMPTY_OBJECT } from '../common/zod-body';

const text = (max: number) => z.string().trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);

export const goalSchema = z.strictObject({
  goal: text(2000).optional(),
  priority: z.enum(['high', 'medium', 'low']).optional(),
  status: z.enum(['active', 'paused', 'completed']).optional(),
  checkpoints: z
    .array(z.strictObject({ text: text(500), status: z.enum(['completed', 'in-progress', 'pending']) }).meta({ id: 'GoalCheckpointRequest' }))
    .max(100)
    .default([]),
  decisions: z
    .array(z.strictObject({ text: text(500), locked: z.boolean().default(false).meta({ description: 'A locked decision is never compressed; only a goal update unlocks it.' }) }).meta({ id: 'GoalDecisionRequest' }))
    .max(100)
    .default([]),
  artifacts: z
    .array(
      z.strictObject({
        text: text(500).meta({ example: 'Created src/auth/login.ts' }),
        action: z.enum(['created', 'modified', 'deleted']).optional(),
        path: text(500).optional(),
      }).meta({ id: 'GoalArtifactRequest' }),
    )
    .max(200)
    .default([]),
  constraints: z.array(text(500)).max(50).optional().meta({ description: 'User constraints, part of the goal block.' }),
  nextStep: text(1000).optional(),
});

/** The body of PUT /v1/sessions/:id/goal (may be left out: an empty goal record); its schema validates it and is its OpenAPI schema. */
export class GoalRequest extends createZodDto(goalSchema) {
  static readonly [EMPTY_BODY_IS_EMPTY_OBJECT] = true;
}

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

/** The goal record's fields as the API returns them. */
class GoalFields {
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

export class GoalView extends GoalFields {
  @ApiProperty()
  sessionId!: string;

  @ApiPropertyOptional({ type: GoalBlockView, nullable: true, description: 'The goal block in the current context (null when there is none yet).' })
  goalBlock!: GoalBlockView | null;
}
