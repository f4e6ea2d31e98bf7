import { LlmError, type SummarizeRequest } from '@compactor/compaction';
import { type FakeLlm, fakeLlmKeyFingerprint, startFakeLlm } from '@compactor/testing';
import { isOpenAIReasoningModel, OpenAISummarizer, parseOpenAIBaseUrl, REASONING_HEADROOM_TOKENS } from './openai';

const KEY = 'sk-openai-test-key-0123456789';

const request: SummarizeRequest = {
  kind: 'checkpoint',
  instructions: 'You compress agent conversations. Keep paths and errors.',
  messages: [
    { role: 'user', blocks: [{ type: 'text', text: 'Deploy the worker' }] },
    { role: 'assistant', blocks: [{ type: 'tool_use', id: 'call_1', name: 'bash', input: { cmd: 'npm run build' } }] },
    { role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 'call_1', content: 'error TS2322', isError: true }] },
  ],
  targetTokens: 1000,
  goal: 'Ship the worker to production',
};

const noWait = { sleep: async () => undefined, random: () => 0 };

let fake: FakeLlm;

beforeAll(async () => {
  fake = await startFakeLlm({ apiKey: KEY });
});

afterAll(async () => {
  await fake.close();
});

beforeEach(() => fake.reset());

describe('OpenAISummarizer', () => {
  it('sends the instructions as the system prompt and the transcript as one user turn', async () => {
    const summarizer = new OpenAISummarizer({ apiKey: KEY, baseUrl: fake.openaiBaseUrl, ...noWait });
    fake.script([{ text: 'The worker build fails with TS2322.', usage: { inputTokens: 1000, outputTokens: 200 } }]);

    const result = await summarizer.summarize(request);

    expect(result).toEqual({
      text: 'The worker build fails with TS2322.',
      usage: { inputTokens: 1000, outputTokens: 200, costUsd: expect.any(Number) },
      provider: 'openai',
      model: 'gpt-4o-mini',
      attempts: 1,
    });
    // gpt-4o-mini: $0.15 / $0.60 per million tokens.
    expect(result.usage.costUsd).toBeCloseTo((1000 * 0.15 + 200 * 0.6) / 1e6, 12);

    const [sent] = fake.completionRequests();
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.auth).toEqual({ header: 'authorization', scheme: 'Bearer', fingerprint: fakeLlmKeyFingerprint(KEY), matches: true });
    expect(sent.headers['authorization']).toBe('[redacted]');
    expect(sent.body).toEqual({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: request.instructions },
        {
          role: 'user',
          content:
            'Session goal: Ship the worker to production\n\n' +
            'USER: Deploy the worker\n\nASSISTANT: [tool call bash {"cmd":"npm run build"}]\n\nTOOL: [tool result (error)]\nerror TS2322',
        },
      ],
      max_tokens: 1500,
      temperature: 0,
      stream: false,
    });
    expect(sent.userTurns).toBe(1);
  });

  it('asks for at least 256 output tokens', async () => {
    const summarizer = new OpenAISummarizer({ apiKey: KEY, baseUrl: fake.openaiBaseUrl, ...noWait });
    await summarizer.summarize({ ...request, targetTokens: 50, goal: undefined });
    const [sent] = fake.completionRequests();
    expect((sent.body as { max_tokens: number }).max_tokens).toBe(256);
    expect(sent.userContent?.startsWith('USER: Deploy the worker')).toBe(true);
  });

  it('exposes the catalog window and is not deterministic', () => {
    const summarizer = new OpenAISummarizer({ apiKey: KEY });
    expect(summarizer.contextWindow).toBe(128_000);
    expect(summarizer.deterministic).toBe(false);
    expect(summarizer.baseUrl).toBe('https://api.openai.com/v1');
  });

  it('talks to an OpenAI-compatible base URL without a key (no Authorization header, cost 0 for a local model)', async () => {
    const open = await startFakeLlm();
    try {
      const summarizer = new OpenAISummarizer({ baseUrl: open.url, model: 'llama3.1:8b', ...noWait });
      const result = await summarizer.summarize(request);
      expect(result.usage.costUsd).toBe(0);
      expect(result.model).toBe('llama3.1:8b');
      const [sent] = open.completionRequests();
      expect(sent.path).toBe('/chat/completions');
      expect(sent.auth).toBeUndefined();
      expect(sent.headers['authorization']).toBeUndefined();
      expect(sent.model).toBe('llama3.1:8b');
    } finally {
      await open.close();
    }
  });

  it('prices OpenRouter-style ids from the catalog, and `prices: null` forces 0', async () => {
    fake.script([
      { text: 'ok', usage: { inputTokens: 2_000_000, outputTokens: 0 } },
      { text: 'ok', usage: { inputTokens: 2_000_000, outputTokens: 0 } },
    ]);
    const routed = new OpenAISummarizer({ apiKey: KEY, baseUrl: fake.openaiBaseUrl, model: 'openai/gpt-4o-mini', ...noWait });
    expect((await routed.summarize(request)).usage.costUsd).toBeCloseTo(0.3, 10);
    const free = new OpenAISummarizer({ apiKey: KEY, baseUrl: fake.openaiBaseUrl, model: 'gpt-4o-mini', prices: null, ...noWait });
    expect((await free.summarize(request)).usage.costUsd).toBe(0);
  });

  it('uses max_completion_tokens (with room for reasoning) and no temperature for reasoning models', async () => {
    expect(isOpenAIReasoningModel('o3-mini')).toBe(true);
    expect(isOpenAIReasoningModel('openai/gpt-5-mini')).toBe(true);
    expect(isOpenAIReasoningModel('gpt-5.1')).toBe(true);
    expect(isOpenAIReasoningModel('gpt-5-chat-latest')).toBe(false);
    expect(isOpenAIReasoningModel('gpt-5.1-chat-latest')).toBe(false);
    expect(isOpenAIReasoningModel('gpt-4o-mini')).toBe(false);
    const summarizer = new OpenAISummarizer({ apiKey: KEY, baseUrl: fake.openaiBaseUrl, model: 'o3-mini', ...noWait });
    await summarizer.summarize(request);
    const body = fake.completionRequests()[0].body as Record<string, unknown>;
    expect(body['max_completion_tokens']).toBe(1500 + REASONING_HEADROOM_TOKENS);
    expect(body['reasoning_effort']).toBe('low');
    expect(body).not.toHaveProperty('max_tokens');
    expect(body).not.toHaveProperty('temperature');
  });

  it('gets a 401 for a wrong key, without retrying and without repeating it', async () => {
    const wrong = 'sk-wrong-key-abcdefghijklmnop';
    const summarizer = new OpenAISummarizer({ apiKey: wrong, baseUrl: fake.openaiBaseUrl, ...noWait });
    await expect(summarizer.summarize(request)).rejects.toMatchObject({ kind: 'auth', attempts: 1, status: 401 });
    const error = await summarizer.summarize(request).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LlmError);
    expect((error as LlmError).message).toBe('openai: HTTP 401 authentication failed (invalid_api_key)');
    // What the client sent (the fake's own 401 body quotes the key, as OpenAI's does; that is not the client repeating it).
    expect(JSON.stringify(fake.requests.map(({ responseBody: _sent, ...received }) => received))).not.toContain(wrong);
    expect(JSON.stringify(error)).not.toContain(wrong);
    expect(fake.requests[0].auth?.matches).toBe(false);
  });

  it('treats an empty choices array and a refusal as malformed', async () => {
    const summarizer = new OpenAISummarizer({ apiKey: KEY, baseUrl: fake.openaiBaseUrl, ...noWait });
    fake.script([
      { body: { id: 'x', object: 'chat.completion', choices: [] } },
      { body: { id: 'y', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: null, refusal: 'I cannot' } }] } },
    ]);
    await expect(summarizer.summarize(request)).rejects.toMatchObject({ kind: 'malformed', attempts: 2, message: 'openai: malformed answer (refusal) after 2 attempts' });
  });

  it('treats a 200 whose body is not a completion (wrong shape) as malformed', async () => {
    const summarizer = new OpenAISummarizer({ apiKey: KEY, baseUrl: fake.openaiBaseUrl, ...noWait });
    fake.script([{ body: { result: 'ok' } }, { body: [1, 2, 3] }]);
    await expect(summarizer.summarize(request)).rejects.toMatchObject({ kind: 'malformed', attempts: 2 });
  });

  it('refuses to start without a key or a base URL, naming the variable', () => {
    expect(() => new OpenAISummarizer({})).toThrow(/OPENAI_API_KEY/);
  });
});

