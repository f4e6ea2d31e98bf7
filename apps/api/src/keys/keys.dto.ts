import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';
import { SCOPES } from '../auth/scopes';

/** The longest a key may be created for (ten years); a key without an expiry never expires. */
export const MAX_KEY_LIFETIME_DAYS = 3650;
const DAY_MS = 24 * 3600 * 1000;

export const createKeySchema = z
  .strictObject({
    name: z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters').meta({ example: 'ingest from agent-fleet' }),
    scopes: z
      .array(z.enum(SCOPES as [string, ...string[]]))
      .min(1, 'must name at least one scope')
      .max(3)
      .meta({ example: ['ingest'] }),
    expiresInDays: z
      .number('must be a number of days')
      .int('must be a whole number of days')
      .min(1, 'must be at least 1')
      .max(MAX_KEY_LIFETIME_DAYS, `must be at most ${MAX_KEY_LIFETIME_DAYS}`)
      .optional()
      .meta({
        example: 90,
        description: 'The key expires this many days after it is created. Leave this and `expiresAt` out for a key that never expires.',
      }),
    expiresAt: z.iso
      .datetime({ offset: true, message: 'must be an ISO 8601 date-time such as 2027-01-31T00:00:00Z' })
      .nullable()
      .optional()
      .meta({ description: `When the key expires: in the future, at most ${MAX_KEY_LIFETIME_DAYS} days ahead. Give this or \`expiresInDays\`, not both.` }),
  })
  .superRefine((input, ctx) => {
    if (input.expiresInDays !== undefined && input.expiresAt !== undefined && input.expiresAt !== null) {
      ctx.addIssue({ code: 'custom', path: ['expiresAt'], message: 'give expiresAt or expiresInDays, not both' });
    }
    if (typeof input.expiresAt === 'string') {
      const at = Date.parse(input.expiresAt);
      if (at <= Date.now()) ctx.addIssue({ code: 'custom', path: ['expiresAt'], message: 'must be in the future' });
      else if (at > Date.now() + MAX_KEY_LIFETIME_DAYS * DAY_MS) ctx.addIssue({ code: 'custom', path: ['expiresAt'], message: `must be at most ${MAX_KEY_LIFETIME_DAYS} days from now` });
    }
  });

export type CreateKeyInput = z.infer<typeof createKeySchema>;

/** When a key created at `now` with that input expires; null: never. */
export function keyExpiry(input: Pick<CreateKeyInput, 'expiresInDays' | 'expiresAt'>, now: Date): Date | null {
  if (input.expiresInDays !== undefined) return new Date(now.getTime() + input.expiresInDays * DAY_MS);
  return typeof input.expiresAt === 'string' ? new Date(input.expiresAt) : null;
}

/** The body of POST /v1/keys: its schema validates the body and is its OpenAPI schema. */
export class CreateApiKeyRequest extends createZodDto(createKeySchema) {}

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

  @ApiPropertyOptional({
    format: 'date-time',
    nullable: true,
    type: String,
    description: 'From this instant the key is refused (401 saying it expired) like a revoked one; null: it never expires.',
  })
  expiresAt!: string | null;

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
