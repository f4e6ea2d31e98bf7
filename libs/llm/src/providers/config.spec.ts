import type { SummarizeRequest } from '@compactor/compaction';
import { type FakeLlm, startFakeLlm } from '@compactor/testing';
import { LocalSummarizer } from '../local';
import { AnthropicSummarizer } from './anthropic';
import { createSummarizer, describeSummarizerConfig, parseSummarizerConfig } from './config';
import { SummarizerConfigError } from './errors';
import { OllamaSummarizer } from './ollama';
import { OpenAISummarizer } from './openai';

const OPENAI_KEY = 'sk-config-openai-SECRET-0123456789';
const ANTHROPIC_KEY = 'sk-ant-config-SECRET-0123456789';

const request: SummarizeRequest = {
  kind: 'merge',
  instructions: 'Merge these summaries.',
  messages: [{ role: 'user', blocks: [{ type: 'text', text: 'Summary A. Summary B.' }] }],
  targetTokens: 200,
};

const noWait = { sleep: async () => undefined, random: () => 0 };

function configError(fn: () => unknown): SummarizerConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(SummarizerConfigError);
    return error as SummarizerConfigError;
  }
  throw new Error('expected a SummarizerConfigError');
}

let fake: FakeLlm;

beforeAll(async () => {
  fake = await startFakeLlm();
});

afterAll(async () => {
  await fake.close();
});

beforeEach(() => fake.reset());

describe('createSummarizer', () => {
  it('defaults to the local summarizer (no key, no network)', () => {
    const summarizer = createSummarizer({});
    expect(summarizer).toBeInstanceOf(LocalSummarizer);
    expect(summarizer.provider).toBe('local');
    expect(summarizer.deterministic).toBe(true);
    expect(createSummarizer({ COMPACTOR_SUMMARIZER: '' }).provider).toBe('local');
  });

  it('builds the OpenAI summarizer from env-like input (default model and endpoint)', () => {
    const summarizer = createSummarizer({ COMPACTOR_SUMMARIZER: 'openai', OPENAI_API_KEY: OPENAI_KEY });
    expect(summarizer).toBeInstanceOf(OpenAISummarizer);
    expect(summarizer).toMatchObject({ provider: 'openai', model: 'gpt-4o-mini', contextWindow: 128_000, baseUrl: 'https://api.openai.com/v1' });
  });

  it('accepts provider names in any case and treats blank variables as unset', () => {
    const summarizer = createSummarizer({ COMPACTOR_SUMMARIZER: ' Anthropic ', ANTHROPIC_API_KEY: ANTHROPIC_KEY, COMPACTOR_SUMMARIZER_MODEL: '', COMPACTOR_SUMMARIZER_BASE_URL: '' });
    expect(summarizer).toBeInstanceOf(AnthropicSummarizer);
    expect(summarizer).toMatchObject({ model: 'claude-haiku-4-5', baseUrl: 'https://api.anthropic.com', contextWindow: 200_000 });
  });

  it('builds the Ollama summarizer with OLLAMA_HOST and num_ctx from COMPACTOR_SUMMARIZER_NUM_CTX', () => {
    const summarizer = createSummarizer({
      COMPACTOR_SUMMARIZER: 'ollama',
      OLLAMA_HOST: 'http://gpu-box:11434/',
      COMPACTOR_SUMMARIZER_MODEL: 'qwen2.5:14b',
      COMPACTOR_SUMMARIZER_NUM_CTX: '16384',
    });
    expect(summarizer).toBeInstanceOf(OllamaSummarizer);
    expect(summarizer).toMatchObject({ model: 'qwen2.5:14b', host: 'http://gpu-box:11434', numCtx: 16_384, contextWindow: 16_384 });
  });

  it('talks to an OpenAI-compatible server through COMPACTOR_SUMMARIZER_BASE_URL, without a key', async () => {
    const summarizer = createSummarizer(
      { COMPACTOR_SUMMARIZER: 'openai', COMPACTOR_SUMMARIZER_BASE_URL: `${fake.url}/v1`, COMPACTOR_SUMMARIZER_MODEL: 'llama3.1:8b' },
      noWait,
    );
    const result = await summarizer.summarize(request);
    expect(result).toMatchObject({ provider: 'openai', model: 'llama3.1:8b', attempts: 1, usage: { costUsd: 0 } });
    expect(fake.completionRequests()[0]).toMatchObject({ path: '/v1/chat/completions', auth: undefined, model: 'llama3.1:8b' });
  });

  it('routes the Anthropic summarizer to COMPACTOR_SUMMARIZER_BASE_URL', async () => {
    const summarizer = createSummarizer({ COMPACTOR_SUMMARIZER: 'anthropic', ANTHROPIC_API_KEY: ANTHROPIC_KEY, COMPACTOR_SUMMARIZER_BASE_URL: fake.url }, noWait);
    expect((await summarizer.summarize(request)).provider).toBe('anthropic');
    expect(fake.completionRequests().map((r) => r.path)).toEqual(['/v1/messages']);
  });

  it('applies COMPACTOR_SUMMARIZER_TIMEOUT_MS per attempt, and passes the test hooks (sleep, retry timing) through', async () => {
    const sleeps: number[] = [];
    const summarizer = createSummarizer(
      { COMPACTOR_SUMMARIZER: 'ollama', OLLAMA_HOST: fake.url, COMPACTOR_SUMMARIZER_TIMEOUT_MS: '80' },
      { sleep: async (ms) => void sleeps.push(ms), random: () => 1, baseDelayMs: 10 },
    );
    fake.script([{ hang: true }, { hang: true }, { hang: true }]);
    await expect(summarizer.summarize(request)).rejects.toMatchObject({ kind: 'timeout', attempts: 3, message: 'ollama: timed out after 80 ms after 3 attempts' });
    expect(sleeps).toEqual([10, 20]);
  });

  it.each([
    [{ COMPACTOR_SUMMARIZER: 'openai' }, 'OPENAI_API_KEY'],
    [{ COMPACTOR_SUMMARIZER: 'openai', OPENAI_API_KEY: '   ' }, 'OPENAI_API_KEY'],
    [{ COMPACTOR_SUMMARIZER: 'anthropic', OPENAI_API_KEY: OPENAI_KEY }, 'ANTHROPIC_API_KEY'],
    [{ COMPACTOR_SUMMARIZER: 'gpt4' }, 'COMPACTOR_SUMMARIZER'],
    [{ COMPACTOR_SUMMARIZER: 'ollama', COMPACTOR_SUMMARIZER_NUM_CTX: 'lots' }, 'COMPACTOR_SUMMARIZER_NUM_CTX'],
    [{ COMPACTOR_SUMMARIZER: 'ollama', COMPACTOR_SUMMARIZER_NUM_CTX: '-1' }, 'COMPACTOR_SUMMARIZER_NUM_CTX'],
    [{ COMPACTOR_SUMMARIZER: 'openai', OPENAI_API_KEY: OPENAI_KEY, COMPACTOR_SUMMARIZER_TIMEOUT_MS: '1.5' }, 'COMPACTOR_SUMMARIZER_TIMEOUT_MS'],
    [{ COMPACTOR_SUMMARIZER: 'openai', OPENAI_API_KEY: OPENAI_KEY, COMPACTOR_SUMMARIZER_BASE_URL: `ftp://host/${OPENAI_KEY}` }, 'COMPACTOR_SUMMARIZER_BASE_URL'],
  ])('rejects %j naming %s, without echoing values', (input, variable) => {
    const error = configError(() => createSummarizer(input));
    expect(error.variable).toBe(variable);
    expect(error.message).toContain(variable);
    for (const value of Object.values(input).filter((v) => v.trim().length > 2)) {
      if (value !== 'openai' && value !== 'anthropic' && value !== 'ollama') expect(error.message).not.toContain(value);
    }
    expect(error.message).not.toContain(OPENAI_KEY);
  });
});

