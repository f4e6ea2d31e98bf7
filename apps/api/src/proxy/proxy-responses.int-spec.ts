import { toResponses, CanonicalMessage } from '@compactor/compaction';
import { FakeLlm, pollUntil } from '@compactor/testing';
import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import request from 'supertest';
import { TestApi } from '../test-app';
import { startProxyTestStack } from './proxy-test-stack';

/**
 * The OpenAI Responses API through the proxy (issue #17 item 1): the official SDK's `responses.create`
 * (streamed and not) with only its base URL changed, the real API on its own database, and the fake
 * upstream speaking Responses. What a user relies on: the forwarded `input` is the session's context with
 * the request's own instructions, tools and parameters; the answer arrives byte for byte; the history
 * gives back exactly the items that were sent and answered (opaque ones included); a request chained by
 * `previous_response_id` is forwarded untouched and says so.
 */

jest.setTimeout(30_000);

let api: TestApi;
let fake: FakeLlm;
let key: string;
let base: string;

beforeAll(async () => {
  ({ api, fake, key, base } = await startProxyTestStack({ scopes: ['ingest', 'read'] }));
}, 60_000);
afterAll(async () => {
  await api?.close();
  await fake?.close();
});

const uid = (name: string) => `${name}-${randomBytes(4).toString('hex')}`;
const http = () => request(api.app.getHttpServer());
const auth = () => ({ Authorization: `Bearer ${key}` });

/** A fetch that keeps every response's body text and headers, to compare with what the fake sent. */
function recordingFetch(seen: Array<{ body: Promise<string>; headers: Headers }>): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    seen.push({ body: response.clone().text(), headers: response.headers });
    return response;
  };
}

function client(session: string, seen: Array<{ body: Promise<string>; headers: Headers }> = []): OpenAI {
  return new OpenAI({
    apiKey: 'sk-provider-test',
    baseURL: `${base}/v1/proxy/openai/v1`,
    defaultHeaders: { 'X-Compactor-Key': key, 'X-Compactor-Session': session },
    maxRetries: 0,
    logLevel: 'off',
    fetch: recordingFetch(seen),
  });
}

/** The session's history as Responses items (each stored message gives back its items). */
async function historyItems(session: string): Promise<unknown[]> {
  const res = await http().get(`/v1/sessions/${session}/messages?limit=500`).set(auth()).expect(200);
  return toResponses((res.body.messages as Array<{ message: CanonicalMessage }>).map((m) => m.message));
}

const TOOLS = [{ type: 'function' as const, name: 'exec_command', description: 'Runs a shell command', parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] }, strict: false }];

