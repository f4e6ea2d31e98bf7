import Anthropic from '@anthropic-ai/sdk';
import { CanonicalMessage, parseAnthropicMessages, parseAnthropicSystem, parseOpenAIMessages, providerValidityProblems } from '@compactor/compaction';
import { PrismaService } from '@compactor/persistence';
import { FakeLlm, fakeLlmKeyFingerprint, FakeLlmRequest, pollUntil } from '@compactor/testing';
import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import request from 'supertest';
import { TestApi } from '../test-app';
import { startProxyTestStack } from './proxy-test-stack';

/**
 * The drop-in proxy end to end: the official SDKs with only their base URL changed (and the
 * Compactor key added as a default header), the real API on its own database, and the fake
 * upstream (the only stand-in), which records what it was sent and the exact bytes it answered.
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

/** A fetch that keeps a copy of every response body the SDK receives, to compare bytes with what the fake sent. */
function recordingFetch(bodies: Array<Promise<string>>): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    bodies.push(response.clone().text());
    return response;
  };
}

function anthropicClient(session?: string, bodies: Array<Promise<string>> = [], compactorKey = key): Anthropic {
  return new Anthropic({
    apiKey: PROVIDER_KEY,
    baseURL: `${base}/v1/proxy/anthropic`,
    defaultHeaders: { 'X-Compactor-Key': compactorKey, ...(session ? { 'X-Compactor-Session': session } : {}) },
    maxRetries: 0,
    logLevel: 'off',
    fetch: recordingFetch(bodies),
  });
}

function openaiClient(session?: string, bodies: Array<Promise<string>> = [], compactorKey = key): OpenAI {
  return new OpenAI({
    apiKey: PROVIDER_KEY,
    baseURL: `${base}/v1/proxy/openai/v1`,
    defaultHeaders: { 'X-Compactor-Key': compactorKey, ...(session ? { 'X-Compactor-Session': session } : {}) },
    maxRetries: 0,
    logLevel: 'off',
    fetch: recordingFetch(bodies),
  });
}

const auth = () => ({ Authorization: `Bearer ${key}` });

/** The error an SDK call failed with; the test fails if the call succeeded. */
async function failure(call: Promise<unknown>): Promise<{ status?: number; error?: unknown; message: string }> {
  try {
    await call;
  } catch (error) {
    return error as { status?: number; error?: unknown; message: string };
  }
  throw new Error('expected the request to fail');
}

async function history(session: string): Promise<Array<{ seq: number; role: string; message: unknown }>> {
  return (await http().get(`/v1/sessions/${session}/messages?limit=1000`).set(auth()).expect(200)).body.messages;
}

/** Waits until the session's history holds `count` messages (the answer is recorded once the stream ended). */
function historyOf(session: string, count: number) {
  return pollUntil(
    async () => {
      const h = await history(session);
      if (h.length > count) throw new Error(`history has ${h.length} messages, more than ${count}: ${JSON.stringify(h.map((m) => m.role))}`);
      return h.length === count ? h : undefined;
    },
    { what: `${count} messages in ${session}`, timeoutMs: 10_000 },
  );
}

function forwardedAnthropic(r: FakeLlmRequest): CanonicalMessage[] {
  const body = r.body as { system?: unknown; messages: unknown[] };
  const parsed = parseAnthropicMessages(body.messages, 'messages');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const system = body.system === undefined ? [] : [(parseAnthropicSystem(body.system, 'system') as { ok: true; value: CanonicalMessage }).value];
  return [...system, ...parsed.value];
}

function forwardedOpenAI(r: FakeLlmRequest): CanonicalMessage[] {
  const parsed = parseOpenAIMessages((r.body as { messages: unknown[] }).messages, 'messages');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

const TOOLS: Anthropic.Tool[] = [
  { name: 'read_file', description: 'Reads a file', input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } },
];
const SYSTEM = 'You are a careful coding agent.';

