import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { ApiKeyRepository, TenantRepository } from '@compactor/persistence';
import { API_CONFIG, ApiConfig } from '../config/api-config';
import { hashApiKey, keyPrefix } from './api-key-secret';

export const INIT_KEY_NAME = 'init';

/**
 * Headless initialization (SPEC.md "Setup and operation"): with COMPACTOR_INIT_API_KEY set,
 * the default tenant has exactly that key, stored hashed, with every scope.
 */
@Injectable()
export class InitKeyBootstrap implements OnApplicationBootstrap {
  constructor(
    @Inject(API_CONFIG) private readonly config: ApiConfig,
    private readonly tenants: TenantRepository,
    private readonly keys: ApiKeyRepository,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const key = this.config.COMPACTOR_INIT_API_KEY;
    if (!key) return;
    const tenant = await this.tenants.ensure();
    await this.keys.ensureExactly({
      tenantId: tenant.id,
      name: INIT_KEY_NAME,
      prefix: keyPrefix(key),
      hash: hashApiKey(key),
      scopes: ['ingest', 'read', 'admin'],
    });
  }
}
