import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { z } from 'zod';
import { SCOPES } from '../auth/scopes';

export const createKeySchema = z.strictObject({
  name: z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters'),
  scopes: z.array(z.enum(SCOPES as [string, ...string[]])).min(1, 'must name at least one scope').max(3),
});

export class CreateApiKeyRequest {
  @ApiProperty({ example: 'ingest from agent-fleet' })
  name!: string;

  @ApiProperty({ enum: SCOPES, isArray: true, example: ['ingest'] })
  scopes!: string[];
}

export class ApiKeyView {
  @ApiProperty({ format: 'uuid' })
  id!: string;

  @ApiProperty()
  name!: string;

  @ApiProperty({ description: 'The first characters of the key, to tell keys apart.', example: 'ck_4Fq9zL2' })
  prefix!: string;

  @ApiProperty({ enum: SCOPES, isArray: true })
  scopes!: string[];

  @ApiProperty({ format: 'date-time' })
  createdAt!: string;

  @ApiPropertyOptional({ format: 'date-time', nullable: true, type: String })
  revokedAt!: string | null;

  @ApiPropertyOptional({ format: 'date-time', nullable: true, type: String, description: 'When the key last authenticated a request (refreshed at most once a minute).' })
  lastUsedAt!: string | null;
}

export class CreatedApiKey extends ApiKeyView {
  @ApiProperty({ description: 'The key itself. Shown only in this response; store it now.', example: 'ck_…' })
  key!: string;
}

export class ApiKeyList {
  @ApiProperty({ type: ApiKeyView, isArray: true })
  keys!: ApiKeyView[];
}
