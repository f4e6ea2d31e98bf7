import { FakeLlm, InProcessTestStack, longSweAgentSession, pollUntil, RunningApp, startTestStack } from '@compactor/testing';
import request from 'supertest';
import { startTestApi, TestApi } from '../test-app';

const LONG = longSweAgentSession();

/**
 * Seed 004's goal-aware compression over the wire: with an LLM summarizer (the fake OpenAI
 * upstream), the summary request carries the session's goal record — goal, locked decisions,
 * user constraints, next step — and the compacted context keeps them in its goal block.
 */
describe('the goal record feeds the goal-aware summary prompt', () => {
  let stack: InProcessTestStack<TestApi>;
  let api: TestApi;
  let worker: RunningApp;
  let fake: FakeLlm;
  let key: string;

  beforeAll(async () => {
    stack = await startTestStack({ label: 'goal-aware', api: () => startTestApi() });
    ({ api, worker, fake, key } = stack);
  }, 60_000);
  afterAll(() => stack?.close());
  const http = () => request(api.app.getHttpServer());
  const auth = () => ({ Authorization: `Bearer ${key}` });

  it('PUT goal, then a compaction that summarizes: the summarizer is told the goal, and the context keeps it', async () => {
    const id = `goal-aware-${Date.now().toString(36)}`;
    const append = (messages: unknown[]) =>
      http()
        .post(`/v1/sessions/${id}/messages`)
        .set(auth())
        // Summarize at every run, so the LLM is called.
        .send({ model: 'gpt-4o', contextWindow: 16_000, outputReserve: 2_000, policy: { preset: 'balanced', overrides: { summarizeAbove: 0, summarizeDownTo: 0 } }, format: 'openai', messages })
        .expect(201);
    await append(LONG.slice(0, 4));
    await http()
      .put(`/v1/sessions/${id}/goal`)
      .set(auth())
      .send({ goal: 'Make the YAML dumper keep key order', decisions: [{ text: 'Never touch the C extension', locked: true }], constraints: ['Keep Python 3.8 support'], nextStep: 'add a regression test' })
      .expect(200);

    let jobId: string | undefined;
    for (let i = 4; i < LONG.length && !jobId; i += 8) jobId = (await append(LONG.slice(i, i + 8))).body.compaction.jobId;
    expect(jobId).toBeDefined();
    const job = await pollUntil(
      async () => {
        const j = (await http().get(`/v1/jobs/${jobId}`).set(auth()).expect(200)).body;
        return ['succeeded', 'skipped', 'failed'].includes(j.status) ? j : undefined;
      },
      { timeoutMs: 60_000, what: `job ${jobId} (worker output: ${worker.output().slice(-1500)})` },
    );
    expect(job.status).toBe('succeeded');
    expect(job.llmCalls).toBeGreaterThan(0);

    const prompts = fake.requests.filter((r) => r.path.endsWith('/chat/completions')).map((r) => JSON.stringify(r.body));
    expect(prompts.length).toBeGreaterThan(0);
    for (const p of prompts) {
      expect(p).toContain('Session goal: ACTIVE GOAL: Make the YAML dumper keep key order');
      expect(p).toContain('Never touch the C extension');
      expect(p).toContain('Keep Python 3.8 support');
      expect(p).toContain('add a regression test');
    }
    const ctx = (await http().get(`/v1/sessions/${id}/context?format=canonical`).set(auth()).expect(200)).body;
    const goalBlock = JSON.stringify(ctx.messages.filter((m: { tags?: string[] }) => m.tags?.includes('goal')));
    expect(goalBlock).toContain('🔒 Never touch the C extension');
    expect(goalBlock).toContain('Keep Python 3.8 support');
  }, 180_000);
});
