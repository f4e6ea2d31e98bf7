import { CompactionRepository } from '@compactor/persistence';
import { FakeLlm, fakeSummaryText, RunningApp, startBuiltApp } from '@compactor/testing';
import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import request from 'supertest';
import { TestApi } from '../test-app';
import { startProxyTestStack } from './proxy-test-stack';

/**
 * A proxied request whose context is over the budget while the session's compaction is still running
 * (CompactionWait, docs/compaction.md "The budget band"): it waits for that compaction and is forwarded
 * with the compacted context instead of the read-time fallback; with no live worker it does not wait, and
 * past COMPACTOR_PROXY_COMPACTION_WAIT_MS it stops waiting. A REST read waits the same way when it asks (`waitMs`).
 * The worker's summarizer is the fake LLM (Ollama protocol), held until the test lets it answer, so the
 * compaction is running, deterministically, when the request arrives.
 */

const WINDOW = 6_000;
const MAX_TOKENS = 500;
/** Long enough for a held compaction, once released, to land on a loaded machine; the bound's own test waits it out once. */
const WAIT_MS = 10_000;

let api: TestApi;
let fake: FakeLlm;
let key: string;
let base: string;
let worker: RunningApp | undefined;
let release: () => void = () => undefined;
let held = new Promise<void>((resolve) => (release = resolve));
/** Holds the summarizer's answers again, until the next release(). */
const hold = () => {
  held = new Promise<void>((resolve) => (release = resolve));
};

beforeAll(async () => {
  ({ api, fake, key, base } = await startProxyTestStack({
    env: { COMPACTOR_PROXY_COMPACTION_WAIT_MS: String(WAIT_MS) },
    fake: {
      respond: (r) => {
        if (r.provider !== 'ollama') return undefined;
        return { until: held, then: { text: fakeSummaryText(r.userContent ?? '') } };
      },
    },
  }));
}, 90_000);
afterAll(async () => {
  release();
  await worker?.stop();
  await api?.close();
  await fake?.close();
}, 60_000);

const uid = (name: string) => `${name}-${randomBytes(4).toString('hex')}`;
const http = () => request(api.app.getHttpServer());
const auth = () => ({ Authorization: `Bearer ${key}` });
const prose = (n: number, chars: number) => {
  const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel'];
  let out = `Turn ${n}:`;
  for (let i = 0; out.length < chars; i++) out += ` ${words[(i * 3 + n) % 8]} ${(i * 7919 + n) % 10007}`;
  return out;
};
type Chat = { role: 'user' | 'assistant'; content: string };

/** A plain-text conversation (nothing to mask: only a summary brings it down) appended until its compaction is scheduled. */
async function overThreshold(session: string): Promise<{ messages: Chat[]; jobId: string; budget: number; contextTokens: number }> {
  await http().post('/v1/sessions').set(auth()).send({ id: session, model: 'gpt-4o', contextWindow: WINDOW, outputReserve: MAX_TOKENS, policy: 'balanced' }).expect(201);
  const messages: Chat[] = [];
  for (let n = 0; n < 40; n++) {
    const turn: Chat[] = [
      { role: 'user', content: prose(n, 600) },
      { role: 'assistant', content: prose(n + 100, 600) },
    ];
    messages.push(...turn);
    const res = await http().post(`/v1/sessions/${session}/messages`).set(auth()).send({ format: 'openai', messages: turn }).expect(201);
    if (res.body.compaction.jobId) return { messages, jobId: res.body.compaction.jobId, budget: res.body.usage.budget, contextTokens: res.body.usage.contextTokens };
  }
  throw new Error('no compaction was scheduled');
}

/**
 * Resolves `seen` once a check for a pending compaction answers true: the wait is then under way, and the test can let
 * the summarizer answer. A call-through spy: the repository's own query answers.
 */
function watchPendingChecks() {
  const compactions = api.app.get(CompactionRepository);
  const check = compactions.hasPendingJob.bind(compactions);
  let sawPending!: () => void;
  const seen = new Promise<void>((resolve) => (sawPending = resolve));
  const spy = jest.spyOn(compactions, 'hasPendingJob').mockImplementation(async (id) => {
    const pending = await check(id);
    if (pending) sawPending();
    return pending;
  });
  return { seen, spy };
}

/** One request through the proxy that repeats the stored conversation and adds a user turn that takes it over the budget. */
async function overBudgetRequest(session: string, messages: Chat[], budget: number, contextTokens: number) {
  const client = new OpenAI({ apiKey: 'sk-upstream', baseURL: `${base}/v1/proxy/openai/v1`, defaultHeaders: { 'X-Compactor-Key': key, 'X-Compactor-Session': session }, maxRetries: 0 });
  // About 4 characters a token: the new turn alone is more than the room left under the budget.
  const next: Chat = { role: 'user', content: prose(999, (budget - contextTokens + 300) * 4) };
  const before = fake.requests.length;
  const { response } = await client.chat.completions.create({ model: 'gpt-4o', max_tokens: MAX_TOKENS, messages: [...messages, next] }).withResponse();
  const forwarded = fake.requests.slice(before).find((r) => r.provider === 'openai');
  return { fallback: response.headers.get('x-compactor-fallback'), version: Number(response.headers.get('x-compactor-context-version')), timing: response.headers.get('server-timing') ?? '', forwarded };
}