describe('Anthropic Messages through the proxy', () => {
  it('streams a multi-turn tool exchange (thinking, parallel tool calls) byte for byte, records it once, forwards valid contexts', async () => {
    const session = uid('anthropic-tools');
    const bodies: Array<Promise<string>> = [];
    const client = anthropicClient(session, bodies);
    const before = fake.requests.length;
    fake.enqueue(
      {
        text: 'Reading both files.',
        thinking: { thinking: 'Both files matter.', signature: 'sig-abc' },
        toolCalls: [
          { id: 'toolu_a1', name: 'read_file', input: { path: 'src/a.ts' } },
          { id: 'toolu_b1', name: 'read_file', input: { path: 'src/b.ts' } },
        ],
      },
      { text: 'a.ts exports parse; b.ts calls it.' },
      { text: 'Done: both are consistent.' },
    );

    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Compare src/a.ts and src/b.ts' }];
    const params = { model: 'claude-opus-4-5', max_tokens: 1024, system: SYSTEM, tools: TOOLS, thinking: { type: 'enabled' as const, budget_tokens: 512 } };
    const deltas: string[] = [];
    const stream = client.messages.stream({ ...params, messages });
    stream.on('text', (t) => deltas.push(t));
    const first = await stream.finalMessage();
    expect(deltas.join('')).toBe('Reading both files.');
    expect(first.content.map((b) => b.type)).toEqual(['thinking', 'text', 'tool_use', 'tool_use']);
    // Byte for byte: what the SDK received is what the fake sent.
    expect(await bodies[0]).toBe(fake.requests[before].responseBody);
    await historyOf(session, 3); // system, user, the recorded answer

    messages.push({ role: 'assistant', content: first.content });
    messages.push({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_a1', content: 'export function parse() {}' },
        { type: 'tool_result', tool_use_id: 'toolu_b1', content: 'parse(input)', cache_control: { type: 'ephemeral' } },
      ],
    });
    const second = await client.messages.stream({ ...params, messages }).finalMessage();
    expect(second.content).toEqual([expect.objectContaining({ type: 'text', text: 'a.ts exports parse; b.ts calls it.' })]);
    expect(await bodies[1]).toBe(fake.requests[before + 1].responseBody);
    await historyOf(session, 5);

    messages.push({ role: 'assistant', content: second.content });
    messages.push({ role: 'user', content: 'Anything else?' });
    const third = await client.messages.create({ ...params, messages });
    expect(await bodies[2]).toBe(fake.requests[before + 2].responseBody);
    expect(third.content[0]).toMatchObject({ text: 'Done: both are consistent.' });
    const stored = await historyOf(session, 7);

    // Each message once, in order, exactly as the client sent it; the answers as the upstream sent them.
    expect(stored.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
    expect(stored[1].message).toEqual(messages[0]);
    expect(stored[3].message).toEqual(messages[2]);
    expect(stored[5].message).toEqual(messages[4]);
    expect((stored[2].message as { content: unknown[] }).content).toEqual(JSON.parse(JSON.stringify(first.content)));

    // What went upstream: the request's own parameters, the session's context, valid for the provider.
    const forwarded = fake.requests.slice(before, before + 3);
    for (const r of forwarded) {
      expect(r.auth).toMatchObject({ fingerprint: fakeLlmKeyFingerprint(PROVIDER_KEY), matches: true });
      expect(r.headers['x-compactor-key']).toBeUndefined();
      expect(r.body).toMatchObject({ model: 'claude-opus-4-5', max_tokens: 1024, system: SYSTEM, tools: TOOLS, thinking: params.thinking });
      expect(providerValidityProblems(forwardedAnthropic(r))).toEqual([]);
    }
    // No compaction yet: the context is the conversation itself (the thinking block byte-exact, one cache marker: the request's own).
    expect((forwarded[2].body as { messages: unknown[] }).messages).toEqual(JSON.parse(JSON.stringify(messages)));
    expect(JSON.stringify(forwarded[2].body).match(/cache_control/g)).toHaveLength(1);
  });

  it('a retried request, changed cache markers or stripped thinking never fork; a message edited after a shared prefix forks, and the fork is followed', async () => {
    const session = uid('anthropic-fork');
    const client = anthropicClient(session);
    const params = { model: 'claude-opus-4-5', max_tokens: 256, system: SYSTEM };
    fake.enqueue({ text: 'Plan: add a test.', thinking: { thinking: 'Think.', signature: 'sig-1' } });
    const m1: Anthropic.MessageParam[] = [{ role: 'user', content: 'Plan the fix for issue 12' }];
    const a1 = await client.messages.create({ ...params, messages: m1 });
    await historyOf(session, 3);

    // An SDK retry of the same request after its answer was recorded: forwarded without that answer, not recorded twice.
    const before = fake.requests.length;
    fake.enqueue({ text: 'Plan: add a test.' });
    await client.messages.create({ ...params, messages: m1 });
    expect((fake.requests[before].body as { messages: unknown[] }).messages).toEqual(m1);

    // The next turn with the thinking block stripped and a cache marker on the first message: same history.
    fake.enqueue({ text: 'Test added.' });
    const m2: Anthropic.MessageParam[] = [
      { role: 'user', content: [{ type: 'text', text: 'Plan the fix for issue 12', cache_control: { type: 'ephemeral' } }] },
      { role: 'assistant', content: a1.content.filter((b) => b.type !== 'thinking') },
      { role: 'user', content: 'Go ahead' },
    ];
    const res2 = await client.messages.create({ ...params, messages: m2 }).withResponse();
    expect(res2.response.headers.get('x-compactor-session')).toBe(session);
    expect(res2.response.headers.get('x-compactor-forked-from')).toBeNull();
    await historyOf(session, 5);

    // A message edited after a shared prefix (a rewind): a fork named after the session, holding the client's conversation; the parent is untouched.
    fake.enqueue({ text: 'Different plan.' });
    const edited: Anthropic.MessageParam[] = [...m2.slice(0, 2), { role: 'user', content: 'No: plan the fix for issue 13 instead' }];
    const res3 = await client.messages.create({ ...params, messages: edited }).withResponse();
    const forkId = res3.response.headers.get('x-compactor-session');
    expect(forkId).toBe(`${session}:fork-1`);
    expect(res3.response.headers.get('x-compactor-forked-from')).toBe(session);
    const fork = await historyOf(forkId!, 5);
    expect(fork.map((m) => m.message)).toEqual([{ system: SYSTEM }, ...edited, { role: 'assistant', content: [expect.objectContaining({ text: 'Different plan.' })] }]);
    expect(await history(session)).toHaveLength(5);
    const prisma = api.app.get(PrismaService);
    const [parentRow, forkRow] = await Promise.all([prisma.session.findFirstOrThrow({ where: { externalId: session } }), prisma.session.findFirstOrThrow({ where: { externalId: forkId! } })]);
    expect(forkRow.forkedFromId).toBe(parentRow.id);
    const events = await prisma.event.findMany({ where: { type: 'session-forked', sessionId: { in: [parentRow.id, forkRow.id] } } });
    expect(events.map((e) => e.line).sort()).toEqual([`Forked from ${session}: the client's history diverged at message 4`, `Forked into ${forkId}: the client's history diverged at message 4`]);
    // The sessions API names both ends of the fork.
    expect((await http().get(`/v1/sessions/${forkId}`).set(auth()).expect(200)).body).toMatchObject({ id: forkId, forkedFrom: session, forks: [] });
    expect((await http().get(`/v1/sessions/${session}`).set(auth()).expect(200)).body).toMatchObject({ id: session, forkedFrom: null, forks: [forkId] });

    // Continuing the fork (same header) goes to the fork; going back to the first branch goes to the parent.
    fake.enqueue({ text: 'ok 1' }, { text: 'ok 2' });
    const onFork = await client.messages.create({ ...params, messages: [...edited, { role: 'assistant', content: 'Different plan.' }, { role: 'user', content: 'Proceed' }] }).withResponse();
    expect(onFork.response.headers.get('x-compactor-session')).toBe(forkId);
    const onParent = await client.messages.create({ ...params, messages: [...m2, { role: 'assistant', content: 'Test added.' }, { role: 'user', content: 'Ship it' }] }).withResponse();
    expect(onParent.response.headers.get('x-compactor-session')).toBe(session);
    expect(await prisma.session.count({ where: { forkedFromId: parentRow.id } })).toBe(1);
  });

  it('without X-Compactor-Session the session id is derived from the opening; the same conversation finds it again', async () => {
    const client = new Anthropic({ apiKey: PROVIDER_KEY, baseURL: `${base}/v1/proxy/anthropic`, defaultHeaders: { 'X-Compactor-Key': key, 'X-Compactor-Policy': 'factor3' }, maxRetries: 0, logLevel: 'off' });
    const opening = `Investigate flaky test ${uid('t')}`;
    fake.enqueue({ text: 'Looking.' }, { text: 'Found it.' });
    const first = await client.messages.create({ model: 'claude-haiku-4-5', max_tokens: 100, messages: [{ role: 'user', content: opening }] }).withResponse();
    const id = first.response.headers.get('x-compactor-session');
    expect(id).toMatch(/^proxy-[0-9a-f]{32}$/);
    await historyOf(id!, 2);
    const second = await client.messages
      .create({
        model: 'claude-haiku-4-5',
        max_tokens: 100,
        messages: [{ role: 'user', content: [{ type: 'text', text: opening, cache_control: { type: 'ephemeral' } }] }, { role: 'assistant', content: 'Looking.' }, { role: 'user', content: 'and?' }],
      })
      .withResponse();
    expect(second.response.headers.get('x-compactor-session')).toBe(id);
    const stored = await historyOf(id!, 4);
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    const session = (await http().get(`/v1/sessions/${id}`).set(auth()).expect(200)).body;
    expect(session.model).toBe('claude-haiku-4-5');
    expect(session.policy).toMatchObject({ preset: 'factor3' });
  });

  it('count_tokens answers for the compacted context, counted locally; other paths pass through', async () => {
    const session = uid('anthropic-count');
    const client = anthropicClient(session);
    fake.enqueue({ text: 'Sure.' });
    await client.messages.create({ model: 'claude-opus-4-5', max_tokens: 100, system: SYSTEM, messages: [{ role: 'user', content: 'Hello there' }] });
    await historyOf(session, 3);
    const before = fake.requests.length;
    const next: Anthropic.MessageParam[] = [{ role: 'user', content: 'Hello there' }, { role: 'assistant', content: 'Sure.' }, { role: 'user', content: 'Count this turn too, please.' }];
    const counted = await client.messages.countTokens({ model: 'claude-opus-4-5', system: SYSTEM, messages: next });
    expect(fake.requests.length).toBe(before); // answered locally
    fake.enqueue({ text: 'Counted.' });
    const sent = await client.messages.create({ model: 'claude-opus-4-5', max_tokens: 100, system: SYSTEM, messages: next }).withResponse();
    expect(counted.input_tokens).toBe(Number(sent.response.headers.get('x-compactor-context-tokens')));
    expect(counted.input_tokens).toBeGreaterThan(10);

    // Another provider path goes upstream unchanged, answered as the upstream answers.
    const models = await openaiClient(session).models.list();
    expect(models.data.map((m) => m.id)).toContain('gpt-4o-mini');
    const passed = fake.requests.at(-1)!;
    expect(passed).toMatchObject({ method: 'GET', path: '/v1/models', auth: { matches: true } });
  });
});

