import request from 'supertest';
import { startTestApi, TestApi } from '../test-app';

const uid = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}`;

/** Issue #15 item 3: every override has a range; prompt and summarizer-model overrides need an admin key. */
describe('policy overrides', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(async () => api?.close());

  const http = () => request(api.app.getHttpServer());
  const auth = (key: string) => ({ Authorization: `Bearer ${key}` });
  const fieldsOf = (res: request.Response) => (res.body.error.details.fields as { field: string }[]).map((f) => f.field);
  const message = { role: 'user', content: 'hello' };

  it('refuses an override outside its range with a 400 naming the field, on create, append and update; nothing is stored', async () => {
    const tenant = uid('tenant');
    const key = await api.tenantKey(['ingest', 'read'], tenant);
    const admin = await api.tenantKey(['admin'], tenant);
    const policy = { preset: 'two-layer', overrides: { chunkSize: 100, compressionRatio: 2 } };
    const created = await http().post('/v1/sessions').set(auth(key)).send({ id: uid('create'), policy }).expect(400);
    expect(fieldsOf(created)).toEqual(['policy.overrides.chunkSize', 'policy.overrides.compressionRatio']);
    expect(created.body.error.message).toContain('must be 2000..10000000');

    const appendId = uid('append');
    const appended = await http().post(`/v1/sessions/${appendId}/messages`).set(auth(key)).send({ model: 'gpt-4o', policy, messages: [message] }).expect(400);
    expect(fieldsOf(appended)).toEqual(['policy.overrides.chunkSize', 'policy.overrides.compressionRatio']);
    await http().get(`/v1/sessions/${appendId}`).set(auth(key)).expect(404);

    const updateId = uid('update');
    await http().post(`/v1/sessions/${updateId}/messages`).set(auth(key)).send({ model: 'gpt-4o', messages: [message] }).expect(201);
    // PATCH /v1/sessions/:id needs admin; ranges hold for admins too.
    const updated = await http().patch(`/v1/sessions/${updateId}`).set(auth(admin)).send({ policy: { preset: 'balanced', overrides: { triggerFraction: 0 } } }).expect(400);
    expect(fieldsOf(updated)).toEqual(['policy.overrides.triggerFraction']);
    expect((await http().get(`/v1/sessions/${updateId}`).set(auth(key)).expect(200)).body.policy).toEqual({ preset: 'balanced', overrides: {} });
  });

  it('takes prompt and summarizer-model overrides only from an admin key (403 naming the fields otherwise)', async () => {
    const tenant = uid('tenant');
    const ingest = await api.tenantKey(['ingest', 'read'], tenant);
    const admin = await api.tenantKey(['admin'], tenant);
    const policy = { preset: 'offload-compact', overrides: { instructions: 'Summarize in French.', model: 'gpt-4o', preserveCount: 4 } };

    const id = uid('prompt');
    const refused = await http().post(`/v1/sessions/${id}/messages`).set(auth(ingest)).send({ model: 'gpt-4o', policy, messages: [message] }).expect(403);
    expect(fieldsOf(refused)).toEqual(['policy.overrides.instructions', 'policy.overrides.model']);
    expect(refused.body.error.message).toContain('need an admin key');
    await http().get(`/v1/sessions/${id}`).set(auth(ingest)).expect(404);
    expect(fieldsOf(await http().post('/v1/sessions').set(auth(ingest)).send({ id, policy }).expect(403))).toEqual(['policy.overrides.instructions', 'policy.overrides.model']);

    // The same key may set the other overrides.
    await http().post(`/v1/sessions/${id}/messages`).set(auth(ingest)).send({ model: 'gpt-4o', policy: { preset: 'offload-compact', overrides: { preserveCount: 4 } }, messages: [message] }).expect(201);
    // An admin key sets prompts, on append as on PATCH (which needs admin anyway).
    const adminId = uid('admin');
    await http().post(`/v1/sessions/${adminId}/messages`).set(auth(admin)).send({ model: 'gpt-4o', policy, messages: [message] }).expect(201);
    expect((await http().get(`/v1/sessions/${adminId}`).set(auth(ingest)).expect(200)).body.policy).toEqual(policy);
    const patch = { policy: { preset: 'checkpoint-aging', overrides: { agingInstructions: 'Keep every ticket id.' } } };
    await http().patch(`/v1/sessions/${id}`).set(auth(admin)).send(patch).expect(200);
    expect((await http().get(`/v1/sessions/${id}`).set(auth(ingest)).expect(200)).body.policy).toEqual(patch.policy);
  });
});
