// `npm run bench [-- ingest ...]`: performance benchmarks against the built API on the real
// PostgreSQL and Redis, in a database of their own (`compactor_bench`, recreated each run).
// Each benchmark writes its section of docs/benchmarks.md; numbers are medians and ratios
// measured side by side in one run (this machine is small and noisy).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureDependencies } from './lib/deps.mjs';
import { loadDotEnv } from './lib/env.mjs';
import { prisma, root } from './lib/prisma.mjs';
import { run, step } from './lib/run.mjs';
import { DEFAULT_DATABASE_URL, DEFAULT_REDIS_URL, ensurePostgres, ensureRedis, ServiceError } from './lib/services.mjs';

const BENCHES = { ingest: () => import('../bench/ingest.mjs') };
const PORT = Number(process.env.BENCH_PORT || 3190);

async function recreateDatabase(baseUrl, name) {
  const { default: pg } = await import('pg');
  const admin = new URL(baseUrl);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function startApi(env) {
  const child = spawn(process.execPath, [path.join(root, 'dist/apps/api/apps/api/src/main.js')], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new ServiceError(`the API exited with code ${child.exitCode}`);
    try {
      const res = await fetch(`http://127.0.0.1:${PORT}/health/ready`);
      if (res.ok) return child;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  child.kill('SIGTERM');
  throw new ServiceError('the API did not become ready within 60 s');
}

/** Replaces (or appends) the section between `<!-- bench:NAME -->` markers. */
function writeSection(name, markdown) {
  const file = path.join(root, 'docs/benchmarks.md');
  const start = `<!-- bench:${name}:start -->`;
  const end = `<!-- bench:${name}:end -->`;
  let doc = existsSync(file)
    ? readFileSync(file, 'utf8')
    : '# Benchmarks\n\nWritten by `npm run bench`; every section is replaced when its benchmark runs again. ' +
      'Numbers come from one run on the machine named in the section: medians and ratios measured side by side, not absolute promises.\n';
  const block = `${start}\n${markdown.trim()}\n${end}`;
  doc = doc.includes(start) ? doc.replace(new RegExp(`${start}[\\s\\S]*?${end}`), block) : `${doc.trimEnd()}\n\n${block}\n`;
  writeFileSync(file, doc);
}

async function main() {
  const names = process.argv.slice(2).filter((a) => !a.startsWith('-'));
  const selected = names.length ? names : Object.keys(BENCHES);
  const unknown = selected.filter((n) => !(n in BENCHES));
  if (unknown.length) throw new ServiceError(`unknown benchmark ${unknown.join(', ')}; known: ${Object.keys(BENCHES).join(', ')}`);

  loadDotEnv();
  await ensureDependencies();
  const databaseUrl = await ensurePostgres(process.env.DATABASE_URL || DEFAULT_DATABASE_URL);
  const redisUrl = await ensureRedis(process.env.REDIS_URL || DEFAULT_REDIS_URL);
  const env = { ...process.env, NX_DAEMON: 'false', NX_NO_CLOUD: 'true' };
  step('Building the API');
  if ((await run(path.join(root, 'node_modules/.bin/nx'), ['run', 'api:build', '--output-style=static'], { env })) !== 0) {
    throw new ServiceError('build failed');
  }
  step('Creating the benchmark database compactor_bench');
  const benchUrl = await recreateDatabase(databaseUrl, 'compactor_bench');
  const migrated = prisma(['migrate', 'deploy'], { databaseUrl: benchUrl });
  if (migrated.status !== 0) throw new ServiceError(`migration failed: ${migrated.stderr}`);

  const key = `bench_${randomBytes(24).toString('hex')}`;
  const api = await startApi({
    ...env,
    NODE_ENV: 'production',
    PORT: String(PORT),
    DATABASE_URL: benchUrl,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: `bench-${process.pid}`,
    LOG_LEVEL: 'warn',
    COMPACTOR_INIT_API_KEY: key,
  });
  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model?.trim() ?? 'CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GB RAM, Node ${process.version}`;
  try {
    for (const name of selected) {
      step(`bench: ${name}`);
      const bench = await BENCHES[name]();
      const markdown = await bench.run({ apiUrl: `http://127.0.0.1:${PORT}`, key, databaseUrl: benchUrl, root, machine, log: (line) => console.log(`  ${line}`) });
      writeSection(name, markdown);
      console.log(markdown);
    }
  } finally {
    api.kill('SIGTERM');
  }
  console.log('\nwrote docs/benchmarks.md');
}

main().catch((error) => {
  console.error(error instanceof ServiceError ? error.message : error);
  process.exit(1);
});
