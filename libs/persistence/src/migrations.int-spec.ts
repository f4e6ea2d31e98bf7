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
  const lines = withoutPartitions(result.stdout.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('--') && !line.startsWith('\\')));
  // ALTER TABLE ADD COLUMN appends columns while a fresh CREATE TABLE lists them in schema order:
  // the set of column definitions is the schema, their position is not.
  // pg_dump writes a table's column compression settings in column order too: sorted like the columns.
  const setsCompression = (line: string | undefined) => line !== undefined && line.startsWith('ALTER TABLE ONLY ') && line.includes(' SET COMPRESSION ');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    if (setsCompression(lines[i])) {
      const settings = [lines[i]];
      while (setsCompression(lines[i + 1])) settings.push(lines[(i += 1)]);
      out.push(...settings.sort());
      continue;
    }
    out.push(lines[i]);
    if (!lines[i].startsWith('CREATE TABLE ')) continue;
    const columns: string[] = [];
    while (i + 1 < lines.length && lines[i + 1] !== ');') columns.push(lines[(i += 1)].replace(/,$/, ''));
    out.push(...columns.sort());
  }
  return out.join('\n');
}

/**
 * Prisma does not model partitioning (schema.prisma describes a partitioned table's parent): the dump without the
 * partitions and their indexes and constraints, the parent's `PARTITION BY` clause, and the ONLY that pg_dump writes
 * or leaves out depending on whether a table is partitioned. What is left is the parent as a plain table.
 */
function withoutPartitions(lines: string[]): string[] {
  const partitions = new Set<string>();
  for (const line of lines) {
    const attach = /^ALTER TABLE ONLY \S+ ATTACH PARTITION (\S+) FOR VALUES /.exec(line);
    if (attach) partitions.add(attach[1]);
  }
  // Whole statements (a statement ends with the line that ends with ';'), so a partition's CREATE TABLE goes as one.
  const statements: string[][] = [];
  let current: string[] = [];
  for (const line of lines) {
    current.push(line);
    if (line.endsWith(';')) {
      statements.push(current);
      current = [];
    }
  }
  if (current.length) statements.push(current);
  const namesPartition = (statement: string[]) => statement.some((line) => line.split(/[\s(),;]+/).some((word) => partitions.has(word)));
  // ALTER INDEX parent_idx ATTACH PARTITION partition_idx: the partition's own index.
  const attachesIndex = (statement: string[]) => statement[0].startsWith('ALTER INDEX ') && statement.join(' ').includes(' ATTACH PARTITION ');
  return statements
    .filter((statement) => !namesPartition(statement) && !attachesIndex(statement))
    .flatMap((statement) =>
      statement.flatMap((line, i) => {
        if (line.startsWith('PARTITION BY ')) return [];
        if (line === ')' && statement[i + 1]?.startsWith('PARTITION BY ')) return [');'];
        return [line.replace(/^ALTER TABLE (?!ONLY )/, 'ALTER TABLE ONLY ').replace(/ ON ONLY /, ' ON ')];
      }),
    );
}

/**
 * Statements of the migrations that Prisma's schema cannot express, applied to the database built from schema.prisma
 * as well: the drift check then compares everything else. Each names the migration that holds it.
 */
const RAW_SQL_ONLY = [
  // 20261125200100_sessions_external_id_statistics: session search's planner estimates.
  'ALTER TABLE "sessions" ALTER COLUMN "external_id" SET STATISTICS 1000;',
  // 20261128040000_messages_lz4_compression: a message's texts are compressed with lz4, not pglz.
  'ALTER TABLE "messages" ALTER COLUMN "blocks" SET COMPRESSION lz4, ALTER COLUMN "meta" SET COMPRESSION lz4, ALTER COLUMN "raw" SET COMPRESSION lz4;',
  // 20261128180000_sessions_llm_outage_hold_index: the sweep's lookup of llm-outage holds (a partial index).
  `CREATE INDEX "sessions_llm_outage_hold_idx" ON "sessions"("compaction_hold_at") WHERE "compaction_hold_reason" = 'llm-outage' AND "compaction_hold_tokens" IS NOT NULL;`,
];

