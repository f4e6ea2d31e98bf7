import { pollUntil } from '@compactor/testing';
import { get as httpGet } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { startTestApi, TestApi } from '../test-app';

describe('API keys: last use', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(async () => api?.close());

  it('records when a key was last used (shown by GET /v1/keys); an unused key has none', async () => {
    const admin = await api.tenantKey(['admin', 'read', 'ingest']);
    const http = () => request(api.app.getHttpServer());
    const created = (await http().post('/v1/keys').set({ Authorization: `Bearer ${admin}` }).send({ name: 'agent', scopes: ['read'] }).expect(201)).body;
    const list = async () => (await http().get('/v1/keys').set({ Authorization: `Bearer ${admin}` }).expect(200)).body.keys as { id: string; lastUsedAt: string | null }[];
    expect((await list()).find((k) => k.id === created.id)?.lastUsedAt).toBeNull();

    const before = Date.now();
    await http().get('/v1/sessions').set({ Authorization: `Bearer ${created.key}` }).expect(200);
    const used = await pollUntil(async () => (await list()).find((k) => k.id === created.id)?.lastUsedAt ?? undefined, { timeoutMs: 5_000, what: 'lastUsedAt to be set' });
    expect(new Date(used).getTime()).toBeGreaterThanOrEqual(before - 1_000);
  });
});

