import { DynamicModule, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { PersistenceModule } from '@compactor/persistence';
import type { Logger } from 'pino';
import { AnalyticsController } from './analytics/analytics.controller';
import { AnalyticsService } from './analytics/analytics.service';
import { ApiKeyAuthenticator } from './auth/api-key-authenticator';
import { ApiKeyLookups } from './auth/api-key-lookups';
import { AuthGuard } from './auth/auth.guard';
import { InitKeyBootstrap } from './auth/init-key';
import { API_CONFIG, ApiConfig } from './config/api-config';
import { HealthController } from './health/health.controller';
import { HealthService } from './health/health.service';
import { KeysController } from './keys/keys.controller';
import { KeysService } from './keys/keys.service';
import { RateLimits, rateLimitRedisProvider } from './limits/rate-limits';
import { LOGGER } from './logging/logger';
import { MetricsController } from './metrics/metrics.controller';
import { MetricsService } from './metrics/metrics.service';
import { RedisLifecycle, redisProvider } from './redis.provider';
import { AppendService } from './sessions/append.service';
import { ContextService } from './sessions/context.service';
import { SessionUpdateService } from './sessions/session-update.service';
import { SessionsController } from './sessions/sessions.controller';
import { SessionsService } from './sessions/sessions.service';
import { MessageTokenCounter } from './tokens/message-token-counter';
import { CompactionScheduler } from './compaction/compaction-scheduler';
import { ArtifactsController, ToolsController } from './compaction/artifacts.controller';
import { CompactionController } from './compaction/compaction.controller';
import { CompactionService } from './compaction/compaction.service';
import { createProducerConnection, JobQueue, queuePrefixFor, settled } from '@compactor/jobs';
import { SnapshotsController } from './snapshots/snapshots.controller';
import { SnapshotsService } from './snapshots/snapshots.service';
import { GoalController } from './goal/goal.controller';
import { GoalService } from './goal/goal.service';
import { EventsController } from './events/events.controller';
import { eventProviders } from './events/event-providers';
import { ProxyController } from './proxy/proxy.controller';
import { proxyProviders } from './proxy/proxy-providers';
import { StatusController } from './status/status.controller';
import { StatusService } from './status/status.service';
import { CompactionWait } from './compaction/compaction-wait';
import { AuditController } from './audit/audit.controller';
import { AuditLog } from './audit/audit-log';
import { TenantController } from './tenant/tenant.controller';
import { TenantDefaults } from './tenant/tenant-defaults';
import { TenantLimitsService } from './tenant/tenant-limits.service';
import { TenantService } from './tenant/tenant.service';

@Module({})
export class AppModule {
  static forRoot(config: ApiConfig, logger: Logger): DynamicModule {
    return {
      module: AppModule,
      imports: [
        PersistenceModule.forRoot({
          databaseUrl: config.DATABASE_URL,
          replicaUrl: config.DATABASE_REPLICA_URL,
          replicaExportWaitMs: config.DATABASE_REPLICA_EXPORT_WAIT_MS,
          preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
        }),
      ],
      controllers: [EventsController, HealthController, MetricsController, KeysController, SessionsController, CompactionController, ArtifactsController, ToolsController, SnapshotsController, GoalController, AnalyticsController, ProxyController, StatusController, TenantController, AuditController],
      providers: [
        { provide: API_CONFIG, useValue: config },
        { provide: LOGGER, useValue: logger },
        ApiKeyAuthenticator,
        ApiKeyLookups,
        { provide: APP_GUARD, useClass: AuthGuard },
        redisProvider,
        RedisLifecycle,
        HealthService,
        MetricsService,
        InitKeyBootstrap,
        KeysService,
        SessionsService,
        SessionUpdateService,
        AppendService,
        ContextService,
        MessageTokenCounter,
        // Its own connection that fails fast while Redis is down: an append never waits for a reconnection.
        {
          provide: JobQueue,
          // Connected before the API listens (a Redis Cluster takes a moment to learn its slots), or failed once: it still starts while Redis is down.
          useFactory: async () => {
            const connection = createProducerConnection(config.REDIS_URL);
            await settled(connection);
            return new JobQueue(connection, queuePrefixFor(config.REDIS_URL, config.QUEUE_PREFIX), true);
          },
        },
        CompactionScheduler,
        CompactionService,
        CompactionWait,
        ...eventProviders,
        SnapshotsService,
        GoalService,
        AnalyticsService,
        StatusService,
        ...proxyProviders,
        AuditLog,
        TenantDefaults,
        TenantLimitsService,
        rateLimitRedisProvider,
        RateLimits,
        TenantService,
      ],
    };
  }
}
