import { loadSweAgentHistory, pollUntil, RunningApp, startWorkerFor, sweAgentFiles } from '@compactor/testing';
import request from 'supertest';
import { jobFinished, startTestApi, TestApi } from '../test-app';

/**
 * A long agent run built from the real SWE-agent sessions of testdata/: the five runs one after
 * another, `rounds` times, tool-call ids made unique per round (the system prompt of the first only).
 */
function replay(rounds: number): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (let r = 0; r < rounds; r++) {
    for (const [i, file] of sweAgentFiles().entries()) {
      for (const m of loadSweAgentHistory(file)) {
        if (m.role === 'system' && (r > 0 || i > 0)) continue;
        out.push(JSON.parse(JSON.stringify(m).replace(/"(call_[A-Za-z0-9_-]+)"/g, `"$1_r${r}"`)) as Record<string, unknown>);
      }
    }
  }
  return out;
}

/** Splits a history into turns: each assistant message with the tool results and user messages that follow it. */
function turns(history: Record<string, unknown>[]): Record<string, unknown>[][] {
  const out: Record<string, unknown>[][] = [];
  for (const m of history) {
    if (m.role === 'assistant' || out.length === 0) out.push([]);
    out[out.length - 1].push(m);
  }
  return out;
}

/** SPEC.md "Budget": one budget from request to worker, no compaction loops. */
describe('one budget, over HTTP with a worker', () => {
  let api: TestApi;
  let worker: RunningApp;
  let key: string;

  beforeAll(async () => {
    api = await startTestApi();
    key = await api.tenantKey();
    worker = await startWorkerFor(api.config);
  }, 60_000);
  afterAll(async () => {
    await worker?.stop();
    await api?.close();
  });
  const http = () => request(api.app.getHttpServer());
  const auth = () => ({ Authorization: `Bearer ${key}` });
  const finished = (id: string) => jobFinished(api, key, id, worker);

  it("defaults the output reserve to the model's maximum output capped at 25% of the window", async () => {
    const res = await http().post('/v1/sessions').set(auth()).send({ id: 'budget-gpt41-32k', model: 'gpt-4.1', contextWindow: 32_000 }).expect(201);
    expect(res.body.outputReserve).toBe(8_000);
    expect(res.body.usage.budget).toBe(32_000 - 8_000 - 640);
    // Without a window the model's own (1M) keeps its 32,768 maximum output.
    const wide = await http().post('/v1/sessions').set(auth()).send({ id: 'budget-gpt41', model: 'gpt-4.1' }).expect(201);
    expect(wide.body.outputReserve).toBe(32_768);
  });

  it('refuses a budget under the floor with a 400 naming contextWindow and outputReserve, with the numbers; nothing is created', async () => {
    for (const [path, body] of [
      ['/v1/sessions', { id: 'budget-floor', model: 'gpt-4.1', contextWindow: 32_000, outputReserve: 32_768 }],
      ['/v1/sessions/budget-floor/messages', { model: 'gpt-4.1', contextWindow: 32_000, outputReserve: 30_000, messages: [{ role: 'user', content: 'hi' }] }],
    ] as const) {
      const res = await http().post(path).set(auth()).send(body).expect(400);
      const fields = (res.body.error.details.fields as Array<{ field: string; message: string }>).map((f) => f.field);
      expect(fields).toEqual(['contextWindow', 'outputReserve']);
      expect(res.body.error.message).toMatch(/budget of [\d,]+ tokens .*under the floor of 3,200/);
    }
    await http().get('/v1/sessions/budget-floor').set(auth()).expect(404);
    // PATCH too: a window cut under the reserve is refused and the session keeps its configuration.
    await http().post('/v1/sessions').set(auth()).send({ id: 'budget-patch', model: 'gpt-4o', contextWindow: 32_000, outputReserve: 4_000 }).expect(201);
    const patch = await http().patch('/v1/sessions/budget-patch').set(auth()).send({ contextWindow: 4_096 }).expect(400);
    expect(patch.body.error.message).toContain('contextWindow');
    expect((await http().get('/v1/sessions/budget-patch').set(auth()).expect(200)).body.contextWindow).toBe(32_000);
  });

  it("remembers a REST append's maxTokens and tools: the usage, the threshold and the worker use that budget", async () => {
    const tools = Array.from({ length: 6 }, (_, i) => ({ type: 'function', function: { name: `tool_${i}`, description: 'Runs a shell command in the repository and returns its output. '.repeat(8), parameters: { type: 'object', properties: { command: { type: 'string' } } } } }));
    const res = await http()
      .post('/v1/sessions/budget-limits/messages')
      .set(auth())
      .send({ model: 'gpt-4o', contextWindow: 32_000, outputReserve: 2_000, maxTokens: 6_000, tools, messages: [{ role: 'user', content: 'Fix the failing test' }] })
      .expect(201);
    const plain = 32_000 - 6_000 - 640;
    expect(res.body.usage.budget).toBeLessThan(plain - 500);
    const toolTokens = plain - res.body.usage.budget;
    // A later append without them keeps what the session remembered.
    const next = await http().post('/v1/sessions/budget-limits/messages').set(auth()).send({ messages: [{ role: 'assistant', content: 'On it.' }] }).expect(201);
    expect(next.body.usage.budget).toBe(plain - toolTokens);
    // GET /v1/sessions/:id shows how the budget is made up.
    const detail = (await http().get('/v1/sessions/budget-limits').set(auth()).expect(200)).body;
    expect(detail.budget).toEqual({
      window: 32_000,
      reserve: 6_000,
      requestMaxTokens: 6_000,
      toolSchemaTokens: toolTokens,
      safetyMargin: 640,
      calibration: 1,
      calibrationTokens: 0,
      budget: plain - toolTokens,
      compactionHoldTokens: null,
    });
    // tools: [] clears the schemas; a smaller maxTokens than the reserve leaves the reserve.
    const cleared = await http().post('/v1/sessions/budget-limits/messages').set(auth()).send({ maxTokens: 1_000, tools: [], messages: [{ role: 'user', content: 'Go on' }] }).expect(201);
    expect(cleared.body.usage.budget).toBe(32_000 - 2_000 - 640);
    const bad = await http().post('/v1/sessions/budget-limits/messages').set(auth()).send({ maxTokens: -3, messages: [{ role: 'assistant', content: 'x' }] }).expect(400);
    expect(bad.body.error.message).toContain('maxTokens');
  });

  it("a system message inside the conversation (Claude Code's) is conversation: it does not shrink the available budget as the system prompt does", async () => {
    const base = { format: 'anthropic', model: 'claude-opus-4-8', contextWindow: 100_000, policy: 'checkpoint-aging', system: 'You are a coding agent.' };
    const env = { role: 'system', content: [{ type: 'text', text: `# Environment\n${'Working directory: /repo; platform linux; '.repeat(40)}` }] };
    const plain = await http().post('/v1/sessions/budget-sys-plain/messages').set(auth()).send({ ...base, messages: [{ role: 'user', content: 'hi' }] }).expect(201);
    const withEnv = await http().post('/v1/sessions/budget-sys-env/messages').set(auth()).send({ ...base, messages: [{ role: 'user', content: 'hi' }, env] }).expect(201);
    expect(withEnv.body.usage.contextTokens).toBeGreaterThan(plain.body.usage.contextTokens + 300);
    expect(withEnv.body.usage.available).toBe(plain.body.usage.available);
    // A second top-level system prompt (REST) still counts as system prompt.
    const second = await http().post('/v1/sessions/budget-sys-plain/messages').set(auth()).send({ format: 'anthropic', system: 'Be brief.', messages: [{ role: 'assistant', content: 'ok' }] }).expect(201);
    expect(second.body.usage.available).toBeLessThan(plain.body.usage.available);
  });

  it('a 422 budget_too_small says what used the budget', async () => {
    await http()
      .post('/v1/sessions/budget-422/messages')
      .set(auth())
      .send({ model: 'gpt-4o', contextWindow: 8_192, outputReserve: 1_000, maxTokens: 2_000, system: 'You are terse. '.repeat(200), messages: [{ role: 'user', content: 'word '.repeat(7_000) }] })
      .expect(201);
    const res = await http().get('/v1/sessions/budget-422/context').set(auth()).expect(422);
    expect(res.body.error.code).toBe('budget_too_small');
    expect(res.body.error.message).toMatch(/system prompt [\d,]+, last user turn and open tool exchange [\d,]+/);
    expect(res.body.error.message).toContain('the budget is window 8,192 − output reserve/max_tokens 2,000 − tool schemas 0 − safety margin 256 = 5,936');
    const events = (await http().get('/v1/sessions/budget-422/events').set(auth()).expect(200)).body.events as Array<{ type: string; line: string }>;
    expect(events.some((e) => e.type === 'budget-too-small' && e.line.includes('window 8,192'))).toBe(true);
  });

  it('a session with an unknown model gets a warning and an event; a newer Claude version resolves by family', async () => {
    const unknown = await http().post('/v1/sessions/budget-unknown/messages').set(auth()).send({ model: 'acme-coder-9', messages: [{ role: 'user', content: 'hi' }] }).expect(201);
    expect(unknown.body.warnings.join(' ')).toContain('Unknown model "acme-coder-9"');
    const events = (await http().get('/v1/sessions/budget-unknown/events').set(auth()).expect(200)).body.events as Array<{ type: string; line: string }>;
    expect(events.map((e) => e.type)).toContain('model-unknown');
    await http().post('/v1/sessions').set(auth()).send({ id: 'budget-unknown-created', model: 'acme-coder-9' }).expect(201);
    const createdEvents = (await http().get('/v1/sessions/budget-unknown-created/events').set(auth()).expect(200)).body.events as Array<{ type: string; line: string }>;
    expect(createdEvents.find((e) => e.type === 'model-unknown')?.line).toContain('Unknown model "acme-coder-9"');
    const opus = await http().post('/v1/sessions/budget-opus/messages').set(auth()).send({ model: 'claude-opus-4-8', messages: [{ role: 'user', content: 'hi' }] }).expect(201);
    expect(opus.body.warnings).toBeUndefined();
    expect((await http().get('/v1/sessions/budget-opus').set(auth()).expect(200)).body.contextWindow).toBe(1_000_000);
  });

  it('a compaction that cannot bring the context under the trigger is not re-run on every append: it waits for enough new tokens, and an event says why', async () => {
    const id = 'budget-hold';
    const say = (role: string, n: number) => ({ role, content: `${role} note ${n}: ${'the quick brown fox jumps over the lazy dog '.repeat(50)}` });
    // Six messages the policy protects (the latest 6), together over the 90% trigger of a 2,816-token budget: nothing may be summarized.
    const first = await http()
      .post(`/v1/sessions/${id}/messages`)
      .set(auth())
      .send({ model: 'gpt-4o', contextWindow: 4_096, outputReserve: 1_024, policy: 'balanced', messages: [0, 1, 2, 3, 4, 5].map((n) => say(n % 2 ? 'assistant' : 'user', n)) })
      .expect(201);
    expect(first.body.compaction.scheduled).toBe(true);
    const job = await finished(first.body.compaction.jobId);
    expect(job.status).toBe('skipped');
    const held = await pollUntil(
      async () => {
        const events = (await http().get(`/v1/sessions/${id}/events`).set(auth()).expect(200)).body.events as Array<{ type: string; line: string; data: { holdUntilTokens?: number } }>;
        return events.find((e) => e.type === 'compaction-held');
      },
      { timeoutMs: 10_000, what: 'the compaction-held event' },
    );
    expect(held.line).toMatch(/^Compaction left the context at [\d,]+ tokens, above the [\d,]+-token trigger \(the compaction was skipped: .+\): the next automatic one waits until [\d,]+ tokens$/);
    const until = held.data.holdUntilTokens!;
    // A short message keeps it over the trigger but under the hold: no new run.
    const short = await http().post(`/v1/sessions/${id}/messages`).set(auth()).send({ messages: [{ role: 'user', content: 'and?' }] }).expect(201);
    expect(short.body.usage.contextTokens).toBeGreaterThanOrEqual(short.body.usage.threshold);
    expect(short.body.usage.contextTokens).toBeLessThan(until);
    expect(short.body.compaction).toEqual({ scheduled: false, reason: `held-until:${until}` });
    // The reads still answer within the budget (the fallback covers it).
    const context = await http().get(`/v1/sessions/${id}/context`).set(auth()).expect(200);
    expect(context.body.tokens).toBeLessThanOrEqual(context.body.usage.budget);
    // Enough new tokens: the next run is scheduled.
    let scheduled = false;
    for (let n = 6; n < 12 && !scheduled; n++) {
      const res = await http().post(`/v1/sessions/${id}/messages`).set(auth()).send({ messages: [say(n % 2 ? 'assistant' : 'user', n)] }).expect(201);
      scheduled = res.body.compaction.scheduled;
      if (!scheduled) expect(res.body.usage.contextTokens).toBeLessThan(until);
      else expect(res.body.usage.contextTokens).toBeGreaterThanOrEqual(until);
    }
    expect(scheduled).toBe(true);
  });

  it('the 600-message gpt-4.1 / 32k replay: at most one compaction per 10 turns, every read 200, no compaction re-run on every append', async () => {
    const id = 'budget-replay';
    const all = turns(replay(5));
    let compactions = 0;
    let reads = 0;
    for (const [i, turn] of all.entries()) {
      const res = await http()
        .post(`/v1/sessions/${id}/messages`)
        .set(auth())
        .send({ format: 'openai', messages: turn, ...(i === 0 ? { model: 'gpt-4.1', contextWindow: 32_000 } : {}) })
        .expect(201);
      if (res.body.compaction.scheduled) {
        const job = await finished(res.body.compaction.jobId);
        expect(job.status).not.toBe('failed');
        compactions += 1;
      }
      const context = await http().get(`/v1/sessions/${id}/context?format=openai`).set(auth());
      expect([context.status, context.body.error?.message]).toEqual([200, undefined]);
      expect(context.body.tokens).toBeLessThanOrEqual(context.body.usage.budget);
      reads += 1;
    }
    const messages = all.reduce((n, t) => n + t.length, 0);
    expect(messages).toBeGreaterThanOrEqual(600);
    expect(reads).toBe(all.length);
    console.log(`replay: ${messages} messages, ${all.length} turns, ${compactions} compactions`);
    expect(compactions).toBeGreaterThan(0);
    expect(compactions).toBeLessThanOrEqual(Math.ceil(all.length / 10));
    const jobs = (await http().get(`/v1/sessions/${id}/events?limit=500`).set(auth()).expect(200)).body.events as Array<{ type: string }>;
    // Every run either brought the context under the trigger or held the next one: none were skipped in a row.
    expect(jobs.filter((e) => e.type === 'compression-skipped').length).toBeLessThanOrEqual(1);
  }, 600_000);
});
