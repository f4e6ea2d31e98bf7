import { DynamicModule, Module } from '@nestjs/common';
import { PersistenceModule } from '@compactor/persistence';
import type { Logger } from 'pino';
import { API_CONFIG, ApiConfig } from './config/api-config';
import { HealthController } from './health/health.controller';
import { HealthService } from './health/health.service';
import { LOGGER } from './logging/logger';
import { MetricsController } from './metrics/metrics.controller';
import { MetricsService } from './metrics/metrics.service';
import { RedisLifecycle, redisProvider } from './redis.provider';

@Module({})
export class AppModule {
  static forRoot(config: ApiConfig, logger: Logger): DynamicModule {
    return {
      module: AppModule,
      imports: [PersistenceModule.forRoot({ databaseUrl: config.DATABASE_URL })],
      controllers: [HealthController, MetricsController],
      providers: [
        { provide: API_CONFIG, useValue: config },
        { provide: LOGGER, useValue: logger },
        redisProvider,
        RedisLifecycle,
        HealthService,
        MetricsService,
      ],
    };
  }
}