describe('POST /v1/proxy/openai/v1/responses', () => {
  for (const stream of [false, true]) {
    it(`records the new items, forwards the context as input with the request's own fields, and answers byte for byte (${stream ? 'streamed' : 'not streamed'})`, async () => {
      const session = uid(`responses-${stream ? 's' : 'j'}`);
      const seen: Array<{ body: Promise<string>; headers: Headers }> = [];
      const openai = client(session, seen);
      const first = [
        { type: 'message' as const, role: 'developer' as const, content: [{ type: 'input_text' as const, text: 'You are a coding agent.' }] },
        { type: 'message' as const, role: 'user' as const, content: [{ type: 'input_text' as const, text: 'List the files.' }] },
      ];
      fake.enqueue({ text: '', toolCalls: [{ id: 'call_ls', name: 'exec_command', input: { cmd: 'ls' } }] });
      const params = { model: 'gpt-5-codex', instructions: 'Be brief.', tools: TOOLS, store: false, parallel_tool_calls: true, reasoning: { effort: 'low' as const } };
      let output: unknown[];
      const deltas: string[] = [];
      if (stream) {
        const events = await openai.responses.create({ ...params, input: first, stream: true });
        const types: string[] = [];
        output = [];
        for await (const event of events) {
          types.push(event.type);
          if (event.type === 'response.function_call_arguments.delta') deltas.push(event.delta);
          if (event.type === 'response.completed') output = event.response.output;
        }
        expect(types).toEqual(expect.arrayContaining(['response.created', 'response.output_item.added', 'response.function_call_arguments.delta', 'response.output_item.done', 'response.completed']));
        expect(deltas.join('')).toBe('{"cmd":"ls"}');
      } else {
        const answer = await openai.responses.create({ ...params, input: first });
        output = answer.output;
      }
      const sent = fake.completionRequests().at(-1)!;
      expect(sent.path).toBe('/v1/responses');
      const body = sent.body as Record<string, unknown>;
      // The request's own fields go upstream as sent, the conversation as `input`.
      expect(body).toMatchObject({ ...params, ...(stream ? { stream: true } : {}) });
      expect(body.input).toEqual(first);
      // The client received exactly the bytes the upstream sent.
      expect(await seen[0].body).toBe(sent.responseBody);
      expect(seen[0].headers.get('x-compactor-session')).toBe(session);

      // The next request carries the call and its output: the new items are recorded, the history is exact.
      fake.enqueue({ text: 'Two files.' });
      const next = [...first, ...(output as Array<Record<string, unknown>>), { type: 'function_call_output' as const, call_id: 'call_ls', output: 'a.txt\nb.txt' }];
      if (stream) {
        const events = await openai.responses.create({ ...params, input: next as OpenAI.Responses.ResponseInputItem[], stream: true });
        for await (const _event of events) void _event;
      } else {
        await openai.responses.create({ ...params, input: next as OpenAI.Responses.ResponseInputItem[] });
      }
      expect((fake.completionRequests().at(-1)!.body as Record<string, unknown>).input).toEqual(next);
      expect(fake.completionRequests().at(-1)!.responseBody).toContain('Two files.');
      await pollUntil(async () => ((await historyItems(session)).length === next.length + 1 ? true : undefined), { timeoutMs: 10_000 }).catch(async (e) => {
        throw new Error(`${String(e)} ${JSON.stringify(await historyItems(session))}`);
      });
      const history = await historyItems(session);
      expect(history.slice(0, next.length)).toEqual(next);
      expect(history.at(-1)).toMatchObject({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Two files.' }] });
      // One session, no fork.
      await http().get(`/v1/sessions/${session}:fork-1`).set(auth()).expect(404);
    });
  }

  it('stores items it does not model (encrypted reasoning, compaction items) opaque and forwards them in place', async () => {
    const session = uid('responses-opaque');
    const openai = client(session);
    const input = [
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Continue the task.' }] },
      { type: 'compaction', id: 'cmp_1', encrypted_content: 'gAAAA-provider-compaction' },
      { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'gAAAA-encrypted-reasoning' },
      { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'exec_command', arguments: '{"cmd":"pwd"}', status: 'completed' },
      { type: 'function_call_output', call_id: 'call_1', output: '/work' },
    ];
    fake.enqueue({ text: 'Done.', thinking: { thinking: 'checking', signature: 'gAAAA-answer-reasoning' } });
    const answer = await openai.responses.create({ model: 'gpt-5-codex', input: input as OpenAI.Responses.ResponseInputItem[], tools: TOOLS, store: false, include: ['reasoning.encrypted_content'] });
    expect((fake.completionRequests().at(-1)!.body as Record<string, unknown>).input).toEqual(input);
    await pollUntil(async () => ((await historyItems(session)).length === input.length + answer.output.length ? true : undefined), { timeoutMs: 10_000 });
    const history = await historyItems(session);
    expect(history).toEqual([...input, ...JSON.parse(JSON.stringify(answer.output))]);
    expect(history.find((i) => (i as { id?: string }).id === 'rs_fake_' + fake.completionRequests().at(-1)!.index)).toMatchObject({ encrypted_content: 'gAAAA-answer-reasoning' });
    // GET context?format=responses serves the context as a Responses `input`: here (nothing compacted) the whole history.
    const context = await http().get(`/v1/sessions/${session}/context?format=responses`).set(auth()).expect(200);
    expect(context.body).toMatchObject({ format: 'responses', messages: [] });
    expect(context.body.input).toEqual(history);

    // The client sends the answer back (its reasoning item with it): no fork, the same items forwarded.
    fake.enqueue({ text: 'Anything else?' });
    const again = [...input, ...(answer.output as unknown as Array<Record<string, unknown>>), { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'No.' }] }];
    const res = await fetch(`${base}/v1/proxy/openai/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-Compactor-Key': key, 'X-Compactor-Session': session, Authorization: 'Bearer sk-provider-test' },
      body: JSON.stringify({ model: 'gpt-5-codex', input: again, store: false }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-compactor-forked-from')).toBeNull();
    expect((fake.completionRequests().at(-1)!.body as Record<string, unknown>).input).toEqual(again);
  });

  it('forwards a request chained by previous_response_id untouched, says so, and records no history', async () => {
    const session = uid('responses-chained');
    // The session exists (an earlier request of the conversation), so the chained request is noted on it.
    fake.enqueue({ text: 'first' });
    await client(session).responses.create({ model: 'gpt-5-codex', input: 'Hello' });
    await pollUntil(async () => ((await historyItems(session)).length === 2 ? true : undefined), { timeoutMs: 10_000 });
    fake.enqueue({ text: 'chained' });
    const body = JSON.stringify({ model: 'gpt-5-codex', previous_response_id: 'resp_upstream_1', input: [{ role: 'user', content: 'And then?' }], store: true });
    const res = await fetch(`${base}/v1/proxy/openai/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-Compactor-Key': key, 'X-Compactor-Session': session, Authorization: 'Bearer sk-provider-test' },
      body,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-compactor-not-compacted')).toMatch(/^previous_response_id: /);
    await res.text();
    // Byte for byte what the client sent.
    expect(JSON.stringify(fake.completionRequests().at(-1)!.body)).toBe(body);
    const events = await pollUntil(
      async () => {
        const r = await http().get(`/v1/sessions/${session}/events`).set(auth()).expect(200);
        const list = (r.body.events ?? r.body) as Array<{ type: string; data: Record<string, unknown> }>;
        return list.find((e) => e.type === 'not-compacted');
      },
      { timeoutMs: 10_000 },
    );
    expect(events.data).toMatchObject({ reason: 'previous_response_id', previousResponseId: 'resp_upstream_1', status: 200 });
    expect(await historyItems(session)).toHaveLength(2);
  });

  it('passes POST /v1/responses/compact and other paths through', async () => {
    const body = JSON.stringify({ model: 'gpt-5-codex', input: [{ role: 'user', content: 'x' }] });
    const res = await fetch(`${base}/v1/proxy/openai/v1/responses/compact`, { method: 'POST', headers: { 'content-type': 'application/json', 'X-Compactor-Key': key }, body });
    // The fake has no such route: its own 404 comes back, and it saw the request as sent.
    expect(res.status).toBe(404);
    const seen = fake.requests.at(-1)!;
    expect(seen.path).toBe('/v1/responses/compact');
    expect(JSON.stringify(seen.body)).toBe(body);
  });

  it('refuses a bad item with a 400 naming its field, and stores nothing', async () => {
    const session = uid('responses-bad');
    const before = fake.requests.length;
    const res = await fetch(`${base}/v1/proxy/openai/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-Compactor-Key': key, 'X-Compactor-Session': session },
      body: JSON.stringify({ model: 'gpt-5-codex', input: [{ role: 'user', content: 'hi' }, { type: 'function_call', call_id: 'bad id', name: 'x', arguments: '{}' }] }),
    });
    expect(res.status).toBe(400);
    const error = (await res.json()) as { error: { message: string } };
    expect(error.error.message).toContain('input[1].call_id');
    expect(fake.requests.length).toBe(before);
    const notInput = await fetch(`${base}/v1/proxy/openai/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-Compactor-Key': key, 'X-Compactor-Session': session },
      body: JSON.stringify({ model: 'gpt-5-codex', input: 42 }),
    });
    expect(notInput.status).toBe(400);
    expect(((await notInput.json()) as { error: { message: string } }).error.message).toContain('input');
    // An output for a call nobody made: the sequence check names the item as sent.
    const orphan = await fetch(`${base}/v1/proxy/openai/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-Compactor-Key': key, 'X-Compactor-Session': session },
      body: JSON.stringify({ model: 'gpt-5-codex', input: [{ role: 'user', content: 'hi' }, { type: 'function_call_output', call_id: 'call_nobody', output: 'x' }] }),
    });
    expect(orphan.status).toBe(400);
    expect(((await orphan.json()) as { error: { message: string } }).error.message).toContain("input[1].call_id: no tool call with id 'call_nobody'");
    await http().get(`/v1/sessions/${session}`).set(auth()).expect(404);
  });
});
