import 'reflect-metadata';
import { ConfigError, maskUrl } from '@compactor/config';
import { checkRedis } from '@compactor/jobs';
import { checkPostgres } from '@compactor/persistence';
import { createApp } from './app.factory';
import { loadApiConfig } from './config/api-config';
import { HttpDrain } from './reliability/http-drain';
import { MessageTokenCounter } from './tokens/message-token-counter';

async function bootstrap(): Promise<void> {
  let config;
  try {
    config = loadApiConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }

  // Fail fast, naming the URL (password masked), instead of starting a process that can only answer 503.
  const unreachable = [
    await checkPostgres(config.DATABASE_URL).then((e) => e && `PostgreSQL at ${maskUrl(config.DATABASE_URL)}: ${e}`),
    await checkRedis(config.REDIS_URL).then((e) => e && `Redis at ${maskUrl(config.REDIS_URL)}: ${e}`),
  ].filter(Boolean);
  if (unreachable.length > 0) {
    console.error(`Cannot start the API: cannot reach ${unreachable.join('; and ')}`);
    process.exit(1);
  }

  const app = await createApp(config);
  // The token pool's threads start with their rank tables loaded before the API listens: the first
  // large text would otherwise wait ~0.5-1 s for them (npm run bench -- hostile).
  await app.get(MessageTokenCounter).warm();
  const drain = new HttpDrain(app.getHttpServer());
  await app.listen(config.PORT, config.HOST);
  console.log(`Compactor API listening on http://${config.HOST}:${config.PORT} (docs at /docs)`);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal} received: finishing in-flight requests`);
    const timer = setTimeout(() => {
      console.error(`Shutdown took longer than ${config.SHUTDOWN_TIMEOUT_MS} ms; exiting`);
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS);
    timer.unref();
    // Requests in flight are answered before the modules close the database pool and Redis.
    const drainMs = Math.floor(config.SHUTDOWN_TIMEOUT_MS * 0.8);
    if (!(await drain.drain(drainMs))) console.error(`Requests still in flight after ${drainMs} ms; closing`);
    await app.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

void bootstrap();
