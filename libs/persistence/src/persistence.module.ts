import { DynamicModule, Module } from '@nestjs/common';
import { ApiKeyRepository } from './api-key.repository';
import { AppendRepository } from './append.repository';
import { CompactionRepository } from './compaction.repository';
import { HealthRepository } from './health.repository';
import { IdempotencyRepository } from './idempotency.repository';
import { MessageRepository } from './message.repository';
import { PgPoolService } from './pg-pool.service';
import { PrismaService } from './prisma.service';
import { SessionRepository } from './session.repository';
import { TenantRepository } from './tenant.repository';

const repositories = [
  ApiKeyRepository,
  AppendRepository,
  CompactionRepository,
  HealthRepository,
  IdempotencyRepository,
  MessageRepository,
  SessionRepository,
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
