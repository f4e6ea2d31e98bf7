import Anthropic from '@anthropic-ai/sdk';
import { PrismaService } from '@compactor/persistence';
import { FakeLlm, pollUntil } from '@compactor/testing';
import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import request from 'supertest';
import { TestApi } from '../test-app';
import { startProxyTestStack } from './proxy-test-stack';

/**
 * Issue #19, the proxy as agents use it: side requests sent under the conversation's session header (a title or topic
 * prompt: one user message, no tools) never fork the conversation nor enter its history; a request Compactor refuses,
 * or that the upstream refuses or never answers, stores nothing. Real HTTP, the real API on its own database, the fake
 * upstream as the only stand-in.
 */

const PROVIDER_KEY = `sk-provider-${randomBytes(12).toString('hex')}`;
const TIMEOUT_MS = 1_500;

let api: TestApi;
let fake: FakeLlm;
let key: string;
let base: string;

beforeAll(async () => {
  ({ api, fake, key, base } = await startProxyTestStack({ fake: { apiKey: PROVIDER_KEY }, env: { COMPACTOR_PROXY_TIMEOUT_MS: String(TIMEOUT_MS) } }));
}, 60_000);
afterAll(async () => {
  await api?.close();
  await fake?.close();
});

const uid = (name: string) => `${name}-${randomBytes(4).toString('hex')}`;
const http = () => request(api.app.getHttpServer());
const auth = () => ({ Authorization: `Bearer ${key}` });

function anthropicClient(session: string): Anthropic {
  return new Anthropic({ apiKey: PROVIDER_KEY, baseURL: `${base}/v1/proxy/anthropic`, defaultHeaders: { 'X-Compactor-Key': key, 'X-Compactor-Session': session }, maxRetries: 0, logLevel: 'off' });
}

function openaiClient(session: string): OpenAI {
  return new OpenAI({ apiKey: PROVIDER_KEY, baseURL: `${base}/v1/proxy/openai/v1`, defaultHeaders: { 'X-Compactor-Key': key, 'X-Compactor-Session': session }, maxRetries: 0, logLevel: 'off' });
}

async function failure(call: Promise<unknown>): Promise<{ status?: number; error?: unknown }> {
  try {
    await call;
  } catch (error) {
    return error as { status?: number; error?: unknown };
  }
  throw new Error('expected the request to fail');
}

async function history(session: string): Promise<Array<{ seq: number; role: string; message: unknown }>> {
  return (await http().get(`/v1/sessions/${session}/messages?limit=1000`).set(auth()).expect(200)).body.messages;
}

/**
 * Waits until the session's history holds exactly `count` messages (an answer is recorded once its stream ended) and,
 * when given, `ready` holds for it (a history the same size as the one it replaces is not yet the new one).
 */
function historyOf(session: string, count: number, ready: (h: Array<{ message: unknown }>) => boolean = () => true) {
  return pollUntil(
    async () => {
      const h = await history(session);
      if (h.length > count) throw new Error(`history has ${h.length} messages, more than ${count}: ${JSON.stringify(h.map((m) => m.role))}`);
      return h.length === count && ready(h) ? h : undefined;
    },
    { what: `${count} messages in ${session}`, timeoutMs: 10_000 },
  );
}

/** The tenant's sessions whose id starts with `prefix`. */
async function family(prefix: string): Promise<string[]> {
  const rows = await api.app.get(PrismaService).session.findMany({ where: { externalId: { startsWith: prefix } }, select: { externalId: true }, orderBy: { externalId: 'asc' } });
  return rows.map((r) => r.externalId);
}

function sideEvents(session: string) {
  return api.app.get(PrismaService).event.findMany({ where: { type: 'side-request', session: { externalId: session } }, orderBy: { id: 'asc' } });
}

const TOOLS: Anthropic.Tool[] = [{ name: 'read_file', description: 'Reads a file', input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } }];
const SYSTEM = 'You are a careful coding agent.';
const TITLE_SYSTEM = 'Summarize the request in a title of at most five words. Answer with the title only.';

