import { inspect } from 'node:util';
import { LlmError, renderTranscript, type SummarizeRequest } from '@compactor/compaction';
import { type FakeLlm, type FakeLlmRequest, fakeSummaryText, repeatStep, startFakeLlm } from '@compactor/testing';
import { resolveModel } from '@compactor/tokens';
import { AnthropicSummarizer } from './anthropic';
import { OllamaSummarizer } from './ollama';
import { OpenAISummarizer } from './openai';
import { estimateTokens, type RemoteSummarizer, type RemoteSummarizerOptions } from './remote-summarizer';
import { defaultSleep } from './retry';

// Behaviour every remote summarizer shares, over the wire against the fake upstream:
// retries (seed 003: 3 attempts), Retry-After, timeouts, malformed answers, auth, aborts, secrets.

const KEY = 'sk-test-SECRET-0123456789abcdef';

const request: SummarizeRequest = {
  kind: 'checkpoint',
  instructions: 'Summarize the conversation.',
  messages: [
    { role: 'user', blocks: [{ type: 'text', text: 'Fix the failing build in apps/api' }] },
    { role: 'assistant', blocks: [{ type: 'text', text: 'The error is TS2322 in src/main.ts' }] },
  ],
  targetTokens: 400,
};

interface Harness {
  sleeps: number[];
  make: (extra?: Partial<RemoteSummarizerOptions> & { apiKey?: string }) => RemoteSummarizer;
}

type Factory = (fake: FakeLlm, options: RemoteSummarizerOptions & { apiKey?: string }) => RemoteSummarizer;

interface WireView {
  path: string;
  system: (body: Record<string, unknown>) => unknown;
  maxTokens: (body: Record<string, unknown>) => unknown;
  /** USD per million input / output tokens of the default model (0 for Ollama). */
  prices: [number, number];
}

const providers: Array<[string, Factory, WireView]> = [
  [
    'openai',
    (fake, o) => new OpenAISummarizer({ ...o, apiKey: o.apiKey ?? KEY, baseUrl: fake.openaiBaseUrl }),
    {
      path: '/v1/chat/completions',
      system: (b) => (b['messages'] as Array<{ role: string; content: string }>).filter((m) => m.role === 'system').map((m) => m.content),
      maxTokens: (b) => b['max_tokens'],
      prices: [0.15, 0.6], // gpt-4o-mini
    },
  ],
  [
    'anthropic',
    (fake, o) => new AnthropicSummarizer({ ...o, apiKey: o.apiKey ?? KEY, baseUrl: fake.anthropicBaseUrl }),
    { path: '/v1/messages', system: (b) => [b['system']], maxTokens: (b) => b['max_tokens'], prices: [1, 5] }, // claude-haiku-4-5
  ],
  [
    'ollama',
    (fake, o) => new OllamaSummarizer({ ...o, host: fake.ollamaHost, numCtx: 4096 }),
    {
      path: '/api/chat',
      system: (b) => (b['messages'] as Array<{ role: string; content: string }>).filter((m) => m.role === 'system').map((m) => m.content),
      maxTokens: (b) => (b['options'] as { num_predict: number }).num_predict,
      prices: [0, 0],
    },
  ],
];

let fake: FakeLlm;

beforeAll(async () => {
  fake = await startFakeLlm();
});

afterAll(async () => {
  await fake.close();
});

beforeEach(() => fake.reset());

async function failure(promise: Promise<unknown>): Promise<LlmError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(LlmError);
    return error as LlmError;
  }
  throw new Error('expected the call to fail');
}

