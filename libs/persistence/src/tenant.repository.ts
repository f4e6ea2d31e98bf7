import { Injectable } from '@nestjs/common';
import { PrismaService } from './prisma.service';

export const DEFAULT_TENANT = 'default';

@Injectable()
export class TenantRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** The tenant's settings JSON (per-tenant proxy upstreams, …); null when the tenant is gone. */
  async settings(id: string): Promise<unknown> {
    const tenant = await this.prisma.tenant.findUnique({ where: { id }, select: { settings: true } });
    return tenant?.settings ?? null;
  }

  /** The tenant of that name, created on first use. */
  async ensure(name: string = DEFAULT_TENANT): Promise<{ id: string; name: string }> {
    return this.prisma.tenant.upsert({ where: { name }, create: { name }, update: {}, select: { id: true, name: true } });
  }
}
