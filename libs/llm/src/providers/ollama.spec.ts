import { renderTranscript, type SummarizeRequest } from '@compactor/compaction';
import { type FakeLlm, startFakeLlm } from '@compactor/testing';
import { normalizeOllamaHost, OLLAMA_DEFAULT_NUM_CTX, OllamaSummarizer } from './ollama';

const request: SummarizeRequest = {
  kind: 'chunk',
  instructions: 'Summarize this chunk.',
  messages: [{ role: 'user', blocks: [{ type: 'text', text: 'npm ERR! code ELIFECYCLE in packages/api' }] }],
  targetTokens: 500,
  goal: 'Fix CI',
};

const noWait = { sleep: async () => undefined, random: () => 0 };

let fake: FakeLlm;

beforeAll(async () => {
  fake = await startFakeLlm();
});

afterAll(async () => {
  await fake.close();
});

beforeEach(() => fake.reset());

describe('OllamaSummarizer', () => {
  it('calls the native /api/chat with num_ctx, num_predict and stream: false; usage from the eval counts, cost 0', async () => {
    const summarizer = new OllamaSummarizer({ host: fake.ollamaHost, model: 'qwen2.5:14b', numCtx: 16_384, ...noWait });
    fake.script([{ text: 'CI fails: ELIFECYCLE in packages/api.', usage: { inputTokens: 321, outputTokens: 12 } }]);

    const result = await summarizer.summarize(request);

    expect(result).toEqual({
      text: 'CI fails: ELIFECYCLE in packages/api.',
      usage: { inputTokens: 321, outputTokens: 12, costUsd: 0 },
      provider: 'ollama',
      model: 'qwen2.5:14b',
      attempts: 1,
    });
    const [sent] = fake.completionRequests();
    expect(sent.path).toBe('/api/chat');
    expect(sent.body).toEqual({
      model: 'qwen2.5:14b',
      messages: [
        { role: 'system', content: 'Summarize this chunk.' },
        { role: 'user', content: `Session goal: Fix CI\n\n${renderTranscript(request.messages)}` },
      ],
      stream: false,
      options: { num_ctx: 16_384, num_predict: 750, temperature: 0 },
    });
    expect(sent.stream).toBe(false);
  });

  it('reports num_ctx as its context window (default 8192), not the model’s trained window', () => {
    expect(new OllamaSummarizer({ host: fake.ollamaHost, numCtx: 32_768 }).contextWindow).toBe(32_768);
    expect(new OllamaSummarizer({ host: fake.ollamaHost }).contextWindow).toBe(OLLAMA_DEFAULT_NUM_CTX);
    expect(OLLAMA_DEFAULT_NUM_CTX).toBe(8192);
  });

  it('never asks for more output than num_ctx, and sends keep_alive when set', async () => {
    const summarizer = new OllamaSummarizer({ host: fake.ollamaHost, numCtx: 1024, keepAlive: '10m', ...noWait });
    await summarizer.summarize({ ...request, targetTokens: 4000 });
    const body = fake.completionRequests()[0].body as { keep_alive: string; options: { num_ctx: number; num_predict: number } };
    expect(body.options).toMatchObject({ num_ctx: 1024, num_predict: 1024 });
    expect(body.keep_alive).toBe('10m');
  });

  it.each([
    ['the root', (f: FakeLlm) => f.url],
    ['/api', (f: FakeLlm) => `${f.url}/api/`],
    ['/api/chat', (f: FakeLlm) => `${f.url}/api/chat`],
    ['the OpenAI-compatible /v1', (f: FakeLlm) => `${f.url}/v1`],
  ])('posts to /api/chat when the host is given with %s', async (_label, host) => {
    expect(normalizeOllamaHost(host(fake))).toBe(fake.url);
    await new OllamaSummarizer({ host: host(fake), ...noWait }).summarize(request);
    expect(fake.completionRequests().map((r) => r.path)).toEqual(['/api/chat']);
  });

  it('sends custom headers (a proxy token) and keeps the token out of errors', async () => {
    const token = 'proxy-token-SECRET-42424242';
    const summarizer = new OllamaSummarizer({ host: fake.ollamaHost, headers: { Authorization: `Bearer ${token}` }, ...noWait });
    fake.script([{ status: 401, message: `bad token ${token}` }]);
    const error = await summarizer.summarize(request).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ kind: 'auth', attempts: 1, status: 401, message: 'ollama: HTTP 401 authentication failed' });
    expect(JSON.stringify(error)).not.toContain(token);
    expect(fake.completionRequests()[0].auth?.header).toBe('authorization');
  });

  it('classifies a non-JSON error page (a proxy’s 502) by status, without the package logging to the console', async () => {
    const log = jest.spyOn(console, 'log').mockImplementation(() => undefined);
    try {
      fake.script([
        { status: 502, body: '<html>Bad Gateway</html>', headers: { 'content-type': 'text/html', 'retry-after': '1' } },
        { text: 'recovered' },
      ]);
      const sleeps: number[] = [];
      const result = await new OllamaSummarizer({ host: fake.ollamaHost, sleep: async (ms) => void sleeps.push(ms) }).summarize(request);
      expect(result).toMatchObject({ text: 'recovered', attempts: 2 });
      expect(sleeps).toEqual([1000]);
      expect(log).not.toHaveBeenCalled();
    } finally {
      log.mockRestore();
    }
  });

  it('treats an answer without message.content as malformed', async () => {
    const summarizer = new OllamaSummarizer({ host: fake.ollamaHost, ...noWait });
    fake.script([{ body: { model: 'llama3.1:8b', done: true, message: { role: 'assistant' } } }, { body: { done: true } }]);
    await expect(summarizer.summarize(request)).rejects.toMatchObject({ kind: 'malformed', attempts: 2 });
  });
});