describe.each(providers)('%s summarizer', (name, factory, wire) => {
  const harness = (): Harness => {
    const sleeps: number[] = [];
    return {
      sleeps,
      make: (extra = {}) =>
        factory(fake, {
          sleep: async (ms) => {
            sleeps.push(ms);
          },
          random: () => 0.5,
          ...extra,
        }),
    };
  };

  it('answers with the upstream usage and the cost from the catalog prices', async () => {
    const h = harness();
    fake.script([{ text: 'Build fixed; TS2322 in src/main.ts.', usage: { inputTokens: 1000, outputTokens: 200 } }]);
    const summarizer = h.make();
    const result = await summarizer.summarize(request);
    expect(result).toEqual({
      text: 'Build fixed; TS2322 in src/main.ts.',
      usage: { inputTokens: 1000, outputTokens: 200, costUsd: expect.any(Number) },
      provider: name,
      model: summarizer.model,
      attempts: 1,
    });
    expect(result.usage.costUsd).toBeCloseTo((1000 * wire.prices[0] + 200 * wire.prices[1]) / 1e6, 12);
    expect(h.sleeps).toEqual([]);
  });

  it('estimates usage from the catalog when the upstream reports none', async () => {
    const h = harness();
    fake.script([{ text: 'Build fixed.', usage: null }]);
    const summarizer = h.make();
    const result = await summarizer.summarize(request);
    const spec = resolveModel(summarizer.model).spec;
    const inputTokens = estimateTokens([request.instructions, renderTranscript(request.messages)], spec);
    const outputTokens = estimateTokens(['Build fixed.'], spec);
    expect(inputTokens).toBeGreaterThan(10);
    expect(result.usage).toEqual({ inputTokens, outputTokens, costUsd: expect.any(Number) });
    expect(result.usage.costUsd).toBeCloseTo((inputTokens * wire.prices[0] + outputTokens * wire.prices[1]) / 1e6, 12);
  });

  it('sends a valid request: the instructions as system prompt, the span as one user turn, max tokens from targetTokens', async () => {
    const h = harness();
    // A span cut in the middle of tool exchanges: an orphan result first, an unanswered call last.
    const span: SummarizeRequest = {
      ...request,
      messages: [
        { role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 'call_0', content: 'ENOENT: apps/api/.env', isError: true }] },
        { role: 'user', blocks: [{ type: 'text', text: 'Fix the failing build in apps/api' }] },
        { role: 'assistant', blocks: [{ type: 'tool_use', id: 'call_1', name: 'bash', input: { cmd: 'npm test' } }] },
      ],
    };
    await h.make().summarize(span);
    const [sent] = fake.completionRequests() as [FakeLlmRequest];
    const body = sent.body as Record<string, unknown>;
    expect(sent.path).toBe(wire.path);
    expect(sent.stream).toBe(false);
    expect(wire.system(body)).toEqual([request.instructions]);
    expect(sent.userTurns).toBe(1);
    expect((body['messages'] as unknown[]).length).toBe(name === 'anthropic' ? 1 : 2);
    expect(sent.userContent).toBe(renderTranscript(span.messages));
    expect(wire.maxTokens(body)).toBe(600); // 400 × 1.5
    // No provider tool blocks can reach the upstream: the tool exchange is plain transcript text.
    expect(JSON.stringify(body)).not.toMatch(/"(tool_calls|tool_call_id|tool_use_id)"|"type":"tool_(use|result)"|"role":"tool"/);
  });

  it('retries a 429 and honours Retry-After (attempts 2)', async () => {
    const h = harness();
    fake.script([{ status: 429, retryAfter: 2 }]);
    const result = await h.make().summarize(request);
    expect(result.attempts).toBe(2);
    expect(result.text).toBe(fakeSummaryText(renderTranscript(request.messages)));
    expect(h.sleeps).toEqual([2000]);
    expect(fake.completionRequests()).toHaveLength(2);
  });

  it('caps a long Retry-After', async () => {
    const h = harness();
    fake.script([{ status: 429, retryAfter: 3600 }]);
    await h.make({ maxRetryAfterMs: 5000 }).summarize(request);
    expect(h.sleeps).toEqual([5000]);
  });

  it('gives up after 3 server errors with LlmError(server), full-jitter backoff between', async () => {
    const h = harness();
    fake.script([{ status: 500 }, { status: 503 }, { status: 500 }, { text: 'never reached' }]);
    const error = await failure(h.make().summarize(request));
    expect(error.kind).toBe('server');
    expect(error.attempts).toBe(3);
    expect(error.status).toBe(500);
    expect(error.message).toMatch(new RegExp(`^${name}: HTTP 500 server error( \\(\\w+\\))? after 3 attempts$`));
    // random() = 0.5: 0.5 × 500 ms, then 0.5 × 1000 ms.
    expect(h.sleeps).toEqual([250, 500]);
    expect(fake.completionRequests()).toHaveLength(3);
    expect(fake.pendingSteps()).toBe(1);
  });

  it('times out a hanging upstream, retries, then fails with LlmError(timeout)', async () => {
    const h = harness();
    fake.script(repeatStep({ hang: true }, 3));
    const error = await failure(h.make({ timeoutMs: 100 }).summarize(request));
    expect(error.kind).toBe('timeout');
    expect(error.attempts).toBe(3);
    expect(error.message).toBe(`${name}: timed out after 100 ms after 3 attempts`);
    expect(fake.completionRequests()).toHaveLength(3);
  });

  it('recovers when a hang is followed by an answer', async () => {
    const h = harness();
    fake.script([{ hang: true }]);
    // Room for the second attempt to answer on a loaded machine; the first one always times out.
    const result = await h.make({ timeoutMs: 250 }).summarize(request);
    expect(result.attempts).toBe(2);
  });

  it('retries a malformed answer once, then fails with LlmError(malformed)', async () => {
    const h = harness();
    fake.script([{ malformed: 'invalid-json' }, { malformed: 'missing-fields' }, { text: 'never reached' }]);
    const error = await failure(h.make().summarize(request));
    expect(error.kind).toBe('malformed');
    expect(error.attempts).toBe(2);
    expect(fake.completionRequests()).toHaveLength(2);
  });

  it.each(['invalid-json', 'missing-fields', 'empty-text'] as const)('treats %s as malformed and succeeds on the retry', async (variant) => {
    const h = harness();
    fake.script([{ malformed: variant }]);
    const result = await h.make().summarize(request);
    expect(result.attempts).toBe(2);
  });

  it('retries a dropped connection as a network error', async () => {
    const h = harness();
    fake.script([{ drop: true }]);
    const result = await h.make().summarize(request);
    expect(result.attempts).toBe(2);
  });

  it('does not retry a 401 (LlmError auth) and never repeats the key, in the error or on the console', async () => {
    const h = harness();
    fake.script([{ status: 401, message: `Incorrect API key provided: ${KEY}` }]);
    const printed: unknown[] = [];
    const spies = (['log', 'info', 'warn', 'error', 'debug'] as const).map((method) =>
      jest.spyOn(console, method).mockImplementation((...args: unknown[]) => void printed.push(...args)),
    );
    const error = await failure(h.make().summarize(request)).finally(() => spies.forEach((spy) => spy.mockRestore()));
    expect(inspect(printed)).not.toContain(KEY);
    expect(error.kind).toBe('auth');
    expect(error.attempts).toBe(1);
    expect(error.status).toBe(401);
    expect(fake.completionRequests()).toHaveLength(1);
    expect(h.sleeps).toEqual([]);
    for (const text of [error.message, String(error), error.stack ?? '', JSON.stringify(error), inspect(error)]) expect(text).not.toContain(KEY);
  });

  it.each([
    [400, 'bad-request'],
    [403, 'auth'],
    [404, 'bad-request'],
    [422, 'bad-request'],
  ] as const)('does not retry a %i (LlmError %s)', async (status, kind) => {
    const h = harness();
    fake.script([{ status }, { text: 'never reached' }]);
    const error = await failure(h.make().summarize(request));
    expect(error.kind).toBe(kind);
    expect(error.status).toBe(status);
    expect(error.attempts).toBe(1);
    expect(h.sleeps).toEqual([]);
    expect(fake.completionRequests()).toHaveLength(1);
  });

  it('aborts an attempt in flight with LlmError(aborted), without retrying', async () => {
    const h = harness();
    fake.script([{ hang: true }]);
    const controller = new AbortController();
    const pending = h.make().summarize(request, controller.signal);
    await fake.waitForRequests(1);
    controller.abort();
    const error = await failure(pending);
    expect(error.kind).toBe('aborted');
    expect(error.attempts).toBe(1);
    expect(fake.completionRequests()).toHaveLength(1);
  });

  it('aborts during the backoff wait (real sleep, ended by the signal)', async () => {
    const controller = new AbortController();
    fake.script([{ status: 503 }]);
    const summarizer = factory(fake, {
      random: () => 0.5,
      baseDelayMs: 60_000,
      sleep: (ms, signal) => {
        queueMicrotask(() => controller.abort());
        return defaultSleep(ms, signal);
      },
    });
    const started = Date.now();
    const error = await failure(summarizer.summarize(request, controller.signal));
    expect(error.kind).toBe('aborted');
    expect(error.attempts).toBe(1);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('does not call the upstream when the signal is already aborted', async () => {
    const h = harness();
    const controller = new AbortController();
    controller.abort();
    const error = await failure(h.make().summarize(request, controller.signal));
    expect(error.kind).toBe('aborted');
    expect(error.attempts).toBe(0);
    expect(fake.requests).toHaveLength(0);
  });

  it('fails with LlmError(network) after 3 attempts when nothing listens', async () => {
    const closed = await startFakeLlm();
    await closed.close();
    const sleeps: number[] = [];
    const summarizer = factory(closed, { sleep: async (ms) => void sleeps.push(ms), random: () => 0 });
    const error = await failure(summarizer.summarize(request));
    expect(error.kind).toBe('network');
    expect(error.attempts).toBe(3);
    expect(sleeps).toEqual([0, 0]);
  });

  it('keeps the key out of results, errors and the object itself', async () => {
    const h = harness();
    const summarizer = h.make();
    const result = await summarizer.summarize(request);
    expect(JSON.stringify(result)).not.toContain(KEY);
    expect(inspect(summarizer, { depth: 10 })).not.toContain(KEY);
    expect(JSON.stringify(summarizer)).not.toContain(KEY);
    expect(JSON.stringify(fake.requests)).not.toContain(KEY);
  });

  it('rejects an empty transcript without calling the upstream', async () => {
    const h = harness();
    const error = await failure(h.make().summarize({ ...request, messages: [] }));
    expect(error.kind).toBe('bad-request');
    expect(error.attempts).toBe(0);
    expect(fake.requests).toHaveLength(0);
  });

  it('reports retries through onRetry, without secrets', async () => {
    const h = harness();
    const events: unknown[] = [];
    fake.script([{ status: 429, retryAfterMs: 1234 }]);
    await h.make({ onRetry: (e) => events.push(e) }).summarize(request);
    expect(events).toEqual([{ provider: name, model: expect.any(String), attempt: 1, kind: 'rate-limited', status: 429, delayMs: 1234 }]);
  });
});
