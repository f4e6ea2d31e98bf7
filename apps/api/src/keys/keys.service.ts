import { Injectable } from '@nestjs/common';
import { ApiKeyNotFound } from '../errors/http-errors';
import { ApiKeyRecord, ApiKeyRepository, ApiKeyScope } from '@compactor/persistence';
import { ApiKeyLookups } from '../auth/api-key-lookups';
import { generateApiKey, hashApiKey, keyPrefix } from '../auth/api-key-secret';
import { ApiKeyView, CreatedApiKey } from './keys.dto';

export function toKeyView(key: ApiKeyRecord): ApiKeyView {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    scopes: key.scopes,
    createdAt: key.createdAt.toISOString(),
    revokedAt: key.revokedAt?.toISOString() ?? null,
    expiresAt: key.expiresAt?.toISOString() ?? null,
    lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
  };
}

@Injectable()
export class KeysService {
  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly lookups: ApiKeyLookups,
  ) {}

  async create(tenantId: string, name: string, scopes: ApiKeyScope[], expiresAt: Date | null = null): Promise<CreatedApiKey> {
    const key = generateApiKey();
    const record = await this.keys.create({ tenantId, name, prefix: keyPrefix(key), hash: hashApiKey(key), scopes, expiresAt });
    return { ...toKeyView(record), key };
  }

  async list(tenantId: string): Promise<ApiKeyView[]> {
    return (await this.keys.list(tenantId)).map(toKeyView);
  }

  async revoke(tenantId: string, id: string): Promise<ApiKeyView> {
    const revoked = /^[0-9a-f-]{36}$/i.test(id) ? await this.keys.revoke(tenantId, id) : null;
    if (!revoked) throw new ApiKeyNotFound(id);
    // Refused from now on by this process; other API processes stop using what they remember within API_KEY_CACHE_MS.
    this.lookups.forgetAll();
    return toKeyView(revoked);
  }
}