describe('OpenAI Chat Completions through the proxy', () => {
  it('parallel tool calls round-trip, streamed and not; answers byte for byte; forwarded messages valid', async () => {
    const session = uid('openai-tools');
    const bodies: Array<Promise<string>> = [];
    const client = openaiClient(session, bodies);
    const before = fake.requests.length;
    const calls = [
      { id: 'call_a1', name: 'read_file', input: { path: 'a.py' } },
      { id: 'call_b1', name: 'read_file', input: { path: 'b.py' } },
    ];
    fake.enqueue({ text: '', toolCalls: calls }, { text: 'Both files parse.' }, { text: 'Bye.' });
    const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'read_file', parameters: { type: 'object', properties: { path: { type: 'string' } } } } }];
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Read a.py and b.py' },
    ];
    const first = await client.chat.completions.create({ model: 'gpt-4o', messages, tools, parallel_tool_calls: true });
    expect(await bodies[0]).toBe(fake.requests[before].responseBody);
    expect(first.choices[0].message.tool_calls).toHaveLength(2);
    await historyOf(session, 3);

    messages.push(first.choices[0].message);
    messages.push({ role: 'tool', tool_call_id: 'call_a1', content: 'print("a")' }, { role: 'tool', tool_call_id: 'call_b1', content: 'print("b")' });
    const streamed = await client.chat.completions.stream({ model: 'gpt-4o', messages, tools, stream_options: { include_usage: true } }).finalChatCompletion();
    expect(streamed.choices[0].message.content).toBe('Both files parse.');
    expect(await bodies[1]).toBe(fake.requests[before + 1].responseBody);
    await historyOf(session, 6);

    messages.push({ role: 'assistant', content: 'Both files parse.' }, { role: 'user', content: 'Thanks' });
    await client.chat.completions.create({ model: 'gpt-4o', messages, tools });
    const stored = await historyOf(session, 8);
    expect(stored.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool', 'assistant', 'user', 'assistant']);
    for (const r of fake.requests.slice(before, before + 3)) {
      expect(r.auth).toMatchObject({ header: 'authorization', scheme: 'Bearer', matches: true });
      expect(r.body).toMatchObject({ model: 'gpt-4o', tools });
      expect(providerValidityProblems(forwardedOpenAI(r))).toEqual([]);
    }
    expect((fake.requests[before + 2].body as { messages: unknown[] }).messages).toEqual(JSON.parse(JSON.stringify(messages)));
    expect(fake.requests[before + 1].body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });
});

