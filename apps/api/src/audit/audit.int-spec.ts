import request from 'supertest';
import { hashApiKey } from '../auth/api-key-secret';
import { startTestApi, TestApi } from '../test-app';

interface Entry {
  id: string;
  keyId: string | null;
  action: string;
  targetType: string;
  targetId: string;
  data: Record<string, unknown>;
  createdAt: string;
}

const uid = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}`;

/** Issue #15 item 6: the audit log of admin actions, over real HTTP on the real PostgreSQL. */
describe('audit log (GET /v1/audit)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(async () => api?.close());

  const http = () => request(api.app.getHttpServer());
  const auth = (key: string) => ({ Authorization: `Bearer ${key}` });
  const entries = async (key: string, query = '') => (await http().get(`/v1/audit${query}`).set(auth(key)).expect(200)).body as { entries: Entry[]; nextCursor: string | null };
  /** The id of a key, found by its prefix in GET /v1/keys. */
  const keyIdOf = async (admin: string, key: string) => {
    const keys = (await http().get('/v1/keys').set(auth(admin)).expect(200)).body.keys as { id: string; prefix: string }[];
    return keys.find((k) => key.startsWith(k.prefix))!.id;
  };

  it('needs a key (401) and the admin scope (403); a bad cursor or limit is a 400 naming it', async () => {
    await http().get('/v1/audit').expect(401);
    const name = uid('tenant');
    for (const scopes of [['read'], ['ingest']] as const) {
      const key = await api.tenantKey([...scopes], name);
      await http().get('/v1/audit').set(auth(key)).expect(403);
    }
    const admin = await api.tenantKey(['admin'], name);
    for (const [query, field] of [
      ['?cursor=abc', 'cursor'],
      ['?cursor=99999999999999999999', 'cursor'],
      ['?cursor=0', 'cursor'],
      ['?limit=0', 'limit'],
      ['?limit=201', 'limit'],
      ['?other=1', 'other'],
    ]) {
      const res = await http().get(`/v1/audit${query}`).set(auth(admin)).expect(400);
      // An unknown parameter is named in the message (zod reports it on the query as a whole).
      if (field === 'other') expect(res.body.error.message).toContain('"other"');
      else expect(res.body.error.details.fields.map((f: { field: string }) => f.field)).toContain(field);
    }
    expect(await entries(admin)).toEqual({ entries: [], nextCursor: null });
  });

  it('records key creation and revocation with the acting key, never the key or its hash', async () => {
    const admin = await api.tenantKey(['admin']);
    const adminId = await keyIdOf(admin, admin);
    const created = (await http().post('/v1/keys').set(auth(admin)).send({ name: 'ci agent', scopes: ['ingest', 'read'] }).expect(201)).body;
    await http().delete(`/v1/keys/${created.id}`).set(auth(admin)).expect(200);

    const page = await entries(admin);
    expect(page.entries.map((e) => e.action)).toEqual(['api-key.revoked', 'api-key.created']);
    const [revoked, made] = page.entries;
    expect(made).toMatchObject({ keyId: adminId, targetType: 'api-key', targetId: created.id, data: { name: 'ci agent', prefix: created.prefix, scopes: ['ingest', 'read'] } });
    expect(revoked).toMatchObject({ keyId: adminId, targetType: 'api-key', targetId: created.id, data: { name: 'ci agent', prefix: created.prefix } });
    expect(Date.parse(made.createdAt)).toBeLessThanOrEqual(Date.parse(revoked.createdAt));
    const text = JSON.stringify(page);
    for (const secret of [created.key, hashApiKey(created.key), admin, hashApiKey(admin)]) expect(text).not.toContain(secret);
    // Nor in the log lines of those requests.
    const logs = JSON.stringify(api.logs);
    expect(logs).not.toContain(created.key);
    expect(logs).not.toContain(hashApiKey(created.key));
  });

  it('records session settings changes, snapshot restores and session deletion; a refused change writes nothing', async () => {
    const admin = await api.tenantKey(['admin', 'ingest', 'read']);
    const adminId = await keyIdOf(admin, admin);
    const id = uid('audited');
    await http().post(`/v1/sessions/${id}/messages`).set(auth(admin)).send({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Fix the failing test' }] }).expect(201);
    await http().patch(`/v1/sessions/${id}`).set(auth(admin)).send({ contextWindow: 1 }).expect(400);
    expect((await entries(admin)).entries).toEqual([]);

    await http()
      .patch(`/v1/sessions/${id}`)
      .set(auth(admin))
      .send({ outputReserve: 4_000, policy: { preset: 'balanced', overrides: { summarizeAbove: 0.5 } } })
      .expect(200);
    const snapshot = (await http().post(`/v1/sessions/${id}/snapshots`).set(auth(admin)).send({ label: 'before' }).expect(201)).body;
    const restored = (await http().post(`/v1/sessions/${id}/snapshots/${snapshot.id}/restore`).set(auth(admin)).expect(200)).body;
    await http().delete(`/v1/sessions/${id}`).set(auth(admin)).expect(200);

    const page = await entries(admin);
    expect(page.entries.map((e) => [e.action, e.targetType, e.targetId, e.keyId])).toEqual([
      ['session.deleted', 'session', id, adminId],
      ['snapshot.restored', 'session', id, adminId],
      ['session.updated', 'session', id, adminId],
    ]);
    expect(page.entries[1].data).toEqual({ snapshotId: snapshot.id, restoredVersion: restored.restoredVersion, version: restored.version });
    expect(page.entries[2].data).toEqual({ outputReserve: 4_000, policy: { preset: 'balanced', overrides: ['summarizeAbove'] } });
    expect(page.entries[0].data).toEqual({});
  });

  it('pages newest first through a keyset cursor, and shows a tenant only its own entries', async () => {
    const admin = await api.tenantKey(['admin']);
    const other = await api.tenantKey(['admin']);
    const names = Array.from({ length: 5 }, (_, i) => `key-${i}`);
    for (const name of names) await http().post('/v1/keys').set(auth(admin)).send({ name, scopes: ['read'] }).expect(201);
    await http().post('/v1/keys').set(auth(other)).send({ name: 'other tenant', scopes: ['read'] }).expect(201);

    const seen: Entry[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await entries(admin, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...page.entries);
      cursor = page.nextCursor;
      pages++;
    } while (cursor && pages < 10);
    expect(pages).toBe(3);
    expect(seen.map((e) => e.data.name)).toEqual([...names].reverse());
    const ids = seen.map((e) => BigInt(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0)));
    expect((await entries(other)).entries.map((e) => e.data.name)).toEqual(['other tenant']);
  });
});
