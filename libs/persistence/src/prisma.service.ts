import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import type { Pool } from 'pg';
import { PrismaClient } from './generated/prisma/client';
import { createPgPool } from './pg-pool.service';

export const DATABASE_URL = Symbol('DATABASE_URL');

/** The Prisma client on the pg driver adapter; repositories are its only users. */
@Injectable()
export class PrismaService extends PrismaClient implements OnModuleDestroy {
  // Our own pool, so a connection that dies between two statements of a transaction never crashes the process.
  private readonly pool: Pool;

  constructor(databaseUrl: string) {
    const pool = createPgPool(databaseUrl);
    super({ adapter: new PrismaPg(pool) });
    this.pool = pool;
  }

  async onModuleDestroy(): Promise<void> {
    await this.$disconnect();
    await this.pool.end().catch(() => undefined);
  }
}