describe('side requests under the conversation header', () => {
  it('(a) a title request that came first gives the name up to the conversation with tools: no fork, the one-shot moves to <id>:side-1', async () => {
    const session = uid('cc-title-first');
    const client = anthropicClient(session);
    const prompt = 'Fix the flaky test in parser.spec.ts';

    fake.enqueue({ text: 'Flaky parser test' });
    await client.messages.create({ model: 'claude-haiku-4-5', max_tokens: 50, system: TITLE_SYSTEM, messages: [{ role: 'user', content: prompt }] });
    // Nothing tells it from a chat client's first request yet: it is recorded as the conversation (case c).
    await historyOf(session, 3);

    fake.enqueue({ text: 'Reading it.', toolCalls: [{ id: 'toolu_r1', name: 'read_file', input: { path: 'parser.spec.ts' } }] });
    const main: Anthropic.MessageParam[] = [{ role: 'user', content: [{ type: 'text', text: '<reminder>cwd: /repo</reminder>' }, { type: 'text', text: prompt }] }];
    const params = { model: 'claude-opus-4-5', max_tokens: 1024, system: SYSTEM, tools: TOOLS };
    const first = await client.messages.create({ ...params, messages: main }).withResponse();
    expect(first.response.headers.get('x-compactor-session')).toBe(session);
    expect(first.response.headers.get('x-compactor-forked-from')).toBeNull();
    // The title one-shot also had 3 messages: wait for the conversation to have taken its place.
    const stored = await historyOf(session, 3, (h) => JSON.stringify(h[0].message) === JSON.stringify({ system: SYSTEM }));
    expect(stored.map((m) => m.message)).toEqual([{ system: SYSTEM }, main[0], { role: 'assistant', content: [expect.objectContaining({ text: 'Reading it.' }), expect.objectContaining({ type: 'tool_use', id: 'toolu_r1' })] }]);

    // The one-shot is kept, under a side name, with its answer; both sessions say what happened; nothing is a fork.
    const side = `${session}:side-1`;
    expect(await family(session)).toEqual([session, side]);
    expect((await historyOf(side, 3)).map((m) => m.message)).toEqual([{ system: TITLE_SYSTEM }, { role: 'user', content: prompt }, { role: 'assistant', content: [expect.objectContaining({ text: 'Flaky parser test' })] }]);
    expect((await http().get(`/v1/sessions/${session}`).set(auth()).expect(200)).body).toMatchObject({ forkedFrom: null, forks: [], model: 'claude-opus-4-5' });
    expect((await http().get(`/v1/sessions/${side}`).set(auth()).expect(200)).body).toMatchObject({ forkedFrom: null, forks: [], model: 'claude-haiku-4-5' });
    expect((await sideEvents(session)).map((e) => e.line)).toEqual([`A one-shot request without tools that came first under this name moved to ${side}`]);
    expect((await sideEvents(side)).map((e) => e.data)).toEqual([{ sessionId: session, sideSessionId: side, model: 'claude-haiku-4-5' }]);

    // The conversation goes on in the named session.
    fake.enqueue({ text: 'The test waits on a timer; fixed.' });
    const next: Anthropic.MessageParam[] = [...main, { role: 'assistant', content: first.data.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_r1', content: 'it("parses", async () => {...})' }] }];
    const second = await client.messages.create({ ...params, messages: next }).withResponse();
    expect(second.response.headers.get('x-compactor-session')).toBe(session);
    await historyOf(session, 5);
    expect(await family(session)).toEqual([session, side]);
  });

  it('a run with tools whose first answer called none is a conversation: a different run under its name forks from it, it is not moved aside', async () => {
    const session = uid('cc-tools-first');
    const client = anthropicClient(session);
    const params = { model: 'claude-opus-4-5', max_tokens: 1024, system: SYSTEM, tools: TOOLS };
    fake.enqueue({ text: 'The tests pass already.' });
    await client.messages.create({ ...params, messages: [{ role: 'user', content: 'Run the tests' }] });
    await historyOf(session, 3);
    await pollUntil(async () => ((await http().get(`/v1/sessions/${session}`).set(auth()).expect(200)).body.budget.toolSchemaTokens > 0 ? true : undefined), {
      what: 'the remembered tool schemas',
      timeoutMs: 5_000,
    });
    fake.enqueue({ text: 'Reading it.' });
    const other = await client.messages.create({ ...params, messages: [{ role: 'user', content: 'Refactor the parser' }] }).withResponse();
    expect(other.response.headers.get('x-compactor-forked-from')).toBe(session);
    // The fork is stored once the upstream accepted the request, beside the answer's relay: polled, not read at once.
    const forks = await pollUntil(async () => {
      const names = await family(session);
      return names.length > 1 ? names : undefined;
    }, { what: `the fork of ${session}`, timeoutMs: 10_000 });
    expect(forks).toEqual([session, `${session}:fork-1`]);
    expect((await history(session)).length).toBe(3);
  });

  it('(a) concurrently: the conversation arrives while the title request is still in flight; the title answer is recorded in the side session', async () => {
    const session = uid('cc-concurrent');
    const client = anthropicClient(session);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const at = fake.requests.length;
    fake.enqueue({ until: held, then: { text: 'Concurrent title' } }, { text: 'On it.' });
    const title = client.messages.create({ model: 'claude-haiku-4-5', max_tokens: 50, system: TITLE_SYSTEM, messages: [{ role: 'user', content: 'Speed up the build' }] });
    await pollUntil(async () => (fake.requests.length > at ? true : undefined), { what: 'the title request upstream', timeoutMs: 10_000 });
    const main = client.messages.create({ model: 'claude-opus-4-5', max_tokens: 256, system: SYSTEM, tools: TOOLS, messages: [{ role: 'user', content: 'Speed up the build, please' }] }).withResponse();
    release();
    await title;
    expect((await main).response.headers.get('x-compactor-session')).toBe(session);
    expect((await historyOf(session, 3)).map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
    expect((await historyOf(`${session}:side-1`, 3))[2].message).toEqual({ role: 'assistant', content: [expect.objectContaining({ text: 'Concurrent title' })] });
    expect(await family(session)).toEqual([session, `${session}:side-1`]);
  });

  it('(b) a side request during the conversation is forwarded as sent and reported as an event; the conversation is untouched and never forks', async () => {
    const session = uid('cc-side-later');
    const client = anthropicClient(session);
    const params = { model: 'claude-opus-4-5', max_tokens: 1024, system: SYSTEM, tools: TOOLS };
    fake.enqueue({ text: 'Looking.', toolCalls: [{ id: 'toolu_s1', name: 'read_file', input: { path: 'a.ts' } }] }, { text: 'a.ts is fine.' });
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Review a.ts' }];
    const first = await client.messages.create({ ...params, messages });
    messages.push({ role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_s1', content: 'export const a = 1;' }] });
    await client.messages.create({ ...params, messages });
    const before = await historyOf(session, 5);

    // A topic check on a small model, streamed: one user message, its own system prompt, no tools.
    const sideParams = { model: 'claude-haiku-4-5', max_tokens: 64, system: TITLE_SYSTEM, messages: [{ role: 'user' as const, content: 'Is "now check b.ts too" a new topic?' }] };
    fake.enqueue({ text: 'No, same topic.' });
    const at = fake.requests.length;
    const stream = client.messages.stream(sideParams);
    const answer = await stream.finalMessage();
    expect(answer.content[0]).toMatchObject({ text: 'No, same topic.' });
    expect((await stream.withResponse()).response.headers.get('x-compactor-side-request')).toBe(session);
    // Forwarded exactly as sent: no history added, nothing compacted.
    expect(fake.requests[at].body).toEqual({ ...sideParams, stream: true });

    const [event] = await pollUntil(async () => {
      const events = await sideEvents(session);
      return events.length > 0 ? events : undefined;
    }, { what: 'the side-request event', timeoutMs: 10_000 });
    expect(event.line).toMatch(/^Side request to claude-haiku-4-5 answered 200 \(~\d+ tokens in, ~\d+ out\): forwarded as sent, not part of the conversation$/);
    expect(event.data).toMatchObject({ model: 'claude-haiku-4-5', status: 200, stream: true, inputTokens: expect.any(Number), outputTokens: expect.any(Number), preview: 'Is "now check b.ts too" a new topic?' });

    // A side request the upstream refuses is reported too, with its status.
    fake.enqueue({ status: 429, message: 'slow down' });
    expect((await failure(client.messages.create({ ...sideParams, stream: false }))).status).toBe(429);
    await pollUntil(async () => ((await sideEvents(session)).length === 2 ? true : undefined), { what: 'the second side-request event', timeoutMs: 10_000 });
    expect((await sideEvents(session))[1].data).toMatchObject({ status: 429, outputTokens: null });

    expect(await history(session)).toEqual(before);
    fake.enqueue({ text: 'Checking b.ts.' });
    messages.push({ role: 'assistant', content: 'a.ts is fine.' }, { role: 'user', content: 'Now check b.ts too' });
    const next = await client.messages.create({ ...params, messages }).withResponse();
    expect(next.response.headers.get('x-compactor-session')).toBe(session);
    expect(next.response.headers.get('x-compactor-forked-from')).toBeNull();
    await historyOf(session, 7);
    expect(await family(session)).toEqual([session]);
  });

  it('(c) a plain chat client without tools: its first request is the conversation, its later title request a side request', async () => {
    const session = uid('chat');
    const client = openaiClient(session);
    fake.enqueue({ text: 'Hello! How can I help?' });
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You are a friendly assistant.' },
      { role: 'user', content: 'Hi there' },
    ];
    const first = await client.chat.completions.create({ model: 'gpt-4o', messages }).withResponse();
    expect(first.response.headers.get('x-compactor-session')).toBe(session);
    expect((await historyOf(session, 3)).map((m) => m.role)).toEqual(['system', 'user', 'assistant']);

    fake.enqueue({ text: 'Greeting' });
    const title = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Title this chat: "Hi there / Hello! How can I help?"' }] }).withResponse();
    expect(title.response.headers.get('x-compactor-side-request')).toBe(session);

    fake.enqueue({ text: 'Sure.' });
    messages.push({ role: 'assistant', content: 'Hello! How can I help?' }, { role: 'user', content: 'Tell me a joke' });
    const second = await client.chat.completions.create({ model: 'gpt-4o', messages }).withResponse();
    expect(second.response.headers.get('x-compactor-session')).toBe(session);
    expect((await historyOf(session, 5)).map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant']);
    expect(await family(session)).toEqual([session]);
  });

  it('(d) a rewind with tools after a shared prefix still forks', async () => {
    const session = uid('cc-rewind');
    const client = anthropicClient(session);
    const params = { model: 'claude-opus-4-5', max_tokens: 512, system: SYSTEM, tools: TOOLS };
    fake.enqueue({ text: 'Plan: rename it.' }, { text: 'Renamed.' }, { text: 'Plan B.' });
    const m1: Anthropic.MessageParam[] = [{ role: 'user', content: 'Plan the rename' }];
    await client.messages.create({ ...params, messages: m1 });
    const m2: Anthropic.MessageParam[] = [...m1, { role: 'assistant', content: 'Plan: rename it.' }, { role: 'user', content: 'Do it' }];
    await client.messages.create({ ...params, messages: m2 });
    await historyOf(session, 5);
    const rewound = await client.messages.create({ ...params, messages: [...m2.slice(0, 2), { role: 'user', content: 'Do not rename; wrap it instead' }] }).withResponse();
    expect(rewound.response.headers.get('x-compactor-session')).toBe(`${session}:fork-1`);
    expect(rewound.response.headers.get('x-compactor-forked-from')).toBe(session);
    await historyOf(`${session}:fork-1`, 5);
    expect(await history(session)).toHaveLength(5);
  });
});

describe('a request that is refused or never answered stores nothing', () => {
  const params = { model: 'claude-opus-4-5', max_tokens: 256, system: SYSTEM, tools: TOOLS };

  it.each([
    ['an upstream 500', { status: 500, message: 'upstream broke' }, 500],
    ['an upstream 400', { status: 400, message: 'messages: something the upstream dislikes' }, 400],
  ] as const)('%s: the history is unchanged and the next request continues without a fork', async (_name, step, status) => {
    const session = uid('refused');
    const client = anthropicClient(session);

    // On the first request: no session is created.
    fake.enqueue(step);
    const m1: Anthropic.MessageParam[] = [{ role: 'user', content: 'Start the migration' }];
    expect((await failure(client.messages.create({ ...params, messages: m1 }))).status).toBe(status);
    await http().get(`/v1/sessions/${session}`).set(auth()).expect(404);
    fake.enqueue({ text: 'Started.' });
    await client.messages.create({ ...params, messages: m1 });
    await historyOf(session, 3);

    // On a later turn: the new message is not stored.
    fake.enqueue(step);
    const m2: Anthropic.MessageParam[] = [...m1, { role: 'assistant', content: 'Started.' }, { role: 'user', content: 'Now run it' }];
    expect((await failure(client.messages.create({ ...params, messages: m2 }))).status).toBe(status);
    expect(await history(session)).toHaveLength(3);

    // The client goes on (here with another wording, as an agent that dropped the failed turn would): same session, no fork.
    fake.enqueue({ text: 'Ran it.' });
    const m3: Anthropic.MessageParam[] = [...m1, { role: 'assistant', content: 'Started.' }, { role: 'user', content: 'Run the migration now' }];
    const next = await client.messages.create({ ...params, messages: m3 }).withResponse();
    expect(next.response.headers.get('x-compactor-session')).toBe(session);
    expect(next.response.headers.get('x-compactor-forked-from')).toBeNull();
    const stored = await historyOf(session, 5);
    expect(stored.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant']);
    expect(stored[3].message).toEqual(m3[2]);
    expect(stored[4].message).toEqual({ role: 'assistant', content: [expect.objectContaining({ text: 'Ran it.' })] });
    expect(await family(session)).toEqual([session]);
  });

  it('an upstream that does not answer (504): the history is unchanged, and the same request then goes through once', async () => {
    const session = uid('timeout');
    const client = anthropicClient(session);
    fake.enqueue({ text: 'Ok.' });
    const m1: Anthropic.MessageParam[] = [{ role: 'user', content: 'Check the build' }];
    await client.messages.create({ ...params, messages: m1 });
    await historyOf(session, 3);
    fake.enqueue({ hang: true });
    const m2: Anthropic.MessageParam[] = [...m1, { role: 'assistant', content: 'Ok.' }, { role: 'user', content: 'And the tests?' }];
    expect((await failure(client.messages.create({ ...params, messages: m2 }))).status).toBe(504);
    expect(await history(session)).toHaveLength(3);
    fake.enqueue({ text: 'Green.' });
    await client.messages.create({ ...params, messages: m2 });
    expect((await historyOf(session, 5)).map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant']);
  });

  it('a Compactor 4xx (422 budget_too_small, 400 invalid sequence): nothing stored, nothing forwarded, logged at warn with its reason; the next request continues', async () => {
    const session = uid('compactor-4xx');
    await http().post('/v1/sessions').set(auth()).send({ id: session, model: 'claude-opus-4-5', contextWindow: 20_000, outputReserve: 2_000 }).expect(201);
    const client = anthropicClient(session);
    fake.enqueue({ text: 'Ok.' });
    const m1: Anthropic.MessageParam[] = [{ role: 'user', content: 'Summarize the log I will paste' }];
    await client.messages.create({ ...params, messages: m1 });
    await historyOf(session, 3);
    const sent = fake.requests.length;

    // A last user turn bigger than the whole budget can never be sent.
    const huge = Array.from({ length: 6_000 }, (_, i) => `line ${i} ${randomBytes(6).toString('hex')}`).join('\n');
    const m2: Anthropic.MessageParam[] = [...m1, { role: 'assistant', content: 'Ok.' }, { role: 'user', content: huge }];
    const tooBig = await failure(client.messages.create({ ...params, messages: m2 }));
    expect(tooBig.status).toBe(422);
    expect(tooBig.error).toMatchObject({ error: { type: 'invalid_request_error', message: expect.stringContaining('Compactor proxy:') } });

    // A tool result for a call that never happened.
    const m3: Anthropic.MessageParam[] = [...m1, { role: 'assistant', content: 'Ok.' }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_never', content: 'x' }] }];
    expect((await failure(client.messages.create({ ...params, messages: m3 }))).status).toBe(400);

    expect(fake.requests.length).toBe(sent);
    expect(await history(session)).toHaveLength(3);
    const warnings = await pollUntil(
      async () => {
        const found = api.logs.filter((l) => l.msg === 'proxy: request refused' && [422, 400].includes(l.status as number));
        return found.length >= 2 ? found : undefined;
      },
      { what: 'two refusals logged', timeoutMs: 5_000 },
    );
    expect(warnings.map((l) => [l.level, l.code])).toEqual(expect.arrayContaining([[40, 'budget_too_small'], [40, 'invalid_request']]));
    expect(warnings.find((l) => l.code === 'invalid_request')?.reason).toMatch(/toolu_never|tool_result/);
    expect(JSON.stringify(api.logs)).not.toContain(PROVIDER_KEY);

    fake.enqueue({ text: 'Paste it in parts.' });
    const m4: Anthropic.MessageParam[] = [...m1, { role: 'assistant', content: 'Ok.' }, { role: 'user', content: 'It is too long; what now?' }];
    const next = await client.messages.create({ ...params, messages: m4 }).withResponse();
    expect(next.response.headers.get('x-compactor-session')).toBe(session);
    expect((await historyOf(session, 5)).map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant']);
    expect(await family(session)).toEqual([session]);
  });
});
