import { Injectable } from '@nestjs/common';
import { PrismaService } from './prisma.service';

@Injectable()
export class IdempotencyRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** Forgets idempotency keys older than the cutoff; returns how many were removed. */
  async deleteOlderThan(cutoff: Date): Promise<number> {
    const { count } = await this.prisma.idempotencyRecord.deleteMany({ where: { createdAt: { lt: cutoff } } });
    return count;
  }
}
