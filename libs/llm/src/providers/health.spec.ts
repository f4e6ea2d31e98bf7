import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type FakeLlm, fakeLlmKeyFingerprint, startFakeLlm } from '@compactor/testing';
import { parseSummarizerConfig } from './config';
import { probeSummarizer } from './health';

let fake: FakeLlm;

beforeAll(async () => {
  fake = await startFakeLlm();
});

afterAll(async () => {
  await fake.close();
});

beforeEach(() => fake.reset());

/** A loopback server that answers every request with this status (a provider's 503, a proxy's 429). */
async function statusServer(status: number): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end('{"error":"x"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('probeSummarizer (issue #15: lifting compactions held by an LLM outage)', () => {
  it('openai: GET <base>/models with the key → up', async () => {
    const config = parseSummarizerConfig({ COMPACTOR_SUMMARIZER: 'openai', OPENAI_API_KEY: 'sk-probe-1', COMPACTOR_SUMMARIZER_BASE_URL: fake.openaiBaseUrl });
    expect(await probeSummarizer(config)).toBe('up');
    expect(fake.requests.map((r) => [r.method, r.path, r.outcome])).toEqual([['GET', '/v1/models', 'list']]);
    expect(fake.requests[0].auth?.fingerprint).toBe(fakeLlmKeyFingerprint('sk-probe-1'));
    expect(fake.completionRequests()).toHaveLength(0);
  });

  it('anthropic: GET <base>/v1/models with x-api-key and anthropic-version → up', async () => {
    const config = parseSummarizerConfig({ COMPACTOR_SUMMARIZER: 'anthropic', ANTHROPIC_API_KEY: 'sk-ant-probe', COMPACTOR_SUMMARIZER_BASE_URL: fake.anthropicBaseUrl });
    expect(await probeSummarizer(config)).toBe('up');
    expect(fake.requests.map((r) => [r.method, r.path])).toEqual([['GET', '/v1/models']]);
    expect(fake.requests[0].auth).toMatchObject({ header: 'x-api-key', fingerprint: fakeLlmKeyFingerprint('sk-ant-probe') });
    expect(fake.requests[0].headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('ollama: GET <host>/api/tags → up', async () => {
    const config = parseSummarizerConfig({ COMPACTOR_SUMMARIZER: 'ollama', OLLAMA_HOST: fake.ollamaHost });
    expect(await probeSummarizer(config)).toBe('up');
    expect(fake.requests.map((r) => [r.method, r.path])).toEqual([['GET', '/api/tags']]);
  });

  it('down while the upstream refuses connections, up again once it listens (same port)', async () => {
    const config = parseSummarizerConfig({ COMPACTOR_SUMMARIZER: 'ollama', OLLAMA_HOST: fake.ollamaHost });
    await fake.stop();
    try {
      expect(await probeSummarizer(config)).toBe('down');
    } finally {
      await fake.start();
    }
    expect(await probeSummarizer(config)).toBe('up');
  });

  it('down on a 5xx or 429; unknown on another answer (a server without /models, a refused key)', async () => {
    for (const [status, health] of [
      [503, 'down'],
      [500, 'down'],
      [429, 'down'],
      [401, 'unknown'],
      [404, 'unknown'],
    ] as const) {
      const server = await statusServer(status);
      try {
        const config = parseSummarizerConfig({ COMPACTOR_SUMMARIZER: 'openai', OPENAI_API_KEY: 'k', COMPACTOR_SUMMARIZER_BASE_URL: `${server.url}/v1` });
        expect([status, await probeSummarizer(config)]).toEqual([status, health]);
      } finally {
        await server.close();
      }
    }
  });

  it('down when the endpoint does not answer within the timeout', async () => {
    const sockets = new Set<import('node:net').Socket>();
    const server = createServer(() => undefined);
    server.on('connection', (s) => sockets.add(s));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const config = parseSummarizerConfig({ COMPACTOR_SUMMARIZER: 'ollama', OLLAMA_HOST: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
      expect(await probeSummarizer(config, { timeoutMs: 200 })).toBe('down');
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('local needs no probe: up, no request', async () => {
    expect(await probeSummarizer(parseSummarizerConfig({}))).toBe('up');
    expect(fake.requests).toHaveLength(0);
  });
});
