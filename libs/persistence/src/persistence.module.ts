import { DynamicModule, Module } from '@nestjs/common';
import { HealthRepository } from './health.repository';
import { IdempotencyRepository } from './idempotency.repository';
import { PrismaService } from './prisma.service';

const repositories = [HealthRepository, IdempotencyRepository];

@Module({})
export class PersistenceModule {
  static forRoot(options: { databaseUrl: string }): DynamicModule {
    return {
      module: PersistenceModule,
      global: true,
      providers: [{ provide: PrismaService, useFactory: () => new PrismaService(options.databaseUrl) }, ...repositories],
      exports: [PrismaService, ...repositories],
    };
  }
}
