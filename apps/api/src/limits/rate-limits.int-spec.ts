import Anthropic from '@anthropic-ai/sdk';
import { pollUntil } from '@compactor/testing';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { ProxyTestStack, startProxyTestStack } from '../proxy/proxy-test-stack';
import { startTestApi, startTestApiOnOwnRedis, TestApi, TestApiOnOwnRedis } from '../test-app';

/**
 * Issue #15 item 5 over real HTTP and Redis: requests per minute per key and per tenant, and appended
 * tokens per minute per tenant, each from the tenant's limits (PATCH /v1/tenant); a 429 with
 * Retry-After naming the limit (the provider's error shape on the proxy); one count for every API
 * replica; Redis down lets requests through.
 */
const uid = (label: string) => `${label}-${randomBytes(4).toString('hex')}`;
const as = (key: string) => ({ Authorization: `Bearer ${key}` });

let stack: ProxyTestStack;
let api: TestApi;

beforeAll(async () => {
  stack = await startProxyTestStack();
  api = stack.api;
}, 60_000);
afterAll(async () => {
  await api?.close();
  await stack?.fake.close();
});

const http = (on: TestApi = api) => request(on.app.getHttpServer());

/** A new tenant with keys of the given scopes (one per entry), its limits set over PATCH /v1/tenant by the first key. */
async function tenantWith(limits: Record<string, number | null>, keyScopes: Array<Array<'ingest' | 'read' | 'admin'>> = [['admin']]): Promise<string[]> {
  const name = uid('limits');
  const keys: string[] = [];
  for (const scopes of keyScopes) keys.push(await api.tenantKey(scopes, name));
  await http().patch('/v1/tenant').set(as(keys[0])).send({ limits }).expect(200);
  return keys;
}

/** Expects the REST 429 of `limit`, with Retry-After (1-60 s) equal to the body's retryAfterSeconds. */
function expectRateLimited(res: request.Response, limit: string, value: number): void {
  expect(res.status).toBe(429);
  const retryAfter = Number(res.headers['retry-after']);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(res.body).toEqual({ error: { code: 'rate_limited', message: expect.stringContaining(`${limit} allows`), details: { limit, value, retryAfterSeconds: retryAfter } } });
}

