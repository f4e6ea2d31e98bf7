import { createTestDatabase, TestDatabase } from '@compactor/testing';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '../../../..');
const cli = join(root, 'dist/apps/api/apps/api/src/cli/keys.js');

/** `npm run keys` (the built CLI) on its own database: keys created with an expiry, listed with it. */
describe('keys CLI: expiry', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    if (!existsSync(cli)) throw new Error(`${cli} is missing: build first (npx nx run api:build)`);
    db = await createTestDatabase('keys-cli');
  });
  afterAll(async () => db?.drop());
  const keys = (...args: string[]) =>
    spawnSync(process.execPath, [cli, ...args], { cwd: root, env: { PATH: process.env.PATH ?? '', DATABASE_URL: db.url }, encoding: 'utf8', timeout: 30_000 });

  it('creates a key expiring in N days, lists its expiry, and refuses a lifetime out of range', () => {
    const before = Date.now();
    const created = keys('create', '--name', 'nightly', '--scopes', 'ingest', '--expires-in-days', '30');
    expect([created.status, created.stderr]).toEqual([0, '']);
    const at = /expiring (\S+)\./.exec(created.stdout)?.[1];
    expect(at).toBeDefined();
    expect(Date.parse(at!)).toBeGreaterThanOrEqual(before + 30 * 24 * 3600 * 1000);
    expect(keys('create', '--name', 'forever').status).toBe(0);

    const listed = keys('list');
    expect(listed.status).toBe(0);
    expect(listed.stdout.split('\n').find((l) => l.includes('nightly'))).toContain(`expires ${at}`);
    expect(listed.stdout.split('\n').find((l) => l.includes('forever'))).not.toContain('expire');

    for (const bad of ['3651', 'soon']) {
      const refused = keys('create', '--name', 'bad', '--expires-in-days', bad);
      expect([bad, refused.status, refused.stderr.trim()]).toEqual([bad, 2, '--expires-in-days must be a whole number of days from 1 to 3650']);
    }
    expect(keys('list').stdout).not.toContain('bad');
  });
});
