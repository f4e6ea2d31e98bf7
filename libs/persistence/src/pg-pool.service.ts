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
export function createPgPool(databaseUrl: string, max = 10, connectionTimeoutMillis = PG_CONNECTION_TIMEOUT_MS, applicationName?: string): Pool {
  const logger = new Logger('PgPool');
  const pool = new Pool({ connectionString: databaseUrl, max, connectionTimeoutMillis, ...(applicationName ? { application_name: applicationName } : {}) });
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
  /**
   * Whether hot statements may be named (prepared once per connection). DATABASE_PREPARED_STATEMENTS=false
   * turns it off for poolers in transaction mode that cannot track named statements (PgBouncer < 1.21).
   */
  readonly preparedStatements: boolean;

  constructor(databaseUrl: string, options: { preparedStatements?: boolean } = {}) {
    this.pool = createPgPool(databaseUrl);
    this.preparedStatements = options.preparedStatements ?? true;
  }

  async onModuleDestroy(): Promise<void> {
    await this.pool.end();
  }
}
