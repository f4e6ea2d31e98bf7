// Prepares, once per test run, a template database with every migration applied.
// Each integration test then clones it (CREATE DATABASE ... TEMPLATE), as immich's
// medium tests do, so tests never share rows and need no global reset.
const fs = require('node:fs');
const { Client } = require('pg');
const { adminUrl, migrationFiles, templateName } = require('./test-database.constants');

module.exports = async function globalSetup() {
  const client = new Client({ connectionString: adminUrl() });
  await client.connect();
  try {
    // Several Jest projects may run this at once; one builds the template, the others wait.
    await client.query('SELECT pg_advisory_lock(727001)');
    const name = templateName();
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount === 0) {
      const building = `${name}_building`;
      await client.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
      await client.query(`CREATE DATABASE ${building}`);
      const url = new URL(adminUrl());
      url.pathname = `/${building}`;
      const db = new Client({ connectionString: url.toString() });
      await db.connect();
      try {
        for (const file of migrationFiles()) await db.query(fs.readFileSync(file, 'utf8'));
      } finally {
        await db.end();
      }
      await client.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
    }
    await client.query('SELECT pg_advisory_unlock(727001)');
  } finally {
    await client.end();
  }
};
