import 'reflect-metadata';
import { ConfigError, createServiceLogger, maskUrl, PinoNestLogger } from '@compactor/config';
import { jobLogFields } from './logging/job-log-context';
import { checkRedis } from '@compactor/jobs';
import { describeSummarizerConfig, parseSummarizerConfig, SummarizerConfigError } from '@compactor/llm';
import { checkPostgres } from '@compactor/persistence';
import { NestFactory } from '@nestjs/core';
import { compactionEnvParams, loadWorkerConfig } from './config/worker-config';
import { ValidationFailed } from '@compactor/compaction';
import { WorkerModule } from './worker.module';

async function bootstrap(): Promise<void> {
  let config;
  try {
    config = loadWorkerConfig();
    parseSummarizerConfig(config);
    compactionEnvParams(config);
  } catch (error) {
    if (error instanceof ConfigError || error instanceof SummarizerConfigError || error instanceof ValidationFailed) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }

  const unreachable = [
    await checkPostgres(config.DATABASE_URL).then((e) => e && `PostgreSQL at ${maskUrl(config.DATABASE_URL)}: ${e}`),
    await checkRedis(config.REDIS_URL).then((e) => e && `Redis at ${maskUrl(config.REDIS_URL)}: ${e}`),
  ].filter(Boolean);
  if (unreachable.length > 0) {
    console.error(`Cannot start the worker: cannot reach ${unreachable.join('; and ')}`);
    process.exit(1);
  }

  // JSON lines through pino, as the API writes them; a job's lines carry its job id and session id.
  const logger = createServiceLogger('worker', config.LOG_LEVEL, undefined, jobLogFields);
  const app = await NestFactory.createApplicationContext(WorkerModule.forRoot(config), {
    logger: config.LOG_LEVEL === 'silent' ? false : new PinoNestLogger(logger),
  });
  await app.init();
  const summarizer = describeSummarizerConfig(parseSummarizerConfig(config));
  // A plain line at any log level, as the API's "listening on": npm start, the tests and the benches wait for it.
  console.log(`Compactor worker started (summarizer: ${summarizer.provider}${summarizer.provider === 'local' ? '' : ` ${summarizer.model} at ${summarizer.endpoint}`})`);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal} received: waiting for running jobs`);
    const timer = setTimeout(() => {
      console.error(`Shutdown took longer than ${config.SHUTDOWN_TIMEOUT_MS} ms; exiting`);
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS);
    timer.unref();
    // app.close() drains the running jobs and the sweep's running tick first (their onModuleDestroy), while the database
    // pools and Redis connections are still open; then the modules close.
    await app.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

void bootstrap();
