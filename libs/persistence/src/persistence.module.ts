import { DynamicModule, Module } from '@nestjs/common';
import { AnalyticsRepository } from './analytics.repository';
import { ApiKeyRepository } from './api-key.repository';
import { AppendRepository } from './append.repository';
import { AuditRepository } from './audit.repository';
import { CompactionRepository } from './compaction.repository';
import { ContextLoader } from './context-loader';
import { EventRepository } from './event.repository';
import { HealthRepository } from './health.repository';
import { IdempotencyRepository } from './idempotency.repository';
import { MessageRepository } from './message.repository';
import { PgPoolService } from './pg-pool.service';
import { PrismaService } from './prisma.service';
import { ReadReplica } from './read-replica.service';
import { SessionRepository } from './session.repository';
import { SnapshotRepository } from './snapshot.repository';
import { TenantRepository } from './tenant.repository';

const repositories = [
  AnalyticsRepository,
  ApiKeyRepository,
  AppendRepository,
  AuditRepository,
  CompactionRepository,
  ContextLoader,
  EventRepository,
  HealthRepository,
  IdempotencyRepository,
  MessageRepository,
  SessionRepository,
  SnapshotRepository,
  TenantRepository,
];

@Module({})
export class PersistenceModule {
  /**
   * `replicaUrl`: heavy reads (analytics, export) go there (ReadReplica); without it, to the primary.
   * `preparedStatements` false: no named statements (PgBouncer < 1.21 in transaction mode).
   */
  static forRoot(options: { databaseUrl: string; replicaUrl?: string; replicaExportWaitMs?: number; preparedStatements?: boolean }): DynamicModule {
    return {
      module: PersistenceModule,
      global: true,
      providers: [
        { provide: PrismaService, useFactory: () => new PrismaService(options.databaseUrl) },
        { provide: PgPoolService, useFactory: () => new PgPoolService(options.databaseUrl, { preparedStatements: options.preparedStatements }) },
        {
          provide: ReadReplica,
          useFactory: (pg: PgPoolService, prisma: PrismaService) => new ReadReplica({ url: options.replicaUrl, exportWaitMs: options.replicaExportWaitMs ?? 2000 }, pg, prisma),
          inject: [PgPoolService, PrismaService],
        },
        ...repositories,
      ],
      exports: [PrismaService, PgPoolService, ReadReplica, ...repositories],
    };
  }
}
