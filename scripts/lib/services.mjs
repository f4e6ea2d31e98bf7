// Makes sure PostgreSQL and Redis are reachable: uses DATABASE_URL / REDIS_URL when they
// answer; otherwise starts local servers (installing them from Debian's packages when they
// are absent and we are root), or prints exactly what to run.
import { existsSync, readdirSync, appendFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { maskUrl } from './env.mjs';
import { root } from './prisma.mjs';
import { has, isRoot, run, step } from './run.mjs';

export const DEFAULT_DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/compactor';
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

export class ServiceError extends Error {}

function tcpOpen(host, port, timeoutMs = 1500) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: host.replace(/^\[|\]$/g, ''), port });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

async function waitFor(host, port, seconds) {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    if (await tcpOpen(host, port)) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

function postgresVersions() {
  return existsSync('/etc/postgresql') ? readdirSync('/etc/postgresql').sort() : [];
}

async function aptInstall(packages) {
  step(`Installing ${packages.join(', ')} from Debian's packages`);
  if ((await run('apt-get', ['update'])) !== 0) throw new ServiceError('apt-get update failed');
  const code = await run('apt-get', ['install', '-y', '--no-install-recommends', ...packages], {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  if (code !== 0) throw new ServiceError(`apt-get install ${packages.join(' ')} failed`);
}

/** What this run started, so Ctrl-C stops exactly that. */
export const started = [];

async function startLocalPostgres(url) {
  let versions = postgresVersions();
  let installedNow = false;
  if (versions.length === 0) {
    if (!isRoot || !has('apt-get')) {
      throw new ServiceError(
        `PostgreSQL is not reachable at ${maskUrl(url.toString())} and is not installed. Run:\n` +
          `  sudo apt-get update && sudo apt-get install -y postgresql\n` +
          `  sudo pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start\n` +
          `or set DATABASE_URL to a PostgreSQL server you can reach.`,
      );
    }
    await aptInstall(['postgresql']);
    versions = postgresVersions();
    installedNow = true;
  }
  const version = versions.at(-1);
  step(`Starting PostgreSQL ${version}`);
  const start = ['--skip-systemctl-redirect', version, 'main', 'start'];
  const code = isRoot || !has('sudo') ? await run('pg_ctlcluster', start) : await run('sudo', ['pg_ctlcluster', ...start]);
  if (code !== 0 && !isRoot) {
    throw new ServiceError(`Could not start PostgreSQL. Run: sudo pg_ctlcluster --skip-systemctl-redirect ${version} main start`);
  }
  if (!(await waitFor(url.hostname, Number(url.port || 5432), 30))) {
    throw new ServiceError(`PostgreSQL ${version} did not start listening on ${url.hostname}:${url.port || 5432}`);
  }
  started.push({ name: 'PostgreSQL', stop: () => run('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'stop']) });
  if (installedNow) return createLocalRole(url);
  return url;
}

/**
 * A fresh Debian PostgreSQL only trusts local socket peers, so the database user gets a
 * password and DATABASE_URL is written to .env for the next runs.
 */
async function createLocalRole(url) {
  const password = 'compactor';
  const sql = `DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'compactor') THEN CREATE ROLE compactor LOGIN CREATEDB PASSWORD '${password}'; END IF; END $$;`;
  await run('runuser', ['-u', 'postgres', '--', 'psql', '-q', '-c', sql]);
  const next = new URL(url.toString());
  next.username = 'compactor';
  next.password = password;
  appendFileSync(path.join(root, '.env'), `\n# written by npm start after installing PostgreSQL\nDATABASE_URL=${next}\n`);
  console.log(`  created role "compactor" and wrote DATABASE_URL to .env`);
  return next;
}

/** Ensures the server answers and the database exists; returns the URL to use. */
export async function ensurePostgres(rawUrl) {
  let url = new URL(rawUrl);
  const port = Number(url.port || 5432);
  if (!(await tcpOpen(url.hostname, port))) {
    if (!LOCAL_HOSTS.has(url.hostname)) {
      throw new ServiceError(`Cannot reach PostgreSQL at ${maskUrl(rawUrl)} (DATABASE_URL)`);
    }
    url = await startLocalPostgres(url);
  }
  const { default: pg } = await import('pg');
  const database = decodeURIComponent(url.pathname.slice(1)) || 'postgres';
  const tryConnect = async (target) => {
    const client = new pg.Client({ connectionString: target.toString(), connectionTimeoutMillis: 5000 });
    try {
      await client.connect();
      return undefined;
    } catch (error) {
      return error;
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  const error = await tryConnect(url);
  if (!error) return url.toString();
  if (error.code !== '3D000') throw new ServiceError(`Cannot connect to PostgreSQL at ${maskUrl(url.toString())}: ${error.message}`);
  // The server answers but the database does not exist yet: create it.
  const admin = new URL(url.toString());
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE "${database.replace(/"/g, '""')}"`);
    console.log(`  created database "${database}"`);
  } finally {
    await client.end();
  }
  return url.toString();
}

/** Ensures Redis answers at the URL, starting a local one (no persistence) when needed. */
export async function ensureRedis(rawUrl) {
  // A Redis Cluster or Sentinel (redis+cluster://h:p,h:p, redis+sentinel://h:p/name) is the operator's own: it must answer, nothing is started.
  const multi = /^redis\+(cluster|sentinel):\/\//.exec(rawUrl);
  if (multi) {
    const hosts = rawUrl.slice(multi[0].length).split('@').pop().split('/')[0].split(',');
    for (const node of hosts) {
      const colon = node.lastIndexOf(':');
      if (await tcpOpen(node.slice(0, colon), Number(node.slice(colon + 1)))) return rawUrl;
    }
    throw new ServiceError(`Cannot reach any node of ${maskUrl(rawUrl)} (REDIS_URL)`);
  }
  const url = new URL(rawUrl);
  const port = Number(url.port || 6379);
  if (await tcpOpen(url.hostname, port)) return rawUrl;
  if (!LOCAL_HOSTS.has(url.hostname)) throw new ServiceError(`Cannot reach Redis at ${maskUrl(rawUrl)} (REDIS_URL)`);
  if (!has('redis-server')) {
    if (!isRoot || !has('apt-get')) {
      throw new ServiceError(
        `Redis is not reachable at ${maskUrl(rawUrl)} and is not installed. Run:\n` +
          `  sudo apt-get update && sudo apt-get install -y redis-server\n` +
          `  redis-server --daemonize yes --bind 127.0.0.1 --port ${port} --save "" --appendonly no\n` +
          `or set REDIS_URL to a Redis server you can reach.`,
      );
    }
    await aptInstall(['redis-server']);
  }
  step(`Starting Redis on 127.0.0.1:${port}`);
  await run('redis-server', ['--daemonize', 'yes', '--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no']);
  if (!(await waitFor(url.hostname, port, 15))) throw new ServiceError(`Redis did not start listening on port ${port}`);
  started.push({ name: 'Redis', stop: () => run('redis-cli', ['-p', String(port), 'shutdown', 'nosave']) });
  return rawUrl;
}

/**
 * Debian's pgbouncer, which the PgBouncer test (apps/api/src/deployment/pgbouncer.int-spec.ts) runs
 * on a private port. Installed when missing and possible; otherwise that test says it was skipped.
 */
export async function ensurePgbouncer() {
  if (existsSync('/usr/sbin/pgbouncer')) return;
  if (!isRoot || !has('apt-get')) {
    console.warn('pgbouncer is missing, so its test will be skipped (sudo apt-get install -y pgbouncer)');
    return;
  }
  await aptInstall(['pgbouncer']);
}

/** Debian's Chromium, which Playwright drives (it never downloads its own browser here). */
export async function ensureChromium() {
  // The dashboard's reliability badges are emoji: without a colour emoji font, screenshots show boxes.
  const emojiFont = existsSync('/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf');
  if (existsSync('/usr/bin/chromium') && emojiFont) return;
  const missing = [...(existsSync('/usr/bin/chromium') ? [] : ['chromium']), ...(emojiFont ? [] : ['fonts-noto-color-emoji'])];
  if (!isRoot || !has('apt-get')) {
    if (missing.includes('chromium')) throw new ServiceError(`Chromium is missing. Run: sudo apt-get update && sudo apt-get install -y ${missing.join(' ')}`);
    return; // the font only changes how screenshots look
  }
  await aptInstall(missing);
}