/** Turns messages into a table partitioned by HASH(session_id), moving its rows. */
const PARTITION_MIGRATION = '20261128033000_messages_hash_partitions';

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

  it('partitions messages by hash of the session, moving the rows an existing database holds', async () => {
    const db = await createEmptyDatabase('partition_messages');
    dbs.push(db);
    const files = readdirSync(migrationsDir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
    const at = files.indexOf(PARTITION_MIGRATION);
    expect(at).toBeGreaterThan(0);
    const apply = async (names: string[]) => {
      for (const name of names) await run(db.url, readFileSync(join(migrationsDir, name, 'migration.sql'), 'utf8'));
    };
    await apply(files.slice(0, at));
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      // Eight sessions with messages using every column, as a deployment upgrading holds them.
      await client.query(`INSERT INTO tenants (id, name) VALUES ('00000000-0000-4000-8000-000000000001', 'partition-test')`);
      await client.query(
        `INSERT INTO sessions (id, tenant_id, external_id, model, context_window, output_reserve, policy, last_seq, updated_at)
         SELECT ('00000000-0000-4000-8000-00000000001' || i)::uuid, '00000000-0000-4000-8000-000000000001', 's' || i, 'gpt-4o', 128000, 4096, '{}', 300, now()
         FROM generate_series(1, 8) i`,
      );
      await client.query(
        `INSERT INTO messages (session_id, seq, role, blocks, meta, raw, format, pinned, tags, tokens, tool_use_ids, created_at)
         SELECT s.id, g, (CASE WHEN g % 2 = 1 THEN 'user' ELSE 'assistant' END)::"MessageRole",
           json_build_array(json_build_object('type', 'text', 'text', 'message ' || g)), CASE WHEN g % 3 = 0 THEN '{"origin":"openai"}'::json END,
           json_build_object('role', 'user', 'content', 'message ' || g), 'openai', g % 7 = 0, CASE WHEN g % 5 = 0 THEN ARRAY['tag'] ELSE ARRAY[]::text[] END,
           10 + g, CASE WHEN g % 2 = 0 THEN ARRAY['call_' || g] ELSE ARRAY[]::text[] END, '2026-11-01T00:00:00Z'::timestamptz + g * interval '1 second'
         FROM sessions s CROSS JOIN generate_series(1, 300) g`,
      );
      const dump = `SELECT session_id, seq, role, blocks::text, meta::text, raw::text, format, pinned, tags, tokens, tool_use_ids, created_at
                    FROM messages ORDER BY session_id, seq`;
      const before = (await client.query(dump)).rows;
      expect(before).toHaveLength(2400);

      await apply([files[at]]);

      expect((await client.query(dump)).rows).toEqual(before);
      const { rows: parent } = await client.query(`SELECT c.relkind, pg_get_partkeydef(c.oid) AS key FROM pg_class c WHERE c.relname = 'messages'`);
      expect(parent).toEqual([{ relkind: 'p', key: 'HASH (session_id)' }]);
      const { rows: parts } = await client.query(`SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'messages'::regclass`);
      expect(parts[0].n).toBe(16);
      // Rows went to more than one partition; nothing is left of the old table.
      const { rows: used } = await client.query(`SELECT count(DISTINCT tableoid)::int AS n FROM messages`);
      expect(used[0].n).toBeGreaterThan(1);
      const { rows: old } = await client.query(`SELECT to_regclass('messages_unpartitioned') AS t`);
      expect(old[0].t).toBeNull();
      // The primary key, the GIN index and the cascade still hold.
      await expect(
        client.query(`INSERT INTO messages (session_id, seq, role, blocks, raw, format, tokens) VALUES ('00000000-0000-4000-8000-000000000011', 1, 'user', '[]', '{}', 'openai', 1)`),
      ).rejects.toThrow(/messages_p\d+_pkey/);
      const { rows: indexes } = await client.query(`SELECT indexdef FROM pg_indexes WHERE tablename = 'messages' ORDER BY indexname`);
      expect(indexes.map((r) => r.indexdef)).toEqual([
        'CREATE UNIQUE INDEX messages_pkey ON ONLY public.messages USING btree (session_id, seq)',
        'CREATE INDEX messages_tool_use_ids_idx ON ONLY public.messages USING gin (tool_use_ids)',
      ]);
      await client.query(`DELETE FROM sessions WHERE id = '00000000-0000-4000-8000-000000000011'`);
      const { rows: left } = await client.query(`SELECT count(*)::int AS n FROM messages`);
      expect(left[0].n).toBe(2100);
    } finally {
      await client.end();
    }
    // The later migrations apply on top of it.
    await apply(files.slice(at + 1));
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
