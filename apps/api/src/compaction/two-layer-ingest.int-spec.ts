import { FakeLlm, InProcessTestStack, RunningApp, startTestStack } from '@compactor/testing';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { jobFinished, startTestApi, TestApi } from '../test-app';

/**
 * Seed 002's layer 1 end to end: a tool result over 50,000 characters, appended over HTTP, makes
 * an `ingest` job; a real worker splits it into 50,000-character chunks and has the LLM (the fake
 * OpenAI upstream) summarize each, then the context serves the summary in its place while the
 * history keeps the result byte for byte.
 */
describe('two-layer: a large tool result is chunked and summarized at ingest', () => {
  let stack: InProcessTestStack<TestApi>;
  let api: TestApi;
  let worker: RunningApp;
  let fake: FakeLlm;
  let key: string;

  beforeAll(async () => {
    stack = await startTestStack({ label: 'two-layer', llm: { summarize: (r) => `CHUNK-SUMMARY(${JSON.stringify(r.body).length} chars)` }, api: () => startTestApi() });
    ({ api, worker, fake, key } = stack);
  }, 60_000);
  afterAll(() => stack?.close());
  const http = () => request(api.app.getHttpServer());
  const auth = () => ({ Authorization: `Bearer ${key}` });

  it('appends a 120,000-character result: an ingest job has the LLM summarize its three chunks; the context serves the summary, the history the result', async () => {
    const id = `two-layer-${randomBytes(4).toString('hex')}`;
    // A real-looking listing: numbered lines of a long log, 120,000 characters.
    const lines: string[] = [];
    for (let i = 1; lines.join('\n').length < 120_000; i += 1) lines.push(`${String(i).padStart(6, '0')} INFO worker[${i % 7}] processed batch ${i} in ${(i * 37) % 1000} ms`);
    const output = lines.join('\n').slice(0, 120_000);
    const before = fake.requests.length;
    const res = await http()
      .post(`/v1/sessions/${id}/messages`)
      .set(auth())
      .send({
        model: 'gpt-4o',
        policy: 'two-layer',
        format: 'openai',
        messages: [
          { role: 'user', content: 'Why is the worker slow?' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_log', type: 'function', function: { name: 'read_log', arguments: '{"path":"worker.log"}' } }] },
          { role: 'tool', tool_call_id: 'call_log', content: output },
        ],
      })
      .expect(201);
    expect(res.body.compaction.scheduled).toBe(true);
    const job = await jobFinished(api, key, res.body.compaction.jobId, worker);
    expect(job).toMatchObject({ status: 'succeeded', trigger: 'ingest' });

    // Three chunk summaries (50,000 + 50,000 + 20,000 characters), each call carrying its own chunk.
    const calls = fake.requests.slice(before).filter((r) => r.path.endsWith('/chat/completions'));
    const chunkCalls = calls.filter((r) => JSON.stringify(r.body).includes('one chunk of a very large tool result'));
    expect(chunkCalls).toHaveLength(3);
    expect(chunkCalls.map((r) => JSON.stringify(r.body)).every((b, k) => b.includes(output.slice(k * 50_000, k * 50_000 + 200).split('\n')[1]))).toBe(true);
    expect(job.llmCalls).toBe(calls.length);

    // The context serves the summary in the result's place; the history keeps the result exactly.
    const context = (await http().get(`/v1/sessions/${id}/context?format=openai`).set(auth()).expect(200)).body;
    const tool = context.messages.find((m: { role: string }) => m.role === 'tool');
    expect(tool.tool_call_id).toBe('call_log');
    expect(tool.content).toContain('CHUNK-SUMMARY');
    expect(tool.content.length).toBeLessThan(output.length / 5);
    const history = (await http().get(`/v1/sessions/${id}/messages`).set(auth()).expect(200)).body.messages;
    expect(history[2].message.content).toBe(output);
  });
});
