import { Injectable } from '@nestjs/common';
import { PrismaService } from './prisma.service';

export const DEFAULT_TENANT = 'default';

@Injectable()
export class TenantRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** The tenant of that name, created on first use. */
  async ensure(name: string = DEFAULT_TENANT): Promise<{ id: string; name: string }> {
    return this.prisma.tenant.upsert({ where: { name }, create: { name }, update: {}, select: { id: true, name: true } });
  }
}
