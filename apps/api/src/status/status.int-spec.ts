import { FakeLlm, pollUntil, RunningApp, startBuiltApp, startFakeLlm } from '@compactor/testing';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { startTestApi, TestApi } from '../test-app';

const DATA = path.resolve(__dirname, '../../../../testdata/swe-agent-trajectories');
const load = (file: string) => JSON.parse(readFileSync(path.join(DATA, file), 'utf8')).history as Record<string, unknown>[];
const FIRST = load(readdirSync(DATA).filter((f) => f.endsWith('.traj')).sort()[0]);

const WRONG_OPENAI_KEY = 'sk-status-wrong-key-0123456789abcdef';

interface WorkerView {
  id: string;
  startedAt: string;
  lastSeenAt: string;
  summarizer: { provider: string; model: string; endpoint: string | null; keyConfigured: boolean; health: string; healthDetail: string };
  jobs: { completed: number; failed: number; last: { name: string; outcome: string; at: string } | null };
  llm: { calls: number; errors: number; lastSuccessAt: string | null; lastErrorAt: string | null; lastError: { kind: string; message: string } | null };
}

/**
 * GET /v1/status on the real API and Redis with real worker processes: each worker's heartbeat
 * lists it with its summarizer, its last job and whether its LLM answers; a stopped worker drops
 * out at once (its key is deleted on shutdown, not left to expire).
 */
