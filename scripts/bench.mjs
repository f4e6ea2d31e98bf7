// `npm run bench [-- ingest ...]`: performance benchmarks against the built API on the real
// PostgreSQL and Redis, in a database of their own (`compactor_bench_<pid>`, created for the run and
// dropped after it, so two runs at once never share or drop each other's data).
// Each benchmark writes its section of docs/benchmarks.md; numbers are medians and ratios
// measured side by side in one run (this machine is small and noisy).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureDependencies } from './lib/deps.mjs';
import { loadDotEnv } from './lib/env.mjs';
import { prisma, root } from './lib/prisma.mjs';
import { run, step } from './lib/run.mjs';
import { DEFAULT_DATABASE_URL, DEFAULT_REDIS_URL, ensurePostgres, ensureRedis, ServiceError } from './lib/services.mjs';
import { dropDatabase, recreateDatabase } from '../bench/lib/database.mjs';

const BENCHES = {
  ingest: () => import('../bench/ingest.mjs'),
  quality: () => import('../bench/quality.mjs'),
  analytics: () => import('../bench/analytics.mjs'),
  proxy: () => import('../bench/proxy.mjs'),
  hostile: () => import('../bench/hostile.mjs'),
  scale: () => import('../bench/scale.mjs'),
  history: () => import('../bench/history.mjs'),
};
/** Benchmarks that need a worker process running the compaction jobs next to the API. */
const NEEDS_WORKER = new Set(['quality', 'proxy', 'hostile']);
/** Benchmarks that start workers of their own (the worker is built, the runner starts none for them). */
const STARTS_WORKERS = new Set(['scale']);
/** Every option a benchmark reads: a value (`--name value` or `--name=value`) or a boolean flag. */
const OPTIONS = {
  ...Object.fromEntries(['sessions', 'dump', 'seed', 'count', 'presets', 'concurrency', 'json', 'sets', 'aider', 'overrides'].map((name) => [name, { type: 'string' }])),
  // An experiment (another policy override, say) that must not replace the documented run.
  'no-write': { type: 'boolean' },
  // quality: leave out the real agent traces of testdata/.
  'no-real': { type: 'boolean' },
  // analytics: only the session-search subsection (seeds only its 100,000 sessions).
  'search-only': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};
/** Run only when named: `history` fills two databases with 10M messages each (~25 min, ~30 GB of temporary disk). */
const ONLY_WHEN_NAMED = new Set(['history']);
const USAGE = `usage: npm run bench [-- [${Object.keys(BENCHES).join('|')} ...] [options]]   (no name: every benchmark but ${[...ONLY_WHEN_NAMED].join(', ')})
  --no-write            print the results without writing docs/benchmarks.md
  quality: --sets a,b  --sessions DIR  --dump DIR  --seed N  --count N  --presets a,b  --concurrency N
           --overrides JSON  --json FILE  --aider N  --no-real
  analytics: --search-only
  history: --count N     (messages in each of its two databases; 10,000,000 by default)
environment: BENCH_PORT (the API's port, default 3190), BENCH_CPU_PROF=DIR (the API runs under node --cpu-prof and
  writes its CPU profile to DIR when the run stops it)`;
const PORT = Number(process.env.BENCH_PORT || 3190);
/** BENCH_CPU_PROF=<dir>: the API runs with `node --cpu-prof` and writes its CPU profile there when the run stops it. */
const API_NODE_ARGS = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];

async function startApi(env) {
  const child = spawn(process.execPath, [...API_NODE_ARGS, path.join(root, 'dist/apps/api/apps/api/src/main.js')], { env, stdio: ['ignore', 'ignore', 'inherit'] });
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

/** Starts the built worker against the same database, Redis and queue prefix; resolves once it says it started. */
async function startWorker(env) {
  const child = spawn(process.execPath, [path.join(root, 'dist/apps/worker/apps/worker/src/main.js')], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      reject(new ServiceError('the worker did not start within 60 s'));
    }, 60_000);
    const onData = (chunk) => {
      output += chunk;
      if (output.includes('Compactor worker started')) {
        clearTimeout(timer);
        child.stdout.off('data', onData);
        child.stdout.resume(); // its log lines are not needed; errors still go to stderr
        resolve(child);
      }
    };
    child.stdout.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new ServiceError(`the worker exited with code ${code}`));
      if (output.includes('Compactor worker started') && !child.killed) console.error(`the worker exited with code ${code} during the benchmark`);
    });
  });
}

