import { renderTranscript, type SummarizeRequest } from '@compactor/compaction';
import { type FakeLlm, fakeLlmKeyFingerprint, startFakeLlm } from '@compactor/testing';
import { AnthropicSummarizer, normalizeAnthropicBaseUrl } from './anthropic';
import { SummarizerConfigError } from './errors';

const KEY = 'sk-ant-test-key-0123456789';

const request: SummarizeRequest = {
  kind: 'checkpoint',
  instructions: 'You compress agent conversations. Keep paths and errors.',
  messages: [
    { role: 'user', blocks: [{ type: 'text', text: 'Deploy the worker' }] },
    { role: 'assistant', blocks: [{ type: 'tool_use', id: 'toolu_1', name: 'bash', input: { cmd: 'npm run build' } }] },
    { role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 'toolu_1', content: 'error TS2322', isError: true }] },
  ],
  targetTokens: 1000,
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

describe('AnthropicSummarizer', () => {
  it('sends a Messages API request: top-level system, one user turn, max_tokens, no sampling parameters', async () => {
    const summarizer = new AnthropicSummarizer({ apiKey: KEY, baseUrl: fake.anthropicBaseUrl, ...noWait });
    fake.script([{ text: 'Build fails with TS2322.', usage: { inputTokens: 2000, outputTokens: 300 } }]);

    const result = await summarizer.summarize(request);

    expect(result).toEqual({
      text: 'Build fails with TS2322.',
      usage: { inputTokens: 2000, outputTokens: 300, costUsd: expect.any(Number) },
      provider: 'anthropic',
      model: 'claude-haiku-4-5',
      attempts: 1,
    });
    // claude-haiku-4-5: $1 / $5 per million tokens.
    expect(result.usage.costUsd).toBeCloseTo((2000 * 1 + 300 * 5) / 1e6, 12);

    const [sent] = fake.completionRequests();
    expect(sent.path).toBe('/v1/messages');
    expect(sent.body).toEqual({
      model: 'claude-haiku-4-5',
      max_tokens: 1500,
      system: request.instructions,
      messages: [{ role: 'user', content: renderTranscript(request.messages) }],
    });
    expect(sent.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(sent.auth).toEqual({ header: 'authorization', scheme: 'Bearer', fingerprint: fakeLlmKeyFingerprint(KEY), matches: true });
    expect(sent.headers['x-api-key']).toBeUndefined();
  });

  it('can send the key as x-api-key instead (for proxies that read only that header)', async () => {
    const summarizer = new AnthropicSummarizer({ apiKey: KEY, baseUrl: fake.anthropicBaseUrl, apiKeyHeader: 'x-api-key', ...noWait });
    await summarizer.summarize(request);
    const [sent] = fake.completionRequests();
    expect(sent.auth).toEqual({ header: 'x-api-key', fingerprint: fakeLlmKeyFingerprint(KEY), matches: true });
    expect(sent.headers['authorization']).toBeUndefined();
  });

  it('exposes the catalog window and caps max_tokens at the model’s output reserve', async () => {
    const summarizer = new AnthropicSummarizer({ apiKey: KEY, baseUrl: fake.anthropicBaseUrl, ...noWait });
    expect(summarizer.contextWindow).toBe(200_000);
    expect(summarizer.deterministic).toBe(false);
    await summarizer.summarize({ ...request, targetTokens: 20_000 });
    expect((fake.completionRequests()[0].body as { max_tokens: number }).max_tokens).toBe(16_384);
  });

  it.each([
    ['the root', (f: FakeLlm) => f.url],
    ['a /v1 suffix', (f: FakeLlm) => `${f.url}/v1/`],
    ['the full endpoint', (f: FakeLlm) => `${f.url}/v1/messages`],
  ])('posts to /v1/messages when the base URL is %s', async (_label, url) => {
    const summarizer = new AnthropicSummarizer({ apiKey: KEY, baseUrl: url(fake), ...noWait });
    await summarizer.summarize(request);
    expect(fake.completionRequests().map((r) => r.path)).toEqual(['/v1/messages']);
    expect(normalizeAnthropicBaseUrl(url(fake))).toBe(fake.url);
  });

  it('accepts a summary cut by max_tokens (it is still text), joining text blocks', async () => {
    const summarizer = new AnthropicSummarizer({ apiKey: KEY, baseUrl: fake.anthropicBaseUrl, ...noWait });
    fake.script([
      {
        body: {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'claude-haiku-4-5',
          content: [
            { type: 'thinking', thinking: 'hmm', signature: 'sig' },
            { type: 'text', text: 'Part one. ' },
            { type: 'text', text: 'Part two' },
          ],
          stop_reason: 'max_tokens',
          usage: { input_tokens: 10, output_tokens: 1500 },
        },
      },
    ]);
    const result = await summarizer.summarize(request);
    expect(result.text).toBe('Part one. Part two');
    expect(result.usage.outputTokens).toBe(1500);
  });

  it('treats an answer without a text block, or without content, as malformed', async () => {
    const summarizer = new AnthropicSummarizer({ apiKey: KEY, baseUrl: fake.anthropicBaseUrl, ...noWait });
    fake.script([
      { body: { id: 'm', type: 'message', role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'x', input: {} }], usage: { input_tokens: 1, output_tokens: 1 } } },
      { body: { id: 'm', type: 'message', role: 'assistant', usage: { input_tokens: 1, output_tokens: 1 } } },
    ]);
    await expect(summarizer.summarize(request)).rejects.toMatchObject({ kind: 'malformed', attempts: 2, message: 'anthropic: malformed answer (no content) after 2 attempts' });
  });

  it('gets a 401 for a wrong key without retrying, and never repeats the key', async () => {
    const wrong = 'sk-ant-wrong-key-abcdefghijkl';
    const summarizer = new AnthropicSummarizer({ apiKey: wrong, baseUrl: fake.anthropicBaseUrl, ...noWait });
    const error = await summarizer.summarize(request).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ name: 'LlmError', kind: 'auth', attempts: 1, status: 401, message: 'anthropic: HTTP 401 authentication failed (authentication_error)' });
    expect(JSON.stringify(error)).not.toContain(wrong);
    expect(fake.completionRequests()).toHaveLength(1);
  });

  it('refuses to start without a key, naming the variable', () => {
    expect(() => new AnthropicSummarizer({ apiKey: '' })).toThrow(SummarizerConfigError);
    expect(() => new AnthropicSummarizer({ apiKey: '' })).toThrow(expect.objectContaining({ variable: 'ANTHROPIC_API_KEY' }));
  });
});