describe('GET /v1/status', () => {
  let api: TestApi;
  let fake: FakeLlm;
  let local: RunningApp | undefined;
  let remote: RunningApp | undefined;
  let adminKey: string;
  const http = () => request(api.app.getHttpServer());
  const auth = (key: string) => ({ Authorization: `Bearer ${key}` });
  const status = async (key = adminKey) => (await http().get('/v1/status').set(auth(key)).expect(200)).body as { workers: WorkerView[] } & Record<string, unknown>;
  const workerEnv = (extra: Record<string, string>) => ({
    DATABASE_URL: api.config.DATABASE_URL,
    REDIS_URL: api.config.REDIS_URL,
    QUEUE_PREFIX: api.config.QUEUE_PREFIX,
    LOG_LEVEL: 'warn',
    ...extra,
  });
  const finished = (key: string, jobId: string) =>
    pollUntil(
      async () => {
        const job = (await http().get(`/v1/jobs/${jobId}`).set(auth(key)).expect(200)).body;
        return ['succeeded', 'skipped', 'failed'].includes(job.status) ? (job as { status: string }) : undefined;
      },
      { timeoutMs: 30_000, what: `job ${jobId} to finish` },
    );
  /** A session of real agent turns, with a policy that summarizes whatever the fill level, then a manual compaction. */
  const compactNewSession = async (key: string, id: string) => {
    await http()
      .post(`/v1/sessions/${id}/messages`)
      .set(auth(key))
      .send({ model: 'gpt-4o', contextWindow: 128_000, policy: { preset: 'balanced', overrides: { triggerFraction: 1, summarizeAbove: 0, summarizeDownTo: 0 } }, format: 'openai', messages: FIRST.slice(0, 24) })
      .expect(201);
    const res = await http().post(`/v1/sessions/${id}/compact`).set(auth(key)).send({}).expect(202);
    return res.body.job.id as string;
  };

  beforeAll(async () => {
    fake = await startFakeLlm({ apiKey: 'sk-the-right-key-for-the-fake' });
    api = await startTestApi();
    adminKey = await api.tenantKey(['admin']);
  }, 60_000);
  afterAll(async () => {
    await local?.stop();
    await remote?.stop();
    await api?.close();
    await fake?.close();
  });

  it('needs the admin scope (it names worker hosts and endpoints); GET /v1/status/caller tells any live key its scopes', async () => {
    await http().get('/v1/status').expect(401);
    await http().get('/v1/status').set(auth('ck_not_a_key')).expect(401);
    const readKey = await api.tenantKey(['read', 'ingest']);
    const refused = await http().get('/v1/status').set(auth(readKey)).expect(403);
    expect(refused.body.error.message).toContain('admin');
    expect((await status()).caller).toMatchObject({ scopes: ['admin'] });
    const caller = (await http().get('/v1/status/caller').set(auth(readKey)).expect(200)).body;
    expect(caller).toEqual({ tenantId: expect.any(String), keyId: expect.any(String), scopes: ['read', 'ingest'] });
    await http().get('/v1/status/caller').set(auth('ck_not_a_key')).expect(401);
  });

  it('lists no worker and an empty queue before any worker runs, and the presets with their triggers', async () => {
    const body = await status();
    expect(body.workers).toEqual([]);
    expect(body.queueDepth).toEqual({ waiting: 0, active: 0, delayed: 0, failed: 0 });
    expect(body.presets).toEqual([
      { name: 'balanced', isDefault: true, trigger: { fraction: 0.9, base: 'budget' } },
      { name: 'factor3', isDefault: false, trigger: { fraction: 0.5, base: 'budget' } },
      { name: 'watermark', isDefault: false, trigger: { fraction: 0.8, base: 'budget' } },
      { name: 'two-layer', isDefault: false, trigger: { fraction: 0.8, base: 'budget' } },
      { name: 'offload-compact', isDefault: false, trigger: { fraction: 0.8, base: 'budget' } },
      { name: 'checkpoint-aging', isDefault: false, trigger: { fraction: 0.8, base: 'available' } },
    ]);
    expect(Date.now() - Date.parse(body.checkedAt as string)).toBeLessThan(10_000);
  });

  it('shows a local worker as healthy, then the outcome of the last job it ran', async () => {
    local = await startBuiltApp('worker', workerEnv({ COMPACTOR_SUMMARIZER: 'local' }), /Compactor worker started/);
    const [worker] = (await pollUntil(async () => ((await status()).workers.length === 1 ? (await status()).workers : undefined), { what: 'the local worker to be listed' })) as WorkerView[];
    expect(worker.summarizer).toEqual({
      provider: 'local',
      model: expect.any(String),
      endpoint: null,
      keyConfigured: false,
      timeoutMs: expect.any(Number),
      health: 'healthy',
      healthDetail: 'Offline summarizer: needs no model or network.',
    });
    expect(worker.jobs).toEqual({ completed: 0, failed: 0, last: null });
    expect(Date.now() - Date.parse(worker.lastSeenAt)).toBeLessThan(15_000);

    const key = await api.tenantKey();
    const job = await finished(key, await compactNewSession(key, 'status-local-1'));
    const after = await pollUntil(
      async () => {
        const w = (await status()).workers.find((x) => x.id === worker.id);
        return w?.jobs.last?.name === 'session.compact' ? w : undefined;
      },
      // The heartbeat is written every 10 s.
      { timeoutMs: 20_000, what: 'the heartbeat to report the job' },
    );
    // The hourly maintenance job may have run too: the last job is the compaction, with the status it ended with.
    expect(after.jobs).toMatchObject({ failed: 0, last: { name: 'session.compact', outcome: job.status } });
    expect(after.jobs.completed).toBeGreaterThanOrEqual(1);
    expect(after.llm.errors).toBe(0);
  }, 60_000);

  it('shows a remote summarizer without its key, unknown until its first call, failing when the provider rejects it', async () => {
    remote = await startBuiltApp(
      'worker',
      workerEnv({ COMPACTOR_SUMMARIZER: 'openai', COMPACTOR_SUMMARIZER_BASE_URL: fake.openaiBaseUrl, COMPACTOR_SUMMARIZER_MODEL: 'gpt-4o-mini', OPENAI_API_KEY: WRONG_OPENAI_KEY }),
      /Compactor worker started/,
    );
    const listed = await pollUntil(async () => (await status()).workers.find((w) => w.summarizer.provider === 'openai'), { what: 'the openai worker to be listed' });
    expect(listed.summarizer).toMatchObject({ provider: 'openai', model: 'gpt-4o-mini', endpoint: fake.openaiBaseUrl, keyConfigured: true, health: 'unknown' });

    // Only the remote worker may take the job: stop the local one (its key goes at once, not after the TTL).
    await local?.stop();
    local = undefined;
    const gone = await pollUntil(async () => ((await status()).workers.length === 1 ? true : undefined), { timeoutMs: 3_000, what: 'the stopped worker to drop out' });
    expect(gone).toBe(true);

    const key = await api.tenantKey();
    await compactNewSession(key, 'status-remote-1');
    await fake.waitForRequests(1);
    const failing = await pollUntil(
      async () => {
        const body = await http().get('/v1/status').set(auth(adminKey)).expect(200);
        const w = (body.body.workers as WorkerView[]).find((x) => x.id === listed.id);
        return w?.summarizer.health === 'failing' ? { w, text: body.text } : undefined;
      },
      { timeoutMs: 25_000, what: 'the heartbeat to report the failed LLM call' },
    );
    expect(failing.w.llm).toMatchObject({ errors: expect.any(Number), lastError: { kind: 'auth' } });
    expect(failing.w.llm.errors).toBeGreaterThanOrEqual(1);
    expect(failing.w.summarizer.healthDetail).toMatch(/^Last call failed: .*HTTP 401 authentication failed/);
    // The fake's 401 quotes the key it was sent; the status never does.
    expect(failing.text).not.toContain(WRONG_OPENAI_KEY);
  }, 90_000);
});