describe('large bodies', () => {
  it('takes a multi-megabyte tool result: stored whole, forwarded within the window (the fallback masks it until a compaction would)', async () => {
    const session = uid('large');
    const client = openaiClient(session);
    const big = Array.from({ length: 40_000 }, (_, i) => `line ${i}: ${randomBytes(12).toString('hex')}`).join('\n'); // ~1.7 MB
    fake.enqueue({ text: '', toolCalls: [{ id: 'call_dump', name: 'dump', input: {} }] }, { text: 'That is a lot of lines.' });
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Dump the log' }];
    const first = await client.chat.completions.create({ model: 'gpt-4o', max_tokens: 500, messages });
    messages.push(first.choices[0].message, { role: 'tool', tool_call_id: 'call_dump', content: big });
    const before = fake.requests.length;
    const { response } = await client.chat.completions.create({ model: 'gpt-4o', max_tokens: 500, messages }).withResponse();
    expect(response.headers.get('x-compactor-fallback')).toBe('applied');
    const forwarded = forwardedOpenAI(fake.requests[before]);
    expect(providerValidityProblems(forwarded)).toEqual([]);
    expect(Number(response.headers.get('x-compactor-context-tokens'))).toBeLessThanOrEqual(128_000 - 500);
    expect(JSON.stringify(fake.requests[before].body).length).toBeLessThan(big.length / 4);
    const stored = await historyOf(session, 4);
    expect(stored[2].message).toEqual({ role: 'tool', tool_call_id: 'call_dump', content: big });
  }, 60_000);

  it('takes megabyte messages before the last one (parsed off the event loop), on a new session and on the next turn', async () => {
    const session = uid('large-middle');
    const client = openaiClient(session);
    const log = (n: number) => Array.from({ length: 40_000 }, (_, i) => `${n}.${i}: ${randomBytes(12).toString('hex')}`).join('\n'); // ~1.4 MB
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Dump both logs' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'dump', arguments: '{"log":"a"}' } }] },
      { role: 'tool', tool_call_id: 'call_a', content: log(1) },
      { role: 'user', content: 'And the second one?' },
    ];
    fake.enqueue({ text: '', toolCalls: [{ id: 'call_b', name: 'dump', input: { log: 'b' } }] }, { text: 'Both are long.' });
    const first = await client.chat.completions.create({ model: 'gpt-4o', max_tokens: 500, messages });
    messages.push(first.choices[0].message, { role: 'tool', tool_call_id: 'call_b', content: log(2) }, { role: 'user', content: 'Compare them.' });
    const before = fake.requests.length;
    await client.chat.completions.create({ model: 'gpt-4o', max_tokens: 500, messages });
    expect(providerValidityProblems(forwardedOpenAI(fake.requests[before]))).toEqual([]);
    const stored = await historyOf(session, 8);
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user', 'assistant', 'tool', 'user', 'assistant']);
    expect(stored[2].message).toEqual(messages[2]);
    expect(stored[5].message).toEqual(messages[5]);
    expect(stored[6].message).toEqual(messages[6]);
  }, 60_000);
});

