// `npm start`: installs what is missing, makes sure PostgreSQL and Redis answer, migrates,
// builds, then runs the API, the worker and the dashboard until Ctrl-C.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { ensureDependencies } from './lib/deps.mjs';
import { loadDotEnv, maskUrl } from './lib/env.mjs';
import { prisma, root } from './lib/prisma.mjs';
import { run, step } from './lib/run.mjs';
import { DEFAULT_DATABASE_URL, DEFAULT_REDIS_URL, ensurePostgres, ensureRedis, ServiceError, started } from './lib/services.mjs';

const children = [];
let stopping = false;

async function stopAll(code) {
  if (stopping) return;
  stopping = true;
  console.log('\nStopping…');
  await Promise.all(
    children.map(
      ({ child }) =>
        new Promise((resolve) => {
          if (child.exitCode !== null) return resolve();
          child.once('exit', resolve);
          child.kill('SIGTERM');
        }),
    ),
  );
  for (const service of started.reverse()) {
    console.log(`Stopping ${service.name} (started by npm start)`);
    await service.stop();
  }
  process.exit(code);
}

function launch(name, command, args, env) {
  const child = spawn(command, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const prefix = `[${name}]`.padEnd(12);
  for (const stream of [child.stdout, child.stderr]) {
    let buffer = '';
    stream.on('data', (chunk) => {
      buffer += chunk;
      const lines = buffer.split('\n');
      buffer = lines.pop();
      for (const line of lines) console.log(`${prefix}${line}`);
    });
  }
  child.on('exit', (code) => {
    if (!stopping) {
      console.error(`${name} exited with code ${code}; stopping the rest`);
      void stopAll(code || 1);
    }
  });
  children.push({ name, child });
  return child;
}

async function waitForHttp(url, seconds) {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline && !stopping) {
    try {
      const res = await fetch(url);
      if (res.status < 500) return true;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  return false;
}

/**
 * The development API key: kept in .env as COMPACTOR_INIT_API_KEY, which the API makes the
 * default tenant's key at startup (stored hashed). Created on the first start.
 */
function ensureDevelopmentKey() {
  if (process.env.COMPACTOR_INIT_API_KEY) return process.env.COMPACTOR_INIT_API_KEY;
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  const key = `ck_dev_${[...randomBytes(36)].map((b) => alphabet[b % 62]).join('')}`;
  appendFileSync(path.join(root, '.env'), `\n# development API key written by npm start (all scopes)\nCOMPACTOR_INIT_API_KEY=${key}\n`);
  process.env.COMPACTOR_INIT_API_KEY = key;
  return key;
}

async function main() {
  loadDotEnv();
  const devKey = ensureDevelopmentKey();
  await ensureDependencies();

  step('Checking PostgreSQL and Redis');
  const databaseUrl = await ensurePostgres(process.env.DATABASE_URL || DEFAULT_DATABASE_URL);
  const redisUrl = await ensureRedis(process.env.REDIS_URL || DEFAULT_REDIS_URL);
  console.log(`  PostgreSQL: ${maskUrl(databaseUrl)}\n  Redis:      ${maskUrl(redisUrl)}`);

  const host = process.env.HOST || '127.0.0.1';
  const apiPort = process.env.PORT || '3000';
  const dashboardHost = process.env.DASHBOARD_HOST || host;
  const dashboardPort = process.env.DASHBOARD_PORT || '3001';
  const apiUrl = `http://${host}:${apiPort}`;
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    NODE_ENV: process.env.NODE_ENV || 'production',
    NX_DAEMON: 'false',
    NX_NO_CLOUD: 'true',
    NEXT_TELEMETRY_DISABLED: '1',
  };

  step('Generating the Prisma client and applying migrations');
  if (prisma(['generate'], { databaseUrl, inherit: true }).status !== 0) throw new ServiceError('prisma generate failed');
  if (prisma(['migrate', 'deploy'], { databaseUrl, inherit: true }).status !== 0) {
    throw new ServiceError('Migrations failed (each migration runs in a transaction, so nothing was half-applied)');
  }

  step('Building API, worker and dashboard');
  const nx = path.join(root, 'node_modules/.bin/nx');
  if ((await run(nx, ['run-many', '-t', 'build', '-p', 'api', 'worker', 'dashboard', '--output-style=static'], { env })) !== 0) {
    throw new ServiceError('Build failed');
  }

  step('Starting');
  launch('api', process.execPath, ['dist/apps/api/apps/api/src/main.js'], { ...env, HOST: host, PORT: apiPort });
  launch('worker', process.execPath, ['dist/apps/worker/apps/worker/src/main.js'], env);
  launch('dashboard', path.join(root, 'node_modules/.bin/next'), ['start', 'apps/dashboard', '-p', dashboardPort, '-H', dashboardHost], {
    ...env,
    COMPACTOR_API_URL: process.env.COMPACTOR_API_URL || apiUrl,
  });
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));

  const dashboardUrl = `http://${dashboardHost}:${dashboardPort}`;
  const [apiUp, dashboardUp] = await Promise.all([waitForHttp(`${apiUrl}/health`, 60), waitForHttp(dashboardUrl, 60)]);
  if (!apiUp || !dashboardUp) {
    console.error(`${!apiUp ? 'The API' : 'The dashboard'} did not come up within 60 s`);
    return stopAll(1);
  }
  console.log(`
Compactor is running (Ctrl-C stops it):
  API        ${apiUrl}        (OpenAPI docs: ${apiUrl}/docs)
  Dashboard  ${dashboardUrl}
  Worker     processing jobs from ${maskUrl(redisUrl)}

Development API key (default tenant, all scopes; kept in .env as COMPACTOR_INIT_API_KEY):
  ${devKey}
Try: curl -H "Authorization: Bearer ${devKey}" ${apiUrl}/v1/sessions`);
}

main().catch((error) => {
  console.error(`\n${error instanceof ServiceError ? error.message : error.stack || error}`);
  void stopAll(1);
});
