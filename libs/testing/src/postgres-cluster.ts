import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { migrationFiles } = require('./test-database.constants') as { migrationFiles(): string[] };

/** Debian's PostgreSQL 15 server binaries (initdb, pg_ctl, pg_basebackup); null when they are not installed. */
export function postgresServerBinaries(): string | null {
  const dir = process.env.PG_SERVER_BIN ?? '/usr/lib/postgresql/15/bin';
  return ['initdb', 'pg_ctl', 'pg_basebackup', 'postgres'].every((b) => existsSync(join(dir, b))) ? dir : null;
}

/** The server refuses to run as root: as root, every server binary runs as the `postgres` user, which owns the data directories. */
function asServerUser(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  return { uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })), gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })) };
}

function runServerTool(bin: string, args: string[]): string {
  const user = asServerUser();
  try {
    return user ? execFileSync('runuser', ['-u', 'postgres', '--', bin, ...args], { encoding: 'utf8', stdio: 'pipe' }) : execFileSync(bin, args, { encoding: 'utf8', stdio: 'pipe' });
  } catch (error) {
    const e = error as { stderr?: string; stdout?: string; message: string };
    throw new Error(`${bin} ${args.join(' ')} failed: ${e.stderr ?? ''}${e.stdout ?? ''}${e.message}`);
  }
}

function privateDir(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `compactor-${label}-`));
  const user = asServerUser();
  if (user) chownSync(dir, user.uid, user.gid);
  return dir;
}

export interface PostgresCluster {
  port: number;
  dataDir: string;
  /** postgresql://postgres@127.0.0.1:<port>/<database> */
  url(database?: string): string;
  /** Stops the server (fast shutdown); the data directory stays until remove(). */
  stop(): void;
  start(): void;
  /** Stops the server if it runs and deletes its directory. */
  remove(): void;
}