describe('describeSummarizerConfig', () => {
  it('describes the configuration without secrets', () => {
    const config = parseSummarizerConfig({
      COMPACTOR_SUMMARIZER: 'openai',
      OPENAI_API_KEY: OPENAI_KEY,
      ANTHROPIC_API_KEY: ANTHROPIC_KEY,
      COMPACTOR_SUMMARIZER_BASE_URL: `https://user:${OPENAI_KEY}@gateway.example.com/v1?key=${OPENAI_KEY}`,
      COMPACTOR_SUMMARIZER_MODEL: 'gpt-4.1-mini',
    });
    const description = describeSummarizerConfig(config);
    expect(description).toEqual({ provider: 'openai', model: 'gpt-4.1-mini', endpoint: 'https://gateway.example.com/v1', keyConfigured: true, timeoutMs: 60_000 });
    const text = JSON.stringify(description);
    expect(text).not.toContain(OPENAI_KEY);
    expect(text).not.toContain(ANTHROPIC_KEY);
  });

  it('describes anthropic, ollama and local', () => {
    expect(describeSummarizerConfig(parseSummarizerConfig({ COMPACTOR_SUMMARIZER: 'anthropic', ANTHROPIC_API_KEY: ANTHROPIC_KEY }))).toEqual({
      provider: 'anthropic',
      model: 'claude-haiku-4-5',
      endpoint: 'https://api.anthropic.com',
      keyConfigured: true,
      timeoutMs: 60_000,
    });
    expect(describeSummarizerConfig(parseSummarizerConfig({ COMPACTOR_SUMMARIZER: 'ollama', COMPACTOR_SUMMARIZER_NUM_CTX: '4096' }))).toEqual({
      provider: 'ollama',
      model: 'llama3.1:8b',
      endpoint: 'http://127.0.0.1:11434',
      keyConfigured: false,
      timeoutMs: 60_000,
      numCtx: 4096,
    });
    expect(describeSummarizerConfig(parseSummarizerConfig({}))).toEqual({ provider: 'local', model: 'extractive-v1', keyConfigured: false, timeoutMs: 60_000 });
  });
});