describe('requests per minute', () => {
  it('per key: N requests pass with X-RateLimit headers, the next is a 429 naming the limit; other keys and public routes are not held', async () => {
    const [admin, other] = await tenantWith({ requestsPerMinutePerKey: 3 }, [['admin'], ['read']]);
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await http().get('/v1/sessions').set(as(admin)).expect(200);
      expect(res.headers['x-ratelimit-limit']).toBe('3');
      remaining.push(res.headers['x-ratelimit-remaining']);
    }
    expect(remaining).toEqual(['2', '1', '0']);
    expectRateLimited(await http().get('/v1/sessions').set(as(admin)), 'requestsPerMinutePerKey', 3);
    // A body is refused before it is read, and nothing is stored.
    const session = uid('held');
    expectRateLimited(
      await http().post(`/v1/sessions/${session}/messages`).set(as(admin)).send({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
      'requestsPerMinutePerKey',
      3,
    );
    // The tenant's other key has its own count; public routes are not limited.
    await http().get(`/v1/sessions/${session}`).set(as(other)).expect(404);
    await http().get('/health').expect(200);
    await http().get('/metrics').expect(200);
    const metrics = await http().get('/metrics').expect(200);
    expect(metrics.text).toMatch(/compactor_rate_limited_total\{limit="requestsPerMinutePerKey"\} [2-9]/);
  });

  it("per tenant: the tenant's keys share one count; another tenant is not held", async () => {
    const [a, b] = await tenantWith({ requestsPerMinute: 4 }, [['admin'], ['read']]);
    const [stranger] = await tenantWith({ requestsPerMinute: 4 });
    for (const key of [a, b, a, b]) await http().get('/v1/sessions').set(as(key)).expect(200);
    expectRateLimited(await http().get('/v1/sessions').set(as(b)), 'requestsPerMinute', 4);
    expectRateLimited(await http().get('/v1/sessions').set(as(a)), 'requestsPerMinute', 4);
    await http().get('/v1/sessions').set(as(stranger)).expect(200);
  });

  it("a refused key's requests do not use up the tenant's room", async () => {
    const [busy, quiet] = await tenantWith({ requestsPerMinutePerKey: 2, requestsPerMinute: 5 }, [['admin'], ['read']]);
    for (let i = 0; i < 2; i++) await http().get('/v1/sessions').set(as(busy)).expect(200);
    for (let i = 0; i < 5; i++) expectRateLimited(await http().get('/v1/sessions').set(as(busy)), 'requestsPerMinutePerKey', 2);
    const res = await http().get('/v1/sessions').set(as(quiet)).expect(200);
    expect(res.headers['x-ratelimit-remaining']).toBe('1'); // key: 1 left of 2; tenant: 2 left of 5
  });

  it('a PATCHed limit applies at once on this process, within the minute already counted; null goes back to no limit', async () => {
    const [admin, second] = await tenantWith({ requestsPerMinutePerKey: 2 }, [['admin'], ['admin']]);
    for (let i = 0; i < 2; i++) await http().get('/v1/sessions').set(as(admin)).expect(200);
    expectRateLimited(await http().get('/v1/sessions').set(as(admin)), 'requestsPerMinutePerKey', 2);
    await http().patch('/v1/tenant').set(as(second)).send({ limits: { requestsPerMinutePerKey: 10 } }).expect(200);
    const raised = await http().get('/v1/sessions').set(as(admin)).expect(200);
    // The minute's count carries over: 2 passed + 1 refused + this one.
    expect([raised.headers['x-ratelimit-limit'], raised.headers['x-ratelimit-remaining']]).toEqual(['10', '6']);
    await http().patch('/v1/tenant').set(as(second)).send({ limits: { requestsPerMinutePerKey: null } }).expect(200);
    const open = await http().get('/v1/sessions').set(as(admin)).expect(200);
    expect(open.headers['x-ratelimit-limit']).toBeUndefined();
  });

  it('is shared by two API instances on one Redis', async () => {
    const second = await startTestApi({ DATABASE_URL: api.config.DATABASE_URL, QUEUE_PREFIX: api.config.QUEUE_PREFIX });
    try {
      const [key] = await tenantWith({ requestsPerMinutePerKey: 4 });
      await http(api).get('/v1/sessions').set(as(key)).expect(200);
      await http(second).get('/v1/sessions').set(as(key)).expect(200);
      await http(api).get('/v1/sessions').set(as(key)).expect(200);
      const last = await http(second).get('/v1/sessions').set(as(key)).expect(200);
      expect(last.headers['x-ratelimit-remaining']).toBe('0');
      expectRateLimited(await http(second).get('/v1/sessions').set(as(key)), 'requestsPerMinutePerKey', 4);
      expectRateLimited(await http(api).get('/v1/sessions').set(as(key)), 'requestsPerMinutePerKey', 4);
    } finally {
      await second.close();
    }
  });
});

describe('appended tokens per minute (REST)', () => {
  const words = (word: string, n: number) => `${word} `.repeat(n).trim();
  const append = (key: string, session: string, text: string) =>
    http()
      .post(`/v1/sessions/${session}/messages`)
      .set(as(key))
      .send({ model: 'gpt-4o', messages: [{ role: 'user', content: text }] });

  it('refuses an append the minute cannot hold before storing it, and gives its tokens back', async () => {
    const [key] = await tenantWith({ appendedTokensPerMinute: 1_000 }, [['admin']]);
    const first = await append(key, uid('tokens'), words('alpha', 600)).expect(201);
    const used = first.body.usage.contextTokens as number;
    expect(used).toBeGreaterThan(550);
    expect(used).toBeLessThan(700);

    const refusedId = uid('tokens');
    const refused = await append(key, refusedId, words('beta', 600));
    expectRateLimited(refused, 'appendedTokensPerMinute', 1_000);
    expect(refused.body.error.message).toContain(`${used} already appended this minute`);
    await http().get(`/v1/sessions/${refusedId}`).set(as(key)).expect(404);
    // The refused append counted nothing: a small one still fits beside the first.
    await append(key, uid('tokens'), words('gamma', 100)).expect(201);
  });

  it("lets a window's first append through although it is larger than the limit; the next waits", async () => {
    const [key] = await tenantWith({ appendedTokensPerMinute: 1_000 }, [['admin']]);
    await append(key, uid('big'), words('delta', 1_500)).expect(201);
    expectRateLimited(await append(key, uid('small'), 'hello'), 'appendedTokensPerMinute', 1_000);
  });
});

describe('the proxy', () => {
  const anthropic = (key: string, session: string) =>
    new Anthropic({
      apiKey: 'sk-provider',
      baseURL: `${stack.base}/v1/proxy/anthropic`,
      defaultHeaders: { 'X-Compactor-Key': key, 'X-Compactor-Session': session },
      maxRetries: 0,
      logLevel: 'off',
    });
  const messages = (text: string) => ({ model: 'claude-opus-4-5', max_tokens: 100, messages: [{ role: 'user' as const, content: text }] });
  const post = (key: string, path: string, body: unknown) =>
    fetch(`${stack.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-compactor-key': key, 'x-api-key': 'sk-provider' }, body: JSON.stringify(body) });

  it("answers requests over the key's limit with 429 in each provider's shape, before anything is forwarded", async () => {
    const [key] = await tenantWith({ requestsPerMinutePerKey: 2 }, [['ingest', 'admin']]);
    const session = uid('proxy-rpm');
    await anthropic(key, session).messages.create(messages('first'));
    const forwarded = stack.fake.requests.length;
    await anthropic(key, session).messages.create(messages('second')).catch((error: unknown) => {
      throw new Error(`the second request should pass: ${String(error)}`);
    });
    expect(stack.fake.requests.length).toBe(forwarded + 1);

    const refused = await anthropic(key, session)
      .messages.create(messages('third'))
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(Anthropic.RateLimitError);
    const sdkError = refused as InstanceType<typeof Anthropic.RateLimitError>;
    expect(sdkError.error).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: expect.stringMatching(/^Compactor proxy: Rate limit reached: requestsPerMinutePerKey allows 2 requests per minute for this API key; retry in \d+ s$/) } });
    expect(Number(sdkError.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);

    const openai = await post(key, '/v1/proxy/openai/v1/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    expect(openai.status).toBe(429);
    expect(Number(openai.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await openai.json()).toEqual({ error: { message: expect.stringContaining('requestsPerMinutePerKey allows 2'), type: 'requests', code: 'rate_limit_exceeded', param: null } });
    // A pass-through without a body is refused by the handler itself, in the same shape.
    const models = await fetch(`${stack.base}/v1/proxy/openai/v1/models`, { headers: { 'x-compactor-key': key } });
    expect(models.status).toBe(429);
    expect(((await models.json()) as { error: { code: string } }).error.code).toBe('rate_limit_exceeded');
    expect(stack.fake.requests.length).toBe(forwarded + 1);
  });

  it("counts the messages it records once stored, and refuses the tenant's next request over the limit", async () => {
    const [key] = await tenantWith({ appendedTokensPerMinute: 1_000 }, [['ingest', 'admin']]);
    const session = uid('proxy-tokens');
    await anthropic(key, session).messages.create(messages(`${'epsilon '.repeat(1_500)}`.trim()));
    // The request's message and the recorded answer are stored (and counted) once the answer was recorded.
    await pollUntil(async () => ((await http().get(`/v1/sessions/${session}`).set(as(key)).expect(200)).body.messageCount === 2 ? true : undefined), { what: 'the answer recorded' });
    const forwarded = stack.fake.requests.length;
    const refused = await post(key, '/v1/proxy/openai/v1/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'one more' }] });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({ error: { message: expect.stringContaining('appendedTokensPerMinute allows 1,000 appended tokens per minute'), type: 'tokens', code: 'rate_limit_exceeded', param: null } });
    expect(stack.fake.requests.length).toBe(forwarded);
  });
});

describe('Redis down', () => {
  let own: TestApiOnOwnRedis;

  beforeAll(async () => {
    own = await startTestApiOnOwnRedis();
  }, 60_000);
  afterAll(() => own?.close(), 30_000);

  it('lets requests through unchecked (logged once), and counts again once Redis is back', async () => {
    const name = uid('redis-down');
    const key = await own.tenantKey(['admin'], name);
    await http(own).patch('/v1/tenant').set(as(key)).send({ limits: { requestsPerMinutePerKey: 2 } }).expect(200);
    await http(own).get('/v1/sessions').set(as(key)).expect(200);
    await http(own).get('/v1/sessions').set(as(key)).expect(200);
    expectRateLimited(await http(own).get('/v1/sessions').set(as(key)), 'requestsPerMinutePerKey', 2);

    await own.redis.stop();
    for (let i = 0; i < 5; i++) {
      const started = Date.now();
      const res = await http(own).get('/v1/sessions').set(as(key)).expect(200);
      expect(Date.now() - started).toBeLessThan(1_000);
      expect(res.headers['x-ratelimit-limit']).toBeUndefined();
    }
    const outages = () => own.logs.filter((l) => String(l.msg).startsWith('rate limits are not enforced'));
    expect(outages()).toHaveLength(1);

    // Back, empty (a restart that lost its counts): the key is counted from zero.
    await own.redis.start();
    const counted = await pollUntil(
      async () => {
        const res = await http(own).get('/v1/sessions').set(as(key)).expect(200);
        return res.headers['x-ratelimit-remaining'] as string | undefined;
      },
      { what: 'a request counted in Redis again' },
    );
    expect(counted).toBe('1');
    expect(own.logs.filter((l) => String(l.msg).startsWith('rate limits are enforced again'))).toHaveLength(1);
    await http(own).get('/v1/sessions').set(as(key)).expect(200);
    expectRateLimited(await http(own).get('/v1/sessions').set(as(key)), 'requestsPerMinutePerKey', 2);
    expect(outages()).toHaveLength(1);
  });
});
