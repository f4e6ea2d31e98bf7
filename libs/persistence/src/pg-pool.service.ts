import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { Pool } from 'pg';

/**
 * A plain `pg` pool beside Prisma, for the two hot paths where Prisma's per-row result
 * mapping costs more than the query (reading a context's messages, measured in
 * docs/benchmarks.md). Repositories are its only users.
 */
@Injectable()
export class PgPoolService implements OnModuleDestroy {
  readonly pool: Pool;

  constructor(databaseUrl: string) {
    this.pool = new Pool({ connectionString: databaseUrl, max: 10 });
  }

  async onModuleDestroy(): Promise<void> {
    await this.pool.end();
  }
}
