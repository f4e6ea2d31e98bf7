import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { createEmptyDatabase, TestDatabase } from '@compactor/testing';

const root = join(__dirname, '../../..');
const migrationsDir = join(root, 'prisma/migrations');
const prismaEnv = (url: string) => ({
  ...process.env,
  DATABASE_URL: url,
  PRISMA_HIDE_UPDATE_MESSAGE: '1',
  // Keeps the CLI from downloading native engines (TOOLCHAIN.md): Migrate runs on its WASM engine.
  PRISMA_QUERY_ENGINE_LIBRARY: '/bin/true',
  PRISMA_SCHEMA_ENGINE_BINARY: '/bin/true',
});

function prisma(args: string[], url: string): string {
  const result = spawnSync(join(root, 'node_modules/.bin/prisma'), args, { cwd: root, env: prismaEnv(url), encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`prisma ${args.join(' ')} failed:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

function schemaDump(url: string): string {
  const result = spawnSync('pg_dump', ['--schema-only', '--no-owner', '--no-privileges', '--exclude-table=_prisma_migrations', url], {
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`pg_dump failed: ${result.stderr}`);
  // Comments and blank lines carry no schema; \restrict tokens differ per dump.
  const lines = result.stdout.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('--') && !line.startsWith('\\'));
  // ALTER TABLE ADD COLUMN appends columns while a fresh CREATE TABLE lists them in schema order:
  // the set of column definitions is the schema, their position is not.
  const out: string[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    out.push(lines[i]);
    if (!lines[i].startsWith('CREATE TABLE ')) continue;
    const columns: string[] = [];
    while (i + 1 < lines.length && lines[i + 1] !== ');') columns.push(lines[(i += 1)].replace(/,$/, ''));
    out.push(...columns.sort());
  }
  return out.join('\n');
}

/**
 * Statements of the migrations that Prisma's schema cannot express, applied to the database built from schema.prisma
 * as well: the drift check then compares everything else. Each names the migration that holds it.
 */
const RAW_SQL_ONLY = [
  // 20261125200100_sessions_external_id_statistics: session search's planner estimates.
  'ALTER TABLE "sessions" ALTER COLUMN "external_id" SET STATISTICS 1000;',
];

async function run(url: string, sql: string): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

describe('migrations', () => {
  const dbs: TestDatabase[] = [];
  afterAll(async () => {
    await Promise.all(dbs.map((db) => db.drop()));
  });

  it('`prisma migrate deploy` produces exactly the schema of schema.prisma (no drift)', async () => {
    const migrated = await createEmptyDatabase('drift_migrated');
    const fromSchema = await createEmptyDatabase('drift_schema');
    dbs.push(migrated, fromSchema);

    expect(prisma(['migrate', 'deploy'], migrated.url)).toContain('All migrations have been successfully applied');
    const script = prisma(['migrate', 'diff', '--from-empty', '--to-schema-datamodel', 'prisma/schema.prisma', '--script'], fromSchema.url);
    await run(fromSchema.url, script);
    await run(fromSchema.url, RAW_SQL_ONLY.join('\n'));

    expect(schemaDump(migrated.url)).toBe(schemaDump(fromSchema.url));
  }, 120000);

  it('finds every raw-SQL-only statement in a migration', () => {
    const all = readdirSync(migrationsDir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => readFileSync(join(migrationsDir, d.name, 'migration.sql'), 'utf8'))
      .join('\n');
    for (const statement of RAW_SQL_ONLY) expect(all).toContain(statement);
  });

  it('wraps every migration in a transaction', () => {
    for (const dir of readdirSync(migrationsDir, { withFileTypes: true }).filter((d) => d.isDirectory())) {
      const sql = readFileSync(join(migrationsDir, dir.name, 'migration.sql'), 'utf8');
      const statements = sql.split('\n').filter((l) => l.trim() && !l.startsWith('--'));
      expect([dir.name, statements[0]]).toEqual([dir.name, 'BEGIN;']);
      expect([dir.name, statements.at(-1)]).toEqual([dir.name, 'COMMIT;']);
      expect(sql).not.toMatch(/CONCURRENTLY/i);
    }
  });

  it('leaves nothing half-applied when a migration fails', async () => {
    const db = await createEmptyDatabase('failed_migration');
    dbs.push(db);
    const first = readdirSync(migrationsDir).filter((d) => d !== 'migration_lock.toml').sort()[0];
    const sql = readFileSync(join(migrationsDir, first, 'migration.sql'), 'utf8');
    // The same migration, failing at its last statement.
    const failing = sql.replace(/COMMIT;\s*$/, 'SELECT 1 / 0;\nCOMMIT;');
    await expect(run(db.url, failing)).rejects.toThrow('division by zero');
    const client = new Client({ connectionString: db.url });
    await client.connect();
    const { rows } = await client.query("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'");
    await client.end();
    expect(rows[0].n).toBe(0);
  });
});