describe('OpenAI-compatible base URLs', () => {
  it.each([
    ['https://api.openai.com/v1', 'https://api.openai.com/v1', {}],
    ['http://localhost:8000/v1/', 'http://localhost:8000/v1', {}],
    ['https://openrouter.ai/api/v1', 'https://openrouter.ai/api/v1', {}],
    ['http://127.0.0.1:11434/v1/chat/completions', 'http://127.0.0.1:11434/v1', {}],
    ['http://lmstudio.local:1234', 'http://lmstudio.local:1234', {}],
    ['https://gw.example.com/openai/v1?api-version=2024-10-21', 'https://gw.example.com/openai/v1', { 'api-version': '2024-10-21' }],
  ])('%s → %s', (raw, baseURL, query) => {
    expect(parseOpenAIBaseUrl(raw)).toEqual({ baseURL, query });
  });

  it('rejects a URL that is not http(s), naming the variable', () => {
    expect(() => parseOpenAIBaseUrl('ftp://x/v1')).toThrow(expect.objectContaining({ variable: 'COMPACTOR_SUMMARIZER_BASE_URL' }));
    expect(() => parseOpenAIBaseUrl('not a url')).toThrow(/COMPACTOR_SUMMARIZER_BASE_URL/);
  });

  it.each([
    ['with /v1', (f: FakeLlm) => `${f.url}/v1`, '/v1/chat/completions'],
    ['with a trailing slash', (f: FakeLlm) => `${f.url}/v1/`, '/v1/chat/completions'],
    ['as the full endpoint', (f: FakeLlm) => `${f.url}/v1/chat/completions`, '/v1/chat/completions'],
    ['without a prefix (no /v1 added)', (f: FakeLlm) => f.url, '/chat/completions'],
  ])('posts to the right path when the base URL is given %s', async (_label, url, path) => {
    const summarizer = new OpenAISummarizer({ apiKey: KEY, baseUrl: url(fake), ...noWait });
    await summarizer.summarize(request);
    expect(fake.completionRequests().map((r) => r.path)).toEqual([path]);
  });

  it('keeps query parameters of the base URL on the request, and out of the baseUrl shown', async () => {
    const summarizer = new OpenAISummarizer({ apiKey: KEY, baseUrl: `${fake.url}/v1?api-version=2024-10-21`, ...noWait });
    expect(summarizer.baseUrl).toBe(`${fake.url}/v1`);
    await summarizer.summarize(request);
    const [sent] = fake.completionRequests();
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.query).toEqual({ 'api-version': '2024-10-21' });
  });
});