describe('a proxied request over the budget while a compaction is pending', () => {
  it('with no live worker it is forwarded at once through the read-time fallback; the job stays queued', async () => {
    const session = uid('wait-none');
    const { messages, jobId, budget, contextTokens } = await overThreshold(session);
    const out = await overBudgetRequest(session, messages, budget, contextTokens);
    expect(out.fallback).toBe('applied');
    expect(out.timing).toMatch(/wait;dur=/);
    expect((await http().get(`/v1/jobs/${jobId}`).set(auth()).expect(200)).body.status).toBe('queued');
  }, 60_000);

  it('with a live worker and a compaction that does not land within the wait, it goes out through the fallback after the wait', async () => {
    worker = await startBuiltApp(
      'worker',
      { DATABASE_URL: api.config.DATABASE_URL, REDIS_URL: api.config.REDIS_URL, QUEUE_PREFIX: api.config.QUEUE_PREFIX, COMPACTOR_SUMMARIZER: 'ollama', OLLAMA_HOST: fake.ollamaHost, LOG_LEVEL: 'warn' },
      /Compactor worker started/,
    );
    const session = uid('wait-bound');
    const { messages, jobId, budget, contextTokens } = await overThreshold(session);
    // The summarizer holds its answer past the wait: the request stops waiting and the fallback acts.
    const out = await overBudgetRequest(session, messages, budget, contextTokens);
    expect(out.fallback).toBe('applied');
    expect(Number(/wait;dur=([\d.]+)/.exec(out.timing)?.[1])).toBeGreaterThanOrEqual(WAIT_MS - 1);
    expect(['queued', 'running']).toContain((await http().get(`/v1/jobs/${jobId}`).set(auth()).expect(200)).body.status);
  }, 90_000);

  it('with a live worker it waits for the running compaction and is forwarded with its checkpoint, not the fallback', async () => {
    const session = uid('wait-running');
    const { messages, jobId, budget, contextTokens } = await overThreshold(session);
    // The job is queued or running: its summary needs the summarizer, which holds every answer until released. The
    // request finds the context over the budget and the compaction pending: it waits. Only once the proxy has seen the
    // pending job (the repository's check answered true) does the summarizer answer.
    const { seen, spy } = watchPendingChecks();
    try {
      const sent = overBudgetRequest(session, messages, budget, contextTokens);
      // (A proxy that does not wait answers without ever checking: the assertions below then say so.)
      await Promise.race([seen, sent]);
      release();
      const out = await sent;
      expect(out.fallback).toBeNull();
      expect(out.version).toBeGreaterThanOrEqual(1);
      expect(out.timing).toMatch(/wait;dur=/);
      expect(JSON.stringify(out.forwarded?.body)).toContain('[CHECKPOINT');
      expect((await http().get(`/v1/jobs/${jobId}`).set(auth()).expect(200)).body.status).toBe('succeeded');
    } finally {
      spy.mockRestore();
    }
  }, 90_000);

  it('a REST read over the budget is served through the fallback at once, and with `waitMs` waits for the compaction instead', async () => {
    hold();
    const session = uid('wait-rest');
    const { budget, contextTokens } = await overThreshold(session);
    // A user turn that alone is more than the room left: the context is over the budget while the compaction is held.
    await http()
      .post(`/v1/sessions/${session}/messages`)
      .set(auth())
      .send({ format: 'openai', messages: [{ role: 'user', content: prose(999, (budget - contextTokens + 300) * 4) }] })
      .expect(201);
    const read = (query: string) => http().get(`/v1/sessions/${session}/context?format=openai${query}`).set(auth()).expect(200);
    const now = await read('');
    expect(now.body.fallback).toEqual(expect.any(String));
    const { seen, spy } = watchPendingChecks();
    try {
      const sent = read('&waitMs=30000');
      await Promise.race([seen, sent]);
      release();
      const waited = await sent;
      expect(waited.body.fallback).toBeNull();
      expect(waited.body.contextVersion).toBeGreaterThanOrEqual(1);
      expect(JSON.stringify(waited.body.messages)).toContain('[CHECKPOINT');
    } finally {
      spy.mockRestore();
    }
    // Out of range: a 400 naming the field.
    const bad = await http().get(`/v1/sessions/${session}/context?waitMs=60001`).set(auth()).expect(400);
    expect(bad.body.error.details.fields[0].field).toBe('waitMs');
  }, 90_000);
});
