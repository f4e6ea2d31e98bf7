// `npm test`: every check and test (lint, typecheck, build, unit and integration tests on
// the real PostgreSQL and Redis, Playwright in Debian's Chromium), then one summary line.
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { ensureDependencies } from './lib/deps.mjs';
import { loadDotEnv } from './lib/env.mjs';
import { prisma, root } from './lib/prisma.mjs';
import { formatDuration, run, step } from './lib/run.mjs';
import { DEFAULT_DATABASE_URL, DEFAULT_REDIS_URL, ensureChromium, ensurePgbouncer, ensurePostgres, ensureRedis, ServiceError } from './lib/services.mjs';

const bin = (name) => path.join(root, 'node_modules/.bin', name);
const results = [];
let passed = 0;
let failed = 0;

function record(name, ok, detail = '') {
  results.push(`${ok ? '✔' : '✘'} ${name}${detail ? ` — ${detail}` : ''}`);
  if (ok) passed += 1;
  else failed += 1;
}

/** Milliseconds since `start` (a `performance.now()`), formatted. */
const since = (start) => formatDuration(performance.now() - start);

function readJson(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

async function main() {
  const startedAt = performance.now();
  loadDotEnv();
  await ensureDependencies();
  step('Checking PostgreSQL, Redis, Chromium and PgBouncer');
  const databaseUrl = await ensurePostgres(process.env.DATABASE_URL || DEFAULT_DATABASE_URL);
  const redisUrl = await ensureRedis(process.env.REDIS_URL || DEFAULT_REDIS_URL);
  await ensureChromium();
  await ensurePgbouncer();

  const tmp = path.join(root, 'tmp');
  mkdirSync(tmp, { recursive: true });
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    NODE_ENV: 'test',
    NX_DAEMON: 'false',
    NX_NO_CLOUD: 'true',
    NEXT_TELEMETRY_DISABLED: '1',
  };

  step('prisma generate');
  if (prisma(['generate'], { databaseUrl, inherit: true }).status !== 0) throw new ServiceError('prisma generate failed');

  for (const target of ['lint', 'typecheck', 'build']) {
    step(`nx run-many -t ${target}`);
    const start = performance.now();
    const code = await run(bin('nx'), ['run-many', '-t', target, '--output-style=static', '--parallel=2'], { env });
    record(`${target} (every project)`, code === 0, since(start));
  }

  // Two Jest runs: every suite but the fault specs on two workers, then the fault specs one at a time
  // (they kill processes and time lock and stall windows in seconds; another suite's load shifts them).
  const jestStart = performance.now();
  let jestPassed = 0;
  let jestFailed = 0;
  let jestBroken = 0;
  for (const phase of [
    { name: 'parallel', args: ['--maxWorkers=2'] },
    { name: 'serial', args: ['--runInBand', '--testPathPatterns', 'src/reliability/.*\\.int-spec\\.ts$'] },
  ]) {
    step(`jest: unit and integration tests (${phase.name === 'parallel' ? 'all but the fault specs, two workers' : 'the fault specs, one at a time'})`);
    const jestOut = path.join(tmp, `jest-results-${phase.name}.json`);
    rmSync(jestOut, { force: true });
    // --forceExit: a suite whose clean-up failed (an afterAll timing out while it stops a process) can leave handles open,
    // and Jest would then never exit; the results are in the JSON file, and such a suite counts as failed below.
    await run(bin('jest'), ['--ci', '--forceExit', ...phase.args, '--json', `--outputFile=${jestOut}`], { env: { ...env, COMPACTOR_JEST_PHASE: phase.name } });
    const jest = readJson(jestOut);
    if (!jest) {
      jestBroken += 1;
      continue;
    }
    jestPassed += jest.numPassedTests;
    jestFailed += jest.numFailedTests;
    // A suite that failed with none of its tests failing (a compile error, a beforeAll or afterAll that threw or timed out)
    // counts as one failure.
    jestBroken += jest.testResults.filter((s) => s.status === 'failed' && !s.assertionResults.some((a) => a.status === 'failed')).length;
  }
  passed += jestPassed;
  failed += jestFailed + jestBroken;
  results.push(`${jestFailed + jestBroken === 0 ? '✔' : '✘'} jest — ${jestPassed} passed, ${jestFailed} failed, ${jestBroken} suites broken (or runs without results) — ${since(jestStart)}`);

  step('Playwright in Chromium against the running stack');
  const e2eUrl = new URL(databaseUrl);
  e2eUrl.pathname = '/compactor_e2e';
  const { default: pg } = await import('pg');
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  await client.query('DROP DATABASE IF EXISTS compactor_e2e WITH (FORCE)');
  await client.query('CREATE DATABASE compactor_e2e');
  await client.end();
  const migrated = prisma(['migrate', 'deploy'], { databaseUrl: e2eUrl.toString() });
  if (migrated.status !== 0) record('e2e database migration', false, migrated.stderr.trim().split('\n').at(-1));
  else {
    const pwOut = path.join(tmp, 'playwright-results.json');
    rmSync(pwOut, { force: true });
    const pwStart = performance.now();
    await run(bin('playwright'), ['test', '-c', 'e2e/playwright.config.ts', '--reporter=list,json'], {
      env: { ...env, E2E_DATABASE_URL: e2eUrl.toString(), PLAYWRIGHT_JSON_OUTPUT_NAME: pwOut },
    });
    const pw = readJson(pwOut);
    if (!pw) record('playwright', false, `produced no results — ${since(pwStart)}`);
    else {
      const { expected = 0, unexpected = 0, flaky = 0 } = pw.stats ?? {};
      passed += expected;
      failed += unexpected + flaky;
      const errors = (pw.errors ?? []).length;
      failed += errors;
      results.push(`${unexpected + flaky + errors === 0 ? '✔' : '✘'} playwright — ${expected} passed, ${unexpected + flaky} failed${errors ? `, ${errors} errors` : ''} — ${since(pwStart)}`);
    }
  }

  console.log(`\n${results.join('\n')}\n\nnpm test took ${since(startedAt)} in all\n`);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}

main().catch((error) => {
  console.error(error instanceof ServiceError ? error.message : error);
  console.log(`${passed} passed, ${failed + 1} failed`);
  process.exit(1);
});