describe('API keys: expiry', () => {
  let api: TestApi;
  // Streams re-check their key at every heartbeat: a short one keeps the test quick.
  beforeAll(async () => {
    api = await startTestApi({ EVENTS_HEARTBEAT_MS: '200' });
  });
  afterAll(async () => api?.close());
  const http = () => request(api.app.getHttpServer());
  const as = (key: string) => ({ Authorization: `Bearer ${key}` });
  const DAY = 24 * 3600 * 1000;
  type KeyView = { id: string; key: string; expiresAt: string | null; revokedAt: string | null };
  const fieldsOf = (res: request.Response) => (res.body.error.details.fields as { field: string }[]).map((f) => f.field);

  it('takes expiresInDays or expiresAt, shows it in the listing and the audit log; no expiry means never', async () => {
    const admin = await api.tenantKey(['admin', 'read']);
    const before = Date.now();
    const inDays = (await http().post('/v1/keys').set(as(admin)).send({ name: 'ninety', scopes: ['read'], expiresInDays: 90 }).expect(201)).body as KeyView;
    const at = new Date(Date.now() + 7 * DAY).toISOString();
    const exact = (await http().post('/v1/keys').set(as(admin)).send({ name: 'exact', scopes: ['read'], expiresAt: at }).expect(201)).body as KeyView;
    const never = (await http().post('/v1/keys').set(as(admin)).send({ name: 'never', scopes: ['read'] }).expect(201)).body as KeyView;
    const explicitNever = (await http().post('/v1/keys').set(as(admin)).send({ name: 'never2', scopes: ['read'], expiresAt: null }).expect(201)).body as KeyView;

    const ninety = new Date(inDays.expiresAt!).getTime();
    expect(ninety).toBeGreaterThanOrEqual(before + 90 * DAY);
    expect(ninety).toBeLessThanOrEqual(Date.now() + 90 * DAY);
    expect(exact.expiresAt).toBe(at);
    expect([never.expiresAt, explicitNever.expiresAt]).toEqual([null, null]);

    const listed = (await http().get('/v1/keys').set(as(admin)).expect(200)).body.keys as KeyView[];
    const expiryOf = (id: string) => listed.find((k) => k.id === id)?.expiresAt;
    expect([expiryOf(inDays.id), expiryOf(exact.id), expiryOf(never.id)]).toEqual([inDays.expiresAt, at, null]);
    const audit = (await http().get('/v1/audit').set(as(admin)).expect(200)).body.entries as { action: string; targetId: string; data: Record<string, unknown> }[];
    expect(audit.find((e) => e.action === 'api-key.created' && e.targetId === exact.id)?.data.expiresAt).toBe(at);
    // The keys work until then.
    await http().get('/v1/sessions').set(as(inDays.key)).expect(200);
    await http().get('/v1/sessions').set(as(exact.key)).expect(200);
  });

  it('refuses an expiry in the past, beyond 3650 days, malformed, or given twice: 400 naming the field', async () => {
    const admin = await api.tenantKey(['admin']);
    const cases: [Record<string, unknown>, string][] = [
      [{ expiresInDays: 0 }, 'expiresInDays'],
      [{ expiresInDays: 3651 }, 'expiresInDays'],
      [{ expiresInDays: 1.5 }, 'expiresInDays'],
      [{ expiresInDays: '30' }, 'expiresInDays'],
      [{ expiresAt: new Date(Date.now() - 60_000).toISOString() }, 'expiresAt'],
      [{ expiresAt: new Date(Date.now() + 3651 * DAY).toISOString() }, 'expiresAt'],
      [{ expiresAt: 'tomorrow' }, 'expiresAt'],
      [{ expiresAt: 1_900_000_000_000 }, 'expiresAt'],
      [{ expiresInDays: 30, expiresAt: new Date(Date.now() + DAY).toISOString() }, 'expiresAt'],
    ];
    for (const [extra, field] of cases) {
      const res = await http().post('/v1/keys').set(as(admin)).send({ name: 'bad', scopes: ['read'], ...extra });
      expect([JSON.stringify(extra), res.status, res.status === 400 ? fieldsOf(res) : res.body]).toEqual([JSON.stringify(extra), 400, [field]]);
    }
    const listed = (await http().get('/v1/keys').set(as(admin)).expect(200)).body.keys as { name: string }[];
    expect(listed.filter((k) => k.name === 'bad')).toEqual([]);
  });

  it('an expired key is refused like a revoked one, saying it expired, on REST (with or without a body) and on the proxy; no lookup is cached past the expiry', async () => {
    const admin = await api.tenantKey(['admin', 'read', 'ingest']);
    // Expires 1.5 s from now: it works first, then is refused from that instant on.
    const expiresAt = new Date(Date.now() + 1500).toISOString();
    const created = (await http().post('/v1/keys').set(as(admin)).send({ name: 'short', scopes: ['read', 'ingest'], expiresAt }).expect(201)).body as KeyView;
    await http().get('/v1/sessions').set(as(created.key)).expect(200);
    const refused = await pollUntil(
      async () => {
        const res = await http().get('/v1/sessions').set(as(created.key));
        return res.status === 200 ? undefined : res;
      },
      { what: 'the key to expire', timeoutMs: 10_000 },
    );
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(expiresAt));
    expect(refused.status).toBe(401);
    expect(refused.body.error).toEqual({ code: 'unauthorized', message: `The API key expired at ${expiresAt}; create a new key` });
    // A request with a body is refused by the body gate before its body is read, with the same reason.
    const withBody = await http().post('/v1/sessions/expired-key/messages').set(as(created.key)).send({ messages: [{ role: 'user', content: 'hi' }] });
    expect([withBody.status, withBody.body.error?.message]).toEqual([401, `The API key expired at ${expiresAt}; create a new key`]);
    const proxied = await fetch(`${baseUrl()}/v1/proxy/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-compactor-key': created.key, 'x-compactor-session': 'expired-proxy', authorization: 'Bearer sk-upstream' },
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(proxied.status).toBe(401);
    expect(((await proxied.json()) as { error: { message: string; code: string } }).error).toMatchObject({
      code: 'compactor_key_invalid',
      message: `Compactor proxy: the X-Compactor-Key expired at ${expiresAt}; create a new key`,
    });
    // The listing shows the expiry; a revoked or unknown key keeps the old message (nothing is said about whether it exists).
    const listed = (await http().get('/v1/keys').set(as(admin)).expect(200)).body.keys as KeyView[];
    expect(listed.find((k) => k.id === created.id)).toMatchObject({ expiresAt, revokedAt: null });
    const unknown = await http().get('/v1/sessions').set(as('ck_not_a_key')).expect(401);
    expect(unknown.body.error.message).toBe('The API key is unknown or revoked');
    await http().delete(`/v1/keys/${created.id}`).set(as(admin)).expect(200);
    expect((await http().get('/v1/sessions').set(as(created.key)).expect(401)).body.error.message).toBe('The API key is unknown or revoked');
  });

  it("an expiring key's event streams end within a heartbeat of its expiry; the tenant's other streams stay", async () => {
    const admin = await api.tenantKey(['admin', 'read', 'ingest']);
    const id = `expiry-stream-${Date.now().toString(36)}`;
    await http().post('/v1/sessions').set(as(admin)).send({ id }).expect(201);
    const expiresAt = new Date(Date.now() + 1500).toISOString();
    const created = (await http().post('/v1/keys').set(as(admin)).send({ name: 'streamer', scopes: ['read'], expiresAt }).expect(201)).body as KeyView;
    const expiring = await openStream(`${baseUrl()}/v1/sessions/${id}/events`, created.key);
    const other = await openStream(`${baseUrl()}/v1/sessions/${id}/events`, admin);
    expect([expiring.status, other.status]).toEqual([200, 200]);
    await pollUntil(async () => (expiring.ended() ? true : undefined), { what: 'the expired key’s stream to end', timeoutMs: 10_000 });
    // It ended because the key expired, not before (the heartbeat is 200 ms).
    expect(expiring.endedAt()).toBeGreaterThanOrEqual(Date.parse(expiresAt));
    expect(expiring.endedAt()).toBeLessThan(Date.parse(expiresAt) + 2_000);
    expect(other.ended()).toBe(false);
    other.close();
  });

  const baseUrl = () => {
    const address = api.app.getHttpServer().address() as AddressInfo;
    return `http://127.0.0.1:${address.port}`;
  };
});

/** An open text/event-stream response: its status, and when the server ended it. */
function openStream(url: string, key: string): Promise<{ status: number; ended: () => boolean; endedAt: () => number; close: () => void }> {
  return new Promise((resolve, reject) => {
    const req = httpGet(url, { headers: { Authorization: `Bearer ${key}`, accept: 'text/event-stream' } }, (res) => {
      let endedAt = 0;
      res.on('data', () => undefined);
      res.on('end', () => (endedAt = Date.now()));
      res.on('close', () => (endedAt ||= Date.now()));
      resolve({ status: res.statusCode ?? 0, ended: () => endedAt > 0, endedAt: () => endedAt, close: () => req.destroy() });
    });
    req.on('error', reject);
  });
}
