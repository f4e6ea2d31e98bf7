// Writes a new migration from the difference between the committed schema (HEAD) and the
// working one: `npm run db:migration:new -- add_something`. `prisma migrate dev` cannot run
// offline here (TOOLCHAIN.md), so migrations are diffed from schema files, then wrapped in
// a transaction so a failed migration leaves nothing half-applied.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { prisma, root } from './lib/prisma.mjs';

const name = process.argv[2];
if (!name || !/^[a-z0-9_]+$/.test(name)) {
  console.error('usage: npm run db:migration:new -- <name in snake_case>');
  process.exit(2);
}

let from = ['--from-empty'];
try {
  const old = execFileSync('git', ['show', 'HEAD:prisma/schema.prisma'], { cwd: root, encoding: 'utf8' });
  const oldPath = path.join(root, 'tmp/schema.HEAD.prisma');
  mkdirSync(path.dirname(oldPath), { recursive: true });
  writeFileSync(oldPath, old);
  from = ['--from-schema-datamodel', oldPath];
} catch {
  // No committed schema yet: the first migration starts from an empty database.
}

const diff = prisma(['migrate', 'diff', ...from, '--to-schema-datamodel', 'prisma/schema.prisma', '--script']);
if (diff.status !== 0) {
  console.error(diff.stderr || diff.stdout);
  process.exit(1);
}
const body = diff.stdout.replace(/-- CreateSchema\nCREATE SCHEMA IF NOT EXISTS "public";\n\n?/, '').trim();
if (!body || body === '-- This is an empty migration.') {
  console.log('schema.prisma has no changes against HEAD: nothing to write');
  process.exit(0);
}
const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
const dir = path.join(root, 'prisma/migrations', `${stamp}_${name}`);
mkdirSync(dir, { recursive: true });
const header = `-- ${name}\n-- Wrapped in a transaction so a failed migration leaves nothing half-applied.\n`;
writeFileSync(path.join(dir, 'migration.sql'), `${header}BEGIN;\n\n${body}\n\nCOMMIT;\n`);
console.log(`wrote ${path.relative(root, dir)}/migration.sql`);
