import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import type { Pool, QueryResult, QueryResultRow } from 'pg';
import { isDatabaseUnavailable } from './database-unavailable';
import { PrismaClient } from './generated/prisma/client';
import { createPgPool, PgPoolService } from './pg-pool.service';
import { PrismaService } from './prisma.service';

/** Where a heavy read runs. */
export type ReadSource = 'replica' | 'primary';

/** After the replica failed to answer, heavy reads go to the primary for this long before the replica is tried again. */
export const REPLICA_RETRY_AFTER_MS = 5000;
/** A replica that does not accept a connection within this gives way to the primary (the primary's pools wait 5 s). */
const REPLICA_CONNECT_TIMEOUT_MS = 1000;
/** How often an export asks the replica whether it has replayed far enough. */
const REPLICA_CATCH_UP_POLL_MS = 50;
/** Shown in pg_stat_activity on the replica, so an operator (and the test) sees which of its connections are ours, and for what. */
export const REPLICA_APPLICATION_NAMES = { analytics: 'compactor-replica-analytics', export: 'compactor-replica-export' } as const;

export interface ReadReplicaOptions {
  /** DATABASE_REPLICA_URL; undefined: every read runs on the primary. */
  url?: string;
  /** How long an export waits for the replica to replay what the primary had committed when the export began. */
  exportWaitMs: number;
}

/** A hot standby cancels a query that conflicts with WAL it must replay (SQLSTATE 40001 "conflict with recovery"): the primary answers it instead. */
function isRecoveryConflict(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; typeof e === 'object' && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth += 1) {
    const message = (e as { message?: unknown }).message;
    if (typeof message === 'string' && message.includes('conflict with recovery')) return true;
  }
  return false;
}

/**
 * The read replica for heavy reads (analytics, export), from DATABASE_REPLICA_URL. Everything else
 * (appends, context reads, jobs, auth, any read after a write) stays on the primary's pools.
 *
 * A replica that cannot be reached (down, restarting, refusing connections) or cancels a query for a
 * recovery conflict never fails the read: it runs on the primary, and the replica is left alone for
 * REPLICA_RETRY_AFTER_MS (logged once per outage). Without a URL every read runs on the primary.
 */
@Injectable()
export class ReadReplica implements OnModuleDestroy {
  private readonly logger = new Logger('ReadReplica');
  private readonly pool: Pool | null;
  private readonly prismaClient: PrismaClient | null;
  private readonly prismaPool: Pool | null;
  private readonly exportWaitMs: number;
  private downUntil = 0;

  constructor(
    options: ReadReplicaOptions,
    private readonly primaryPg: PgPoolService,
    private readonly primaryPrisma: PrismaService,
  ) {
    this.exportWaitMs = options.exportWaitMs;
    if (options.url) {
      this.pool = createPgPool(options.url, 10, REPLICA_CONNECT_TIMEOUT_MS, REPLICA_APPLICATION_NAMES.analytics);
      // The export's Prisma on a pool of its own, so an export's pages and the analytics statements do not wait on each other.
      this.prismaPool = createPgPool(options.url, 5, REPLICA_CONNECT_TIMEOUT_MS, REPLICA_APPLICATION_NAMES.export);
      this.prismaClient = new PrismaClient({ adapter: new PrismaPg(this.prismaPool) });
    } else {
      this.pool = null;
      this.prismaPool = null;
      this.prismaClient = null;
    }
  }

  get configured(): boolean {
    return this.pool !== null;
  }

  /** Whether heavy reads go to the replica right now (configured, and not left alone after a failure). */
  private get usable(): boolean {
    return this.pool !== null && Date.now() >= this.downUntil;
  }

  private markDown(error: unknown): void {
    if (Date.now() >= this.downUntil) {
      // The driver's message only (a URL or password is never in it); not the URL.
      const reason = error instanceof Error ? error.message : String(error);
      this.logger.warn(`read replica unavailable (${reason}); heavy reads run on the primary, replica tried again in ${REPLICA_RETRY_AFTER_MS} ms`);
    }
    this.downUntil = Date.now() + REPLICA_RETRY_AFTER_MS;
  }

  private fallsBack(error: unknown): boolean {
    return isDatabaseUnavailable(error) || isRecoveryConflict(error);
  }

  /** One plain-pg statement of a heavy read: on the replica, or on the primary when there is none or it fails to answer. */
  async query<R extends QueryResultRow>(text: string, values: unknown[]): Promise<QueryResult<R>> {
    if (this.pool === null || !this.usable) return this.primaryPg.pool.query<R>(text, values);
    try {
      return await this.pool.query<R>(text, values);
    } catch (error) {
      if (!this.fallsBack(error)) throw error;
      this.markDown(error);
      return this.primaryPg.pool.query<R>(text, values);
    }
  }

  /** A Prisma read on `source` (from exportSource); on the primary when the replica fails to answer. */
  async prisma<T>(source: ReadSource, run: (db: PrismaClient) => Promise<T>): Promise<T> {
    if (source === 'primary' || this.prismaClient === null || !this.usable) return run(this.primaryPrisma);
    try {
      return await run(this.prismaClient);
    } catch (error) {
      if (!this.fallsBack(error)) throw error;
      this.markDown(error);
      return run(this.primaryPrisma);
    }
  }

  /**
   * Where an export reads: the replica only once it has replayed everything the primary had committed
   * when the export began (its WAL position), so an export never misses a write acknowledged before
   * it was asked for. The replica gets exportWaitMs to catch up; then, or when it is unreachable, the
   * primary serves the export.
   */
  async exportSource(): Promise<ReadSource> {
    if (this.pool === null || !this.usable) return 'primary';
    // The insert position, not pg_current_wal_lsn() (the write position): with synchronous_commit off an acknowledged commit can still sit in WAL buffers, past the write position.
    const { rows } = await this.primaryPg.pool.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn');
    const target = rows[0].lsn;
    const deadline = Date.now() + this.exportWaitMs;
    try {
      for (;;) {
        const { rows: state } = await this.pool.query<{ standby: boolean; caught: boolean | null }>(
          'SELECT pg_is_in_recovery() AS standby, pg_last_wal_replay_lsn() >= $1::pg_lsn AS caught',
          [target],
        );
        // Not in recovery: the URL names a server that takes writes itself (a promoted replica, or the primary through another route).
        if (!state[0].standby || state[0].caught) return 'replica';
        if (Date.now() >= deadline) return 'primary';
        await new Promise((resolve) => setTimeout(resolve, REPLICA_CATCH_UP_POLL_MS));
      }
    } catch (error) {
      if (!this.fallsBack(error)) throw error;
      this.markDown(error);
      return 'primary';
    }
  }

  async onModuleDestroy(): Promise<void> {
    await this.prismaClient?.$disconnect();
    await this.pool?.end().catch(() => undefined);
    await this.prismaPool?.end().catch(() => undefined);
  }
}
