import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { SwaggerModule } from '@nestjs/swagger';
import pinoHttp from 'pino-http';
import type { DestinationStream } from 'pino';
import { AppModule } from './app.module';
import { ApiKeyAuthenticator } from './auth/api-key-authenticator';
import { requestBodyMiddleware } from './body/request-body';
import { ApiConfig } from './config/api-config';
import { DomainExceptionFilter } from './errors/domain-exception.filter';
import { createLogger, PinoNestLogger } from './logging/logger';
import { httpMetricsMiddleware } from './metrics/http-metrics.middleware';
import { RateLimits } from './limits/rate-limits';
import { MetricsService } from './metrics/metrics.service';
import { buildOpenApiDocument } from './openapi/openapi-document';
import { ZodBodyPipe } from './common/zod-body';
import { ProxyAuth } from './proxy/proxy-auth';
import { countTextSync } from '@compactor/tokens';

export interface CreateAppOptions {
  /** Where logs go (stdout by default); tests pass a stream to read them. */
  logDestination?: DestinationStream;
}

/** Builds the HTTP app without listening, so tests and main.ts share one wiring. */
export async function createApp(config: ApiConfig, options: CreateAppOptions = {}): Promise<NestExpressApplication> {
  const logger = createLogger(config.LOG_LEVEL, options.logDestination);
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config, logger), {
    bodyParser: false,
    logger: new PinoNestLogger(logger),
  });
  app.disable('x-powered-by');
  app.set('trust proxy', 'loopback');
  // Request logs carry method, URL, status and timing; never bodies, and credentials are redacted. They are
  // written at info: below that level the middleware is left out (its two child loggers a request, serializing
  // the request each time, cost ~0.2 ms of CPU a request for lines nobody writes).
  if (logger.isLevelEnabled('info')) app.use(pinoHttp({ logger, quietReqLogger: true, autoLogging: { ignore: (req) => req.url === '/metrics' } }));
  app.use(httpMetricsMiddleware(app.get(MetricsService)));
  // Bodies are read only after the key passed (REST: bearer; proxy: X-Compactor-Key), with a depth limit and checked text.
  // The proxy reads its bodies as bytes: provider paths it only passes through are forwarded as received.
  // A caller over its rate limits is refused there too, before its body is read.
  app.use(requestBodyMiddleware({ limitMb: config.BODY_LIMIT_MB, authenticator: app.get(ApiKeyAuthenticator), proxyAuth: app.get(ProxyAuth), rateLimits: app.get(RateLimits) }));
  app.useGlobalFilters(new DomainExceptionFilter(logger));
  // Request bodies typed as a createZodDto class are validated by its zod schema (a 400 naming each bad field).
  app.useGlobalPipes(new ZodBodyPipe());
  SwaggerModule.setup('docs', app, () => buildOpenApiDocument(app), { jsonDocumentUrl: 'docs-json' });
  // The BPE rank tables of o200k (the encoding of every current model) load before the app serves:
  // otherwise the first request that counts text holds the event loop ~0.6 s for them (once per process).
  countTextSync('', 'o200k_base');
  return app;
}
