import { Inject, Injectable } from '@nestjs/common';
import { limitDefaults, TenantLimitsCache, TenantRepository } from '@compactor/persistence';
import { API_CONFIG, ApiConfig } from '../config/api-config';

/**
 * The limits in force for a tenant (its own settings over the operator's `COMPACTOR_LIMIT_*`), for
 * the rate limits; PATCH /v1/tenant drops this process's copy at once (other replicas follow within 10 s).
 */
@Injectable()
export class TenantLimitsService extends TenantLimitsCache {
  constructor(@Inject(API_CONFIG) config: ApiConfig, tenants: TenantRepository) {
    super(tenants, limitDefaults(config));
  }
}
