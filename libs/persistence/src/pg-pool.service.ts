import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { Pool } from 'pg';

/** How long a request waits for a connection before it fails (and answers 503): never forever while PostgreSQL is away. */
export const PG_CONNECTION_TIMEOUT_MS = 5000;

/**
 * A `pg` pool that survives PostgreSQL restarts, failovers and `pg_terminate_backend`: a
 * connection that dies emits 'error' on its client (idle or checked out), and an 'error'
 * event without a listener crashes the process. Every client gets a listener as soon as it
 * connects; the pool drops the dead client and the next query opens a new connection.
 */
export function createPgPool(databaseUrl: string, max = 10): Pool {
  const logger = new Logger('PgPool');
  const pool = new Pool({ connectionString: databaseUrl, max, connectionTimeoutMillis: PG_CONNECTION_TIMEOUT_MS });
  const onError = (error: Error) => logger.warn(`PostgreSQL connection lost: ${error.message}`);
  pool.on('error', onError);
  pool.on('connect', (client) => client.on('error', onError));
  return pool;
}

/**
 * A plain `pg` pool beside Prisma, for the two hot paths where Prisma's per-row result
 * mapping costs more than the query (reading a context's messages, measured in
 * docs/benchmarks.md). Repositories are its only users.
 */
@Injectable()
export class PgPoolService implements OnModuleDestroy {
  readonly pool: Pool;

  constructor(databaseUrl: string) {
    this.pool = createPgPool(databaseUrl);
  }

  async onModuleDestroy(): Promise<void> {
    await this.pool.end();
  }
}