describe('errors', () => {
  it('upstream 4xx and 5xx pass through with their status and body', async () => {
    const session = uid('errors');
    const bodies: Array<Promise<string>> = [];
    fake.enqueue({ status: 400, message: 'messages: bad thing' }, { status: 500, message: 'upstream broke' });
    const anthropic = anthropicClient(session, bodies);
    const openai = openaiClient(`${session}-oa`, bodies);
    const e1 = await failure(anthropic.messages.create({ model: 'claude-opus-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }));
    expect(e1).toBeInstanceOf(Anthropic.BadRequestError);
    expect(await bodies[0]).toBe(fake.requests.at(-1)!.responseBody);
    const e2 = await failure(openai.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }));
    expect(e2).toBeInstanceOf(OpenAI.InternalServerError);
    expect(await bodies[1]).toBe(fake.requests.at(-1)!.responseBody);
    expect(e2.error).toMatchObject({ message: 'upstream broke' });
  });

  it('an upstream that does not answer in time is a 504, one that refuses connections a 502, each in the provider shape naming the upstream', async () => {
    fake.enqueue({ hang: true });
    const started = Date.now();
    const timeout = await failure(anthropicClient(uid('hang')).messages.create({ model: 'claude-opus-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }));
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(timeout.status).toBe(504);
    expect(timeout.error).toEqual({ type: 'error', error: { type: 'timeout_error', message: `Compactor proxy: the Anthropic upstream at ${fake.url} did not answer within ${TIMEOUT_MS} ms` } });

    // A tenant whose settings name its own upstream: here a port nothing listens on.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const tenantName = uid('tenant');
    const tenantKey = await api.tenantKey(['ingest'], tenantName);
    await api.app.get(PrismaService).tenant.update({ where: { name: tenantName }, data: { settings: { proxy: { openaiBaseUrl: `http://127.0.0.1:${port}` } } } });
    const refused = await failure(openaiClient(uid('refused'), [], tenantKey).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }));
    expect(refused.status).toBe(502);
    expect(refused.error).toEqual({
      message: `Compactor proxy: could not reach the OpenAI upstream at http://127.0.0.1:${port}: ECONNREFUSED`,
      type: 'server_error',
      code: 'upstream_unreachable',
      param: null,
    });
  });

  it('a bad Compactor key is a 401 and nothing is forwarded; the provider key is never logged or stored', async () => {
    const before = fake.requests.length;
    for (const compactorKey of ['ck_not_a_real_key_000000000000', '']) {
      const e = await failure(anthropicClient(uid('bad-key'), [], compactorKey).messages.create({ model: 'claude-opus-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }));
      expect(e.status).toBe(401);
      expect(e.error).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    }
    const oa = await failure(openaiClient(uid('bad-key'), [], 'ck_wrong').models.list());
    expect(oa.status).toBe(401);
    expect(fake.requests.length).toBe(before);

    // Everything this suite did so far went through with PROVIDER_KEY: it is nowhere in logs or the database.
    expect(JSON.stringify(api.logs)).not.toContain(PROVIDER_KEY);
    expect(JSON.stringify(api.logs)).not.toContain(key);
    const prisma = api.app.get(PrismaService);
    const [found] = await prisma.$queryRaw<Array<{ n: bigint }>>`
      SELECT (SELECT count(*) FROM messages WHERE raw::text LIKE ${`%${PROVIDER_KEY}%`} OR blocks::text LIKE ${`%${PROVIDER_KEY}%`})
           + (SELECT count(*) FROM events WHERE line LIKE ${`%${PROVIDER_KEY}%`} OR data::text LIKE ${`%${PROVIDER_KEY}%`})
           + (SELECT count(*) FROM sessions WHERE policy::text LIKE ${`%${PROVIDER_KEY}%`}) AS n`;
    expect(Number(found.n)).toBe(0);
  });
});
