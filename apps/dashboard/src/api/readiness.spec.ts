import { createCompactorClient } from './client';
import { checkReadiness } from './readiness';

const API = 'http://api.test:3000';

function answering(status: number, body: unknown, contentType = 'application/json') {
  const requests: Request[] = [];
  const fetchImpl = async (request: Request) => {
    requests.push(request);
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    return new Response(text, { status, headers: { 'content-type': contentType } });
  };
  return { client: createCompactorClient(API, fetchImpl), requests };
}

function failing(error: unknown) {
  return createCompactorClient(API, async () => {
    throw error;
  });
}

describe('checkReadiness', () => {
  it('reports each dependency with its latency when the API is ready', async () => {
    const { client, requests } = answering(200, {
      status: 'ready',
      checks: { postgres: { status: 'up', latencyMs: 3 }, redis: { status: 'up', latencyMs: 1 } },
    });

    await expect(checkReadiness(client, API)).resolves.toEqual({
      state: 'ready',
      apiUrl: API,
      dependencies: [
        { name: 'postgres', label: 'PostgreSQL', up: true, latencyMs: 3, error: undefined },
        { name: 'redis', label: 'Redis', up: true, latencyMs: 1, error: undefined },
      ],
    });
    expect(requests.map((r) => `${r.method} ${r.url}`)).toEqual([`GET ${API}/health/ready`]);
  });

  it('reads the checks out of the 503 error envelope', async () => {
    const { client } = answering(503, {
      error: {
        code: 'not_ready',
        message: 'Not ready: redis is unreachable',
        details: {
          checks: {
            postgres: { status: 'up', latencyMs: 2 },
            redis: { status: 'down', error: 'connect ECONNREFUSED 127.0.0.1:6379' },
          },
        },
      },
    });

    await expect(checkReadiness(client, API)).resolves.toEqual({
      state: 'not_ready',
      apiUrl: API,
      message: 'Not ready: redis is unreachable',
      dependencies: [
        { name: 'postgres', label: 'PostgreSQL', up: true, latencyMs: 2, error: undefined },
        { name: 'redis', label: 'Redis', up: false, latencyMs: undefined, error: 'connect ECONNREFUSED 127.0.0.1:6379' },
      ],
    });
  });

  it('still says "not ready" when a 503 body is not the error envelope', async () => {
    const { client } = answering(503, 'Service Unavailable', 'text/plain');
    await expect(checkReadiness(client, API)).resolves.toEqual({
      state: 'not_ready',
      apiUrl: API,
      message: 'Not ready',
      dependencies: [],
    });
  });

  it('keeps the message when the 503 details carry no checks', async () => {
    const { client } = answering(503, { error: { code: 'not_ready', message: 'Shutting down' } });
    await expect(checkReadiness(client, API)).resolves.toMatchObject({ state: 'not_ready', message: 'Shutting down', dependencies: [] });
  });

  it('does not trust a 200 body that breaks the contract', async () => {
    const { client } = answering(200, { status: 'ready', checks: { postgres: 'fine' } });
    await expect(checkReadiness(client, API)).resolves.toEqual({
      state: 'unexpected',
      apiUrl: API,
      reason: 'the readiness answer does not match the API contract',
    });
  });

  it.each([
    ['a null body', 'null', 'the readiness answer does not match the API contract'],
    ['an HTML page', '<!doctype html><p>hello</p>', 'the answer is not JSON'],
  ])('does not crash on %s with status 200', async (_, body, reason) => {
    const { client } = answering(200, body, 'text/html');
    await expect(checkReadiness(client, API)).resolves.toEqual({ state: 'unexpected', apiUrl: API, reason });
  });

  it('reports other statuses as unexpected', async () => {
    const { client } = answering(404, { error: { code: 'not_found', message: 'Cannot GET /health/ready' } });
    await expect(checkReadiness(client, API)).resolves.toMatchObject({ state: 'unexpected', reason: expect.stringMatching(/^HTTP 404/) });
  });

  it('names the socket error when the API cannot be reached', async () => {
    const refused = new TypeError('fetch failed', {
      cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3000'), { code: 'ECONNREFUSED' }),
    });
    await expect(checkReadiness(failing(refused), API)).resolves.toEqual({
      state: 'unreachable',
      apiUrl: API,
      reason: 'connect ECONNREFUSED 127.0.0.1:3000',
    });
  });

  it('falls back to the error code when the socket error has no message', async () => {
    const refused = new TypeError('fetch failed', { cause: Object.assign(new AggregateError([], ''), { code: 'ECONNREFUSED' }) });
    await expect(checkReadiness(failing(refused), API)).resolves.toMatchObject({ state: 'unreachable', reason: 'ECONNREFUSED' });
  });

  it('gives up after the timeout', async () => {
    const client = createCompactorClient(API, (request) =>
      new Promise<Response>((_, reject) => request.signal.addEventListener('abort', () => reject(request.signal.reason))),
    );
    await expect(checkReadiness(client, API, 20)).resolves.toEqual({
      state: 'unreachable',
      apiUrl: API,
      reason: 'no answer within 20 ms',
    });
  });
});
