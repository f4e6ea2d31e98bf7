import { DynamicModule, Module } from '@nestjs/common';
import { AnalyticsRepository } from './analytics.repository';
import { ApiKeyRepository } from './api-key.repository';
import { AppendRepository } from './append.repository';
import { AuditRepository } from './audit.repository';
import { CompactionRepository } from './compaction.repository';
import { EventRepository } from './event.repository';
import { HealthRepository } from './health.repository';
import { IdempotencyRepository } from './idempotency.repository';
import { MessageRepository } from './message.repository';
import { PgPoolService } from './pg-pool.service';
import { PrismaService } from './prisma.service';
import { SessionRepository } from './session.repository';
import { SnapshotRepository } from './snapshot.repository';
import { TenantRepository } from './tenant.repository';

const repositories = [
  AnalyticsRepository,
  ApiKeyRepository,
  AppendRepository,
  AuditRepository,
  CompactionRepository,
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
  static forRoot(options: { databaseUrl: string }): DynamicModule {
    return {
      module: PersistenceModule,
      global: true,
      providers: [
        { provide: PrismaService, useFactory: () => new PrismaService(options.databaseUrl) },
        { provide: PgPoolService, useFactory: () => new PgPoolService(options.databaseUrl) },
        ...repositories,
      ],
      exports: [PrismaService, PgPoolService, ...repositories],
    };
  }
}
