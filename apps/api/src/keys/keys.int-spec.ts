import { pollUntil } from '@compactor/testing';
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