function cluster(bin: string, root: string, dataDir: string, port: number): PostgresCluster {
  const log = join(root, 'server.log');
  const pgCtl = join(bin, 'pg_ctl');
  let running = false;
  const self: PostgresCluster = {
    port,
    dataDir,
    url: (database = 'postgres') => `postgresql://postgres@127.0.0.1:${port}/${database}`,
    start: () => {
      // Sockets in the cluster's own directory: nothing under /var/run/postgresql is touched.
      runServerTool(pgCtl, ['-D', dataDir, '-l', log, '-w', '-t', '30', '-o', `-p ${port} -k ${root} -c listen_addresses=127.0.0.1`, 'start']);
      running = true;
    },
    stop: () => {
      if (!running) return;
      runServerTool(pgCtl, ['-D', dataDir, '-m', 'fast', '-w', '-t', '30', 'stop']);
      running = false;
    },
    remove: () => {
      try {
        self.stop();
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    },
  };
  return self;
}

/**
 * A private PostgreSQL cluster of its own (initdb) on `port`, under /tmp, trust auth for local TCP
 * and replication, WAL kept for a streaming replica; fsync off (a test's data). Never the
 * machine's shared server.
 */
export function startPrimaryCluster(port: number): PostgresCluster {
  const bin = postgresServerBinaries();
  if (!bin) throw new Error('PostgreSQL server binaries are missing');
  const root = privateDir('pg-primary');
  const dataDir = join(root, 'data');
  runServerTool(join(bin, 'initdb'), ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
  writeFileSync(
    join(dataDir, 'postgresql.conf'),
    `${readFileSync(join(dataDir, 'postgresql.conf'), 'utf8')}\nwal_level = replica\nmax_wal_senders = 4\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\nshared_buffers = 32MB\nmax_connections = 60\n`,
  );
  writeFileSync(join(dataDir, 'pg_hba.conf'), 'local all all trust\nhost all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n');
  const c = cluster(bin, root, dataDir, port);
  c.start();
  return c;
}

/** A hot standby of `primary` on `port`: `pg_basebackup -R` (streaming WAL), then started; it replays the primary's writes as they stream. */
export function startStreamingReplica(primary: PostgresCluster, port: number): PostgresCluster {
  const bin = postgresServerBinaries();
  if (!bin) throw new Error('PostgreSQL server binaries are missing');
  const root = privateDir('pg-replica');
  const dataDir = join(root, 'data');
  runServerTool(join(bin, 'pg_basebackup'), ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', dataDir, '-R', '-X', 'stream', '--no-sync', '-c', 'fast']);
  const c = cluster(bin, root, dataDir, port);
  c.start();
  return c;
}

/** Creates `database` on the cluster and applies every migration, as the test template is built. */
export async function createMigratedDatabase(cluster: PostgresCluster, database: string): Promise<string> {
  const admin = new Client({ connectionString: cluster.url() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${database}`);
  } finally {
    await admin.end();
  }
  const db = new Client({ connectionString: cluster.url(database) });
  await db.connect();
  try {
    for (const file of migrationFiles()) await db.query(readFileSync(file, 'utf8'));
  } finally {
    await db.end();
  }
  return cluster.url(database);
}

export interface PgBouncer {
  port: number;
  /** postgresql://postgres@127.0.0.1:<port>/<database> */
  url(database: string): string;
  /** The admin console's SHOW output (e.g. 'POOLS'), rows as objects. */
  show(what: string): Promise<Record<string, string>[]>;
  stop(): Promise<void>;
}

/** Debian's pgbouncer binary, or null when it is not installed. */
export function pgbouncerBinary(): string | null {
  return ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((p) => existsSync(p)) ?? null;
}

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => {
      socket.end();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });

/**
 * A private PgBouncer on `port` (own config and directory under /tmp) in front of the server at
 * `target` (host:port), every database passed through, trust auth, in `poolMode`.
 */
export async function startPgBouncer(options: { port: number; target: { host: string; port: number }; poolMode: 'transaction' | 'session'; poolSize: number; extra?: string }): Promise<PgBouncer> {
  const bin = pgbouncerBinary();
  if (!bin) throw new Error('pgbouncer is not installed');
  const dir = privateDir('pgbouncer');
  const ini = join(dir, 'pgbouncer.ini');
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${options.target.host} port=${options.target.port}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${options.port}`,
      `unix_socket_dir = ${dir}`,
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'admin_users = postgres',
      `pool_mode = ${options.poolMode}`,
      `default_pool_size = ${options.poolSize}`,
      'max_client_conn = 200',
      // pg and Prisma's adapter send these at startup; PgBouncer refuses unknown ones otherwise.
      'ignore_startup_parameters = extra_float_digits,options',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      `pidfile = ${join(dir, 'pgbouncer.pid')}`,
      options.extra ?? '',
      '',
    ].join('\n'),
  );
  writeFileSync(join(dir, 'users.txt'), '"postgres" ""\n');
  const user = asServerUser();
  if (user) {
    chownSync(ini, user.uid, user.gid);
    chownSync(join(dir, 'users.txt'), user.uid, user.gid);
  }
  // PgBouncer refuses to run as root; -u drops to the postgres user.
  const child: ChildProcess = spawn(bin, user ? ['-u', 'postgres', ini] : [ini], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (d) => (output += String(d)));
  child.stderr?.on('data', (d) => (output += String(d)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 10_000;
  while (!(await listening(options.port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      const log = existsSync(join(dir, 'pgbouncer.log')) ? readFileSync(join(dir, 'pgbouncer.log'), 'utf8') : '';
      child.kill('SIGKILL');
      throw new Error(`pgbouncer did not start: ${output}${log}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  const url = (database: string) => `postgresql://postgres@127.0.0.1:${options.port}/${database}`;
  return {
    port: options.port,
    url,
    show: async (what) => {
      // The admin console speaks only the simple query protocol.
      const admin = new Client({ connectionString: url('pgbouncer') });
      await admin.connect();
      try {
        const result = await admin.query(`SHOW ${what}`);
        return result.rows as Record<string, string>[];
      } finally {
        await admin.end();
      }
    },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