/** Benchmark names and `--options` from the command line. */
function parseCommandLine(argv) {
  try {
    const { positionals, values } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
    return { names: positionals, options: values };
  } catch (error) {
    throw new ServiceError(`${error.message}\n${USAGE}`);
  }
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
  const { names, options } = parseCommandLine(process.argv.slice(2));
  if (options.help) {
    console.log(USAGE);
    return;
  }
  const selected = names.length ? names : Object.keys(BENCHES).filter((n) => !ONLY_WHEN_NAMED.has(n));
  const unknown = selected.filter((n) => !(n in BENCHES));
  if (unknown.length) throw new ServiceError(`unknown benchmark ${unknown.join(', ')}; known: ${Object.keys(BENCHES).join(', ')}`);

  loadDotEnv();
  await ensureDependencies();
  const databaseUrl = await ensurePostgres(process.env.DATABASE_URL || DEFAULT_DATABASE_URL);
  const redisUrl = await ensureRedis(process.env.REDIS_URL || DEFAULT_REDIS_URL);
  const env = { ...process.env, NX_DAEMON: 'false', NX_NO_CLOUD: 'true' };
  const withWorker = selected.some((n) => NEEDS_WORKER.has(n));
  step(withWorker ? 'Building the API and the worker' : 'Building the API');
  const buildArgs = withWorker || selected.some((n) => STARTS_WORKERS.has(n)) ? ['run-many', '-t', 'build', '-p', 'api', 'worker', '--output-style=static'] : ['run', 'api:build', '--output-style=static'];
  if ((await run(path.join(root, 'node_modules/.bin/nx'), buildArgs, { env })) !== 0) {
    throw new ServiceError('build failed');
  }
  const benchDb = `compactor_bench_${process.pid}`;
  step(`Creating the benchmark database ${benchDb}`);
  const benchUrl = await recreateDatabase(databaseUrl, benchDb);
  const migrated = prisma(['migrate', 'deploy'], { databaseUrl: benchUrl });
  if (migrated.status !== 0) throw new ServiceError(`migration failed: ${migrated.stderr}`);

  const key = `bench_${randomBytes(24).toString('hex')}`;
  // A queue prefix of this run's own, so no other worker on this Redis takes its jobs.
  const queuePrefix = `bench-${process.pid}-${randomBytes(4).toString('hex')}`;
  // The benches' upstreams are in-process servers on loopback, named as a tenant's own upstreams by some workloads.
  const serviceEnv = { ...env, NODE_ENV: 'production', DATABASE_URL: benchUrl, REDIS_URL: redisUrl, QUEUE_PREFIX: queuePrefix, LOG_LEVEL: 'warn', COMPACTOR_PROXY_ALLOW_PRIVATE_UPSTREAMS: 'true' };
  const api = await startApi({ ...serviceEnv, PORT: String(PORT), COMPACTOR_INIT_API_KEY: key });
  let worker = null;
  if (withWorker) {
    try {
      worker = await startWorker(serviceEnv);
    } catch (error) {
      api.kill('SIGTERM');
      throw error;
    }
  }
  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model?.trim() ?? 'CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GB RAM, Node ${process.version}`;
  // Ctrl-C (or a kill) ends the run without reaching `finally`: stop the API and worker it started and drop its
  // database there too (an interrupted run once left its API listening on the bench port for hours).
  const interrupted = (signal) => {
    worker?.kill('SIGTERM');
    api.kill('SIGTERM');
    dropDatabase(databaseUrl, benchDb)
      .catch((error) => console.error(`could not drop ${benchDb}: ${error.message}`))
      .finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    for (const name of selected) {
      step(`bench: ${name}`);
      const bench = await BENCHES[name]();
      const markdown = await bench.run({ apiUrl: `http://127.0.0.1:${PORT}`, key, databaseUrl: benchUrl, root, machine, options, serviceEnv, port: PORT, log: (line) => console.log(`  ${line}`) });
      if (!options['no-write']) writeSection(name, markdown);
      console.log(markdown);
    }
  } finally {
    worker?.kill('SIGTERM');
    api.kill('SIGTERM');
    const exited = (child) => (child && child.exitCode === null && child.signalCode === null ? once(child, 'exit') : undefined);
    await Promise.all([exited(api), exited(worker)]);
    await dropDatabase(databaseUrl, benchDb).catch((error) => console.error(`could not drop ${benchDb}: ${error.message}`));
  }
  if (!options['no-write']) console.log('\nwrote docs/benchmarks.md');
}

main().catch((error) => {
  console.error(error instanceof ServiceError ? error.message : error);
  process.exit(1);
});
