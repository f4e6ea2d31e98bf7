import Anthropic from '@anthropic-ai/sdk';
import { Ollama } from 'ollama';
import OpenAI from 'openai';
import { type FakeLlm, fakeLlmKeyFingerprint, fakeStreamChunks, fakeSummaryText, repeatStep, startFakeLlm } from '.';

// The fake upstream itself, checked with raw HTTP and with the official SDKs (which parse the
// streamed event shapes strictly): what the summarizer specs and the proxy build on.

let fake: FakeLlm;

beforeAll(async () => {
  fake = await startFakeLlm();
});

afterAll(async () => {
  await fake.close();
});

beforeEach(() => fake.reset());

async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; text: string }> {
  const response = await fetch(`${fake.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

const chat = { model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Summarize: the build fails in apps/api' }] };

describe('startFakeLlm', () => {
  it('listens on 127.0.0.1 on a random port and answers deterministically', async () => {
    expect(fake.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(fake.port).toBeGreaterThan(0);
    const first = await post('/v1/chat/completions', chat);
    const second = await post('/v1/chat/completions', chat);
    expect(first.status).toBe(200);
    const answer = JSON.parse(first.text) as { choices: Array<{ message: { content: string } }>; usage: { prompt_tokens: number } };
    expect(answer.choices[0].message.content).toBe(fakeSummaryText('Summarize: the build fails in apps/api'));
    expect(answer.usage.prompt_tokens).toBeGreaterThan(0);
    expect(second.text.replace(/fake-\d+/, 'fake-N')).toBe(first.text.replace(/fake-\d+/, 'fake-N'));
  });

  it('records method, path, query, redacted headers, the parsed body and convenience views', async () => {
    await post('/v1/chat/completions?api-version=2024-10-21', chat, { authorization: 'Bearer sk-recorded-secret-123456', 'x-trace': 't1' });
    const [request] = fake.requests;
    expect(request).toMatchObject({
      index: 0,
      method: 'POST',
      path: '/v1/chat/completions',
      query: { 'api-version': '2024-10-21' },
      provider: 'openai',
      body: chat,
      stream: false,
      system: 'Be brief.',
      userContent: 'Summarize: the build fails in apps/api',
      userTurns: 1,
      model: 'gpt-4o-mini',
      outcome: 'answer',
      auth: { header: 'authorization', scheme: 'Bearer', fingerprint: fakeLlmKeyFingerprint('sk-recorded-secret-123456') },
    });
    expect(request.headers['authorization']).toBe('[redacted]');
    expect(request.headers['x-trace']).toBe('t1');
    expect(JSON.stringify(fake.requests)).not.toContain('sk-recorded-secret-123456');
  });

  it('follows a script in order (429 with Retry-After twice, then success), then falls back to the default answer', async () => {
    fake.script([...repeatStep({ status: 429, retryAfter: 2 }, 2), { text: 'scripted' }]);
    expect(fake.pendingSteps()).toBe(3);
    const statuses: number[] = [];
    const retryAfter: Array<string | null> = [];
    for (let i = 0; i < 4; i++) {
      const response = await post('/api/chat', { model: 'llama3.1:8b', stream: false, messages: [{ role: 'user', content: 'hi' }] });
      statuses.push(response.status);
      retryAfter.push(response.headers.get('retry-after'));
      if (i === 2) expect(JSON.parse(response.text)).toMatchObject({ message: { content: 'scripted' }, done: true });
    }
    expect(statuses).toEqual([429, 429, 200, 200]);
    expect(retryAfter).toEqual(['2', '2', null, null]);
    expect(fake.requests.map((r) => r.outcome)).toEqual(['status:429', 'status:429', 'answer', 'answer']);
    expect(fake.pendingSteps()).toBe(0);
  });

  it('script() replaces the pending steps; enqueue() appends', async () => {
    fake.enqueue({ status: 500 });
    fake.script([{ text: 'a' }]);
    fake.enqueue({ text: 'b' });
    const texts = [];
    for (let i = 0; i < 2; i++) texts.push((JSON.parse((await post('/v1/messages', { model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })).text) as { content: Array<{ text: string }> }).content[0].text);
    expect(texts).toEqual(['a', 'b']);
  });

  it('answers errors in each provider’s error shape', async () => {
    fake.script([{ status: 500 }, { status: 529 }, { status: 404 }]);
    expect(JSON.parse((await post('/v1/chat/completions', chat)).text)).toEqual({ error: { message: 'fake upstream error 500', type: 'server_error', code: null, param: null } });
    expect(JSON.parse((await post('/v1/messages', { messages: [] })).text)).toEqual({ type: 'error', error: { type: 'overloaded_error', message: 'fake upstream error 529' } });
    expect(JSON.parse((await post('/api/chat', { stream: false, messages: [] })).text)).toEqual({ error: 'fake upstream error 404' });
  });

  it.each([
    ['invalid-json', (text: string) => expect(() => JSON.parse(text)).toThrow()],
    ['missing-fields', (text: string) => expect(JSON.parse(text)).toMatchObject({ choices: [] })],
    ['empty-text', (text: string) => expect(JSON.parse(text)).toMatchObject({ choices: [{ message: { content: '' } }] })],
  ] as const)('serves a malformed answer (%s) with status 200', async (variant, check) => {
    fake.script([{ malformed: variant }]);
    const response = await post('/v1/chat/completions', chat);
    expect(response.status).toBe(200);
    check(response.text);
  });

  it('sends a raw string body as is (an HTML error page from a proxy)', async () => {
    fake.script([{ status: 502, body: '<html>Bad Gateway</html>', headers: { 'content-type': 'text/html' } }]);
    const response = await post('/api/chat', { stream: false, messages: [] });
    expect(response.status).toBe(502);
    expect(response.headers.get('content-type')).toBe('text/html');
    expect(response.text).toBe('<html>Bad Gateway</html>');
  });

  it('leaves usage out when a step says usage: null', async () => {
    fake.script([{ text: 'x', usage: null }, { text: 'y', usage: null }, { text: 'z', usage: null }]);
    expect(JSON.parse((await post('/v1/chat/completions', chat)).text)).not.toHaveProperty('usage');
    expect(JSON.parse((await post('/v1/messages', { messages: [] })).text)).not.toHaveProperty('usage');
    expect(JSON.parse((await post('/api/chat', { stream: false, messages: [] })).text)).not.toHaveProperty('prompt_eval_count');
  });

  it('requires the configured key and quotes the wrong one back (clients must never repeat it)', async () => {
    const guarded = await startFakeLlm({ apiKey: 'sk-right-key-0000' });
    try {
      const wrong = await fetch(`${guarded.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer sk-wrong-key-1111' }, body: JSON.stringify(chat) });
      expect(wrong.status).toBe(401);
      expect(await wrong.text()).toContain('sk-wrong-key-1111');
      const right = await fetch(`${guarded.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': 'sk-right-key-0000' }, body: JSON.stringify({ messages: [] }) });
      expect(right.status).toBe(200);
      expect(guarded.requests.map((r) => [r.outcome, r.auth?.header, r.auth?.matches])).toEqual([
        ['auth:401', 'authorization', false],
        ['answer', 'x-api-key', true],
      ]);
    } finally {
      await guarded.close();
    }
  });

  it('answers 404 on unknown routes, lists models, and waits for requests without polling', async () => {
    const waiting = fake.waitForRequests(3);
    expect((await fetch(`${fake.url}/v1/nope`)).status).toBe(404);
    expect(((await (await fetch(`${fake.url}/v1/models`)).json()) as { data: unknown[] }).data).toHaveLength(2);
    expect(((await (await fetch(`${fake.url}/api/tags`)).json()) as { models: unknown[] }).models).toHaveLength(2);
    expect((await waiting).map((r) => r.outcome)).toEqual(['not-found', 'list', 'list']);
  });

  it('drops a connection, and close() ends hanging requests', async () => {
    fake.script([{ drop: true }]);
    await expect(post('/v1/chat/completions', chat)).rejects.toThrow();
    const other = await startFakeLlm({ script: [{ hang: true }] });
    const pending = fetch(`${other.url}/api/chat`, { method: 'POST', body: JSON.stringify({ stream: false, messages: [] }) });
    await other.waitForRequests(1);
    await other.close();
    await expect(pending).rejects.toThrow();
    expect(other.requests[0].outcome).toBe('hang');
  });
});

describe('streaming (parsed by the official SDKs)', () => {
  it('streams OpenAI chat.completion.chunk events with a usage chunk and [DONE]', async () => {
    const client = new OpenAI({ apiKey: 'sk-x', baseURL: fake.openaiBaseUrl, maxRetries: 0 });
    fake.script([{ text: 'The build fails in apps/api.', usage: { inputTokens: 40, outputTokens: 7 } }]);
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const deltas: string[] = [];
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk');
      if (chunk.choices[0]?.delta.content) deltas.push(chunk.choices[0].delta.content);
      if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(deltas).toEqual(fakeStreamChunks('The build fails in apps/api.'));
    expect(deltas.join('')).toBe('The build fails in apps/api.');
    expect(finish).toBe('stop');
    expect(usage).toEqual({ prompt_tokens: 40, completion_tokens: 7, total_tokens: 47 });
    expect(fake.requests[0]).toMatchObject({ stream: true, outcome: 'stream' });

    // The SDK's stream helper accumulates the same events into a whole completion.
    const final = await client.chat.completions.stream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'again' }] }).finalChatCompletion();
    expect(final.choices[0].message.content).toBe(fakeSummaryText('again'));
  });

  it('streams Anthropic message events (message_start … message_stop) with usage', async () => {
    const client = new Anthropic({ apiKey: 'sk-ant-x', baseURL: fake.anthropicBaseUrl, maxRetries: 0, logLevel: 'off' });
    fake.script([{ text: 'Checkpoint: build fixed.', chunks: ['Checkpoint: ', 'build ', 'fixed.'], usage: { inputTokens: 30, outputTokens: 5 } }]);
    const stream = client.messages.stream({ model: 'claude-haiku-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    const deltas: string[] = [];
    stream.on('text', (delta) => deltas.push(delta));
    const message = await stream.finalMessage();
    expect(deltas).toEqual(['Checkpoint: ', 'build ', 'fixed.']);
    expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'Checkpoint: build fixed.' })]);
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage).toMatchObject({ input_tokens: 30, output_tokens: 5 });

    const raw = await post('/v1/messages', { model: 'claude-haiku-4-5', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'x' }] });
    expect(raw.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect([...raw.text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1])).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
  });

  it('streams Ollama NDJSON (its default when stream is not false)', async () => {
    const client = new Ollama({ host: fake.ollamaHost });
    fake.script([{ text: 'one two three', usage: { inputTokens: 12, outputTokens: 3 } }]);
    const parts: string[] = [];
    let last: { done: boolean; prompt_eval_count?: number; eval_count?: number } | undefined;
    for await (const part of await client.chat({ model: 'llama3.1:8b', messages: [{ role: 'user', content: 'hi' }], stream: true })) {
      parts.push(part.message.content);
      last = part;
    }
    expect(parts.join('')).toBe('one two three');
    expect(last).toMatchObject({ done: true, prompt_eval_count: 12, eval_count: 3 });
    const defaulted = await post('/api/chat', { model: 'llama3.1:8b', messages: [{ role: 'user', content: 'x' }] });
    expect(defaulted.headers.get('content-type')).toBe('application/x-ndjson');
    expect(fake.requests.map((r) => r.stream)).toEqual([true, true]);
  });

  it('interrupts a stream: drop closes the connection mid-body, stall sends the first chunks and nothing more', async () => {
    const client = new OpenAI({ apiKey: 'sk-x', baseURL: fake.openaiBaseUrl, maxRetries: 0 });
    fake.script([
      { text: 'a b c d', interrupt: { afterChunks: 2, mode: 'drop' } },
      { text: 'a b c d', interrupt: { afterChunks: 1, mode: 'stall' } },
    ]);
    const dropped: string[] = [];
    const consume = async (): Promise<void> => {
      const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], stream: true });
      for await (const chunk of stream) if (chunk.choices[0]?.delta.content) dropped.push(chunk.choices[0].delta.content);
    };
    await expect(consume()).rejects.toThrow();
    expect(dropped).toEqual(['a ', 'b ']);

    const controller = new AbortController();
    const stalled = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], stream: true }, { signal: controller.signal });
    const iterator = stalled[Symbol.asyncIterator]();
    const seen: string[] = [];
    while (seen.length < 1) {
      const { value } = await iterator.next();
      if (value?.choices[0]?.delta.content) seen.push(value.choices[0].delta.content);
    }
    expect(seen).toEqual(['a ']);
    // Nothing more comes: the SDK ends the iteration quietly once the caller aborts.
    controller.abort();
    await expect(iterator.next()).resolves.toEqual({ done: true, value: undefined });
    expect(fake.requests.map((r) => r.outcome)).toEqual(['stream:drop', 'stream:stall']);
  });
});

describe('tool calls, thinking and the bytes sent', () => {
  const calls = [
    { id: 'toolu_read_1', name: 'read_file', input: { path: 'src/a.ts' } },
    { id: 'toolu_read_2', name: 'read_file', input: { path: 'src/b.ts', lines: [1, 20] } },
  ];

  it('Anthropic: thinking, text and parallel tool_use blocks, streamed and not, as the SDK assembles them', async () => {
    const client = new Anthropic({ apiKey: 'sk-ant-x', baseURL: fake.anthropicBaseUrl, maxRetries: 0, logLevel: 'off' });
    const step = { text: 'Reading both files.', toolCalls: calls, thinking: { thinking: 'Two files to read.', signature: 'sig-1' } };
    fake.script([step, step]);
    const params = { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user' as const, content: 'read them' }] };
    const streamed = await client.messages.stream(params).finalMessage();
    const whole = await client.messages.create(params);
    for (const message of [streamed, whole]) {
      expect(message.stop_reason).toBe('tool_use');
      expect(message.content).toEqual([
        expect.objectContaining({ type: 'thinking', thinking: 'Two files to read.', signature: 'sig-1' }),
        expect.objectContaining({ type: 'text', text: 'Reading both files.' }),
        { type: 'tool_use', id: 'toolu_read_1', name: 'read_file', input: { path: 'src/a.ts' } },
        { type: 'tool_use', id: 'toolu_read_2', name: 'read_file', input: { path: 'src/b.ts', lines: [1, 20] } },
      ]);
    }
    expect(fake.requests[0].responseStatus).toBe(200);
    expect(fake.requests[0].responseBody).toContain('"type":"input_json_delta"');
    expect(JSON.parse(fake.requests[1].responseBody ?? '')).toEqual(JSON.parse(JSON.stringify(whole)));
  });

  it('OpenAI: parallel tool_calls, streamed and not, as the SDK assembles them', async () => {
    const client = new OpenAI({ apiKey: 'sk-x', baseURL: fake.openaiBaseUrl, maxRetries: 0 });
    fake.script([{ text: '', toolCalls: calls }, { text: '', toolCalls: calls }]);
    const params = { model: 'gpt-4o', messages: [{ role: 'user' as const, content: 'read them' }] };
    const streamed = await client.chat.completions.stream(params).finalChatCompletion();
    const whole = await client.chat.completions.create(params);
    for (const completion of [streamed, whole]) {
      expect(completion.choices[0].finish_reason).toBe('tool_calls');
      expect(completion.choices[0].message.tool_calls).toEqual([
        { id: 'toolu_read_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"src/a.ts"}' } },
        { id: 'toolu_read_2', type: 'function', function: { name: 'read_file', arguments: '{"path":"src/b.ts","lines":[1,20]}' } },
      ]);
    }
    expect(fake.requests[1].responseBody).toBe(JSON.stringify(whole));
  });

  it('OpenAI Responses: a function_call and a custom_tool_call (a freeform tool), streamed and not, as the SDK assembles them', async () => {
    const client = new OpenAI({ apiKey: 'sk-x', baseURL: fake.openaiBaseUrl, maxRetries: 0 });
    const patch = '*** Begin Patch\n*** Add File: notes.txt\n+checked\n*** End Patch\n';
    const turn = { text: '', toolCalls: [calls[0], { id: 'call_patch_1', name: 'apply_patch', input: patch, custom: true as const }] };
    fake.script([turn, turn]);
    const params = { model: 'gpt-5.5', input: 'read it, then note it' };
    const streamed = await client.responses.stream(params).finalResponse();
    const whole = await client.responses.create(params);
    for (const response of [streamed, whole]) {
      expect(response.output).toEqual([
        expect.objectContaining({ type: 'function_call', status: 'completed', arguments: '{"path":"src/a.ts"}', call_id: 'toolu_read_1', name: 'read_file' }),
        expect.objectContaining({ type: 'custom_tool_call', status: 'completed', call_id: 'call_patch_1', name: 'apply_patch', input: patch }),
      ]);
    }
    const events = (fake.requests[0].responseBody ?? '').split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as { type: string; delta?: string });
    expect(events.filter((e) => e.type === 'response.custom_tool_call_input.delta').map((e) => e.delta).join('')).toBe(patch);
  });
});

describe('tool loops', () => {
  const readCall = (k: number) => ({ id: `call_read_${k}`, name: 'read_file', input: { path: `src/file-${k}.ts` } });
  const fileText = (path: string) => `// ${path}\n${'export const x = 1;\n'.repeat(3)}`;

  it("OpenAI's runTools: each request takes the next turn, the results the client sent are read back, other requests are not the loop's", async () => {
    const client = new OpenAI({ apiKey: 'sk-x', baseURL: fake.openaiBaseUrl, maxRetries: 0, defaultHeaders: { 'x-loop': 'a' } });
    const run = fake.toolLoop({
      match: (r) => r.headers['x-loop'] === 'a',
      turns: [{ text: '', toolCalls: [readCall(0)] }, { text: 'Next.', toolCalls: [readCall(1)] }, { text: 'Both read.' }],
    });
    // A request outside the loop gets the default answer and takes no turn.
    const outside = await new OpenAI({ apiKey: 'sk-x', baseURL: fake.openaiBaseUrl, maxRetries: 0 }).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'title?' }] });
    expect(outside.choices[0].message.content).toBe(fakeSummaryText('title?'));
    const runner = client.chat.completions.runTools({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'read both files' }],
      tools: [
        {
          type: 'function',
          function: { name: 'read_file', description: 'Reads a file', parameters: { type: 'object', properties: { path: { type: 'string' } } }, parse: JSON.parse, function: (args: { path: string }) => fileText(args.path) },
        },
      ],
    });
    expect(await runner.finalContent()).toBe('Both read.');
    expect(run.done()).toBe(true);
    expect(run.overruns()).toBe(0);
    expect(run.requests).toHaveLength(3);
    expect(run.results).toEqual([{ call_read_0: fileText('src/file-0.ts') }, { call_read_1: fileText('src/file-1.ts') }]);
    run.stop();
  });

  it("Anthropic: turns built when their request arrives (held until the test lets go); a result the client left out reads back as undefined", async () => {
    const client = new Anthropic({ apiKey: 'sk-ant-x', baseURL: fake.anthropicBaseUrl, maxRetries: 0, logLevel: 'off' });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const seen: number[] = [];
    const run = fake.toolLoop({
      turns: [
        { text: 'Reading.', toolCalls: [readCall(0)] },
        (request, turn) => {
          seen.push(turn, request.index);
          return { until: released, then: { text: 'Done.' } };
        },
      ],
    });
    const params = { model: 'claude-sonnet-4-5', max_tokens: 100 };
    const first = await client.messages.stream({ ...params, messages: [{ role: 'user', content: 'read it' }] }).finalMessage();
    expect(first.content).toContainEqual({ type: 'tool_use', id: 'call_read_0', name: 'read_file', input: { path: 'src/file-0.ts' } });
    // The client answers with a text instead of the tool result: the loop records that the result is missing.
    const second = client.messages.create({ ...params, messages: [{ role: 'user', content: 'read it' }, { role: 'assistant', content: first.content }, { role: 'user', content: 'never mind' }] });
    await fake.waitForRequests(2);
    expect(run.done()).toBe(true);
    release();
    expect((await second).content).toEqual([expect.objectContaining({ type: 'text', text: 'Done.' })]);
    expect(seen).toEqual([1, 1]);
    expect(run.results).toEqual([{ call_read_0: undefined }]);
    // A request after the last turn gets the last turn again and counts as an overrun.
    await client.messages.create({ ...params, messages: [{ role: 'user', content: 'again' }] });
    expect(run.overruns()).toBe(1);
  });
});
