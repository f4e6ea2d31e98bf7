import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
// The constants module is plain JS so the Jest global setup can use it untransformed.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { adminUrl, templateName } = require('./test-database.constants') as {
  adminUrl(): string;
  templateName(): string;
};

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

async function withAdmin<T>(run: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: adminUrl() });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** A fresh, migrated database of its own for one test file (cloned from the run's template). */
export async function createTestDatabase(label = 'test'): Promise<TestDatabase> {
  const name = `compactor_${label.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${randomBytes(4).toString('hex')}`;
  await withAdmin((c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${templateName()}`));
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    drop: () => withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

/** An empty database (no migrations), for tests of the migrations themselves. */
export async function createEmptyDatabase(label: string): Promise<TestDatabase> {
  const name = `compactor_${label}_${randomBytes(4).toString('hex')}`;
  await withAdmin((c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    drop: () => withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}
