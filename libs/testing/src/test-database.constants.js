// Shared by the Jest global setup (plain JS) and the typed helpers.
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const migrationsDir = path.join(__dirname, '../../../prisma/migrations');

/** The server that test databases are created on; its own database is only used to issue CREATE DATABASE. */
function adminUrl() {
  const base = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/compactor';
  const url = new URL(base);
  url.pathname = '/postgres';
  return url.toString();
}

function migrationFiles() {
  return fs
    .readdirSync(migrationsDir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => path.join(migrationsDir, d.name, 'migration.sql'))
    .sort();
}

/** The template is named after the migrations' content, so a changed migration gets a fresh template. */
function templateName() {
  const hash = crypto.createHash('sha256');
  for (const file of migrationFiles()) hash.update(fs.readFileSync(file));
  return `compactor_tpl_${hash.digest('hex').slice(0, 12)}`;
}

module.exports = { adminUrl, migrationFiles, templateName };
