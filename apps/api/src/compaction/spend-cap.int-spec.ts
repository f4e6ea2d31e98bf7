import { FakeLlm, InProcessTestStack, RunningApp, startTestStack } from '@compactor/testing';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { jobFinished, startTestApi, TestApi } from '../test-app';

const uid = (label: string) => `${label}-${randomBytes(4).toString('hex')}`;

/**
 * Issue #15 item 3: per-tenant summarizer spend caps, enforced by the worker before each LLM call.
 * A two-layer run summarizes a 300,000-character result in six 50,000-character chunks (one
 * LLM call each, about 12,000 prompt tokens per call on the fake upstream); with a daily cap of
 * 1,000 tokens the first call passes (nothing spent yet) and the second is refused.
 */
describe('summarizer spend caps', () => {
  let stack: InProcessTestStack<TestApi>;
  let api: TestApi;
  let worker: RunningApp;
  let fake: FakeLlm;

  beforeAll(async () => {
    stack = await startTestStack({ label: 'spend-cap', llm: { summarize: () => 'CHUNK-SUMMARY' }, api: () => startTestApi() });
    ({ api, worker, fake } = stack);
  }, 60_000);
  afterAll(() => stack?.close());
  const http = () => request(api.app.getHttpServer());
  const auth = (key: string) => ({ Authorization: `Bearer ${key}` });

  const bigResult = () => {
    const lines: string[] = [];
    let length = 0;
    for (let i = 1; length < 300_000; i += 1) {
      const line = `${String(i).padStart(6, '0')} INFO shard[${i % 11}] copied segment ${i} (${(i * 53) % 4096} KiB)`;
      lines.push(line);
      length += line.length + 1;
    }
    return lines.join('\n').slice(0, 300_000);
  };
  const appendBig = (key: string, id: string) =>
    http()
      .post(`/v1/sessions/${id}/messages`)
      .set(auth(key))
      .send({
        model: 'gpt-4o',
        policy: 'two-layer',
        format: 'openai',
        messages: [
          { role: 'user', content: 'Is the copy finished?' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_copy', type: 'function', function: { name: 'read_log', arguments: '{"path":"copy.log"}' } }] },
          { role: 'tool', tool_call_id: 'call_copy', content: bigResult() },
        ],
      })
      .expect(201);
  const chunkCalls = (from: number, marker: string) =>
    fake.requests.slice(from).filter((r) => r.path.endsWith('/chat/completions') && JSON.stringify(r.body).includes(marker)).length;

  it('stops a capped compaction before its next LLM call: skipped (spend-cap) with an event, the context still served whole', async () => {
    const tenant = uid('capped');
    const key = await api.tenantKey(['ingest', 'read', 'admin'], tenant);
    await http().patch('/v1/tenant').set(auth(key)).send({ limits: { summarizerTokensPerDay: 1_000 } }).expect(200);

    const id = uid('capped-session');
    const before = fake.requests.length;
    const res = await appendBig(key, id);
    const job = await jobFinished(api, key, res.body.compaction.jobId, worker);
    expect(job).toMatchObject({ status: 'skipped', reason: 'spend-cap' });
    // One call passed the check (nothing was spent yet); it spent more than the cap, so the second was never made.
    expect(chunkCalls(before, 'segment')).toBe(1);

    const events = (await http().get(`/v1/sessions/${id}/events`).set(auth(key)).expect(200)).body.events as { type: string; line: string; data: Record<string, unknown> }[];
    const capped = events.find((e) => e.type === 'spend-cap');
    expect(capped?.line).toContain('limits.summarizerTokensPerDay');
    expect(capped?.data).toMatchObject({ limit: 'summarizerTokensPerDay', cap: 1_000 });
    expect(capped!.data.spent as number).toBeGreaterThan(1_000);

    // Settings show today's spend against the cap.
    const tenantView = (await http().get('/v1/tenant').set(auth(key)).expect(200)).body;
    expect(tenantView.limits.summarizerTokensPerDay).toBe(1_000);
    expect(tenantView.spendToday.summarizerTokens).toBe(capped!.data.spent);

    // Nothing was committed: the context serves the result as appended (it is over the trigger, within the budget).
    const context = (await http().get(`/v1/sessions/${id}/context?format=openai`).set(auth(key)).expect(200)).body;
    expect(context.messages.find((m: { role: string }) => m.role === 'tool').content).toContain('copied segment 1 ');

    // The next run of the same tenant the same day makes no call at all.
    const second = uid('capped-again');
    const from = fake.requests.length;
    const again = await jobFinished(api, key, (await appendBig(key, second)).body.compaction.jobId, worker);
    expect(again).toMatchObject({ status: 'skipped', reason: 'spend-cap' });
    expect(chunkCalls(from, 'segment')).toBe(0);
  });

  it('leaves a tenant without caps alone: all six chunks are summarized', async () => {
    const key = await api.tenantKey(['ingest', 'read'], uid('uncapped'));
    const before = fake.requests.length;
    const res = await appendBig(key, uid('uncapped-session'));
    const job = await jobFinished(api, key, res.body.compaction.jobId, worker);
    expect(job).toMatchObject({ status: 'succeeded' });
    expect(chunkCalls(before, 'segment')).toBe(6);
  });
});
