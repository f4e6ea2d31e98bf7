import request from 'supertest';
import { startTestApi, TestApi } from './test-app';

describe('API basics (real PostgreSQL and Redis)', () => {
  let api: TestApi;
  let key: string;
  beforeAll(async () => {
    api = await startTestApi();
    key = await api.tenantKey();
  });
  afterAll(() => api.close());
  const http = () => request(api.app.getHttpServer());

  it('answers liveness', async () => {
    await http().get('/health').expect(200, { status: 'ok' });
  });

  it('is ready when PostgreSQL and Redis answer', async () => {
    const res = await http().get('/health/ready').expect(200);
    expect(res.body).toMatchObject({ status: 'ready', checks: { postgres: { status: 'up' }, redis: { status: 'up' } } });
  });

  it('serves Swagger UI and the OpenAPI document', async () => {
    await http().get('/docs').expect(200).expect('content-type', /html/);
    const doc = await http().get('/docs-json').expect(200);
    expect(doc.body.paths['/health/ready'].get.operationId).toBe('getReadiness');
  });

  it('exposes Prometheus metrics, including the requests it served', async () => {
    await http().get('/health').expect(200);
    const res = await http().get('/metrics').expect(200).expect('content-type', /text\/plain/);
    expect(res.text).toMatch(/compactor_http_request_duration_seconds_count\{method="GET",route="\/health",status="200"\} \d+/);
    expect(res.text).toContain('compactor_process_cpu_seconds_total');
  });

  it("exposes the queues' depth from Redis, which a worker autoscaler scales on", async () => {
    // No worker runs here: a compaction an append schedules stays waiting in the queue.
    const sessionId = `metrics-queue-${Date.now()}`;
    const text = 'The test suite printed these failures again after the last change. '.repeat(550);
    const res = await http()
      .post(`/v1/sessions/${sessionId}/messages`)
      .set('authorization', `Bearer ${key}`)
      .send({ model: 'gpt-4o', contextWindow: 8_000, outputReserve: 1_000, format: 'openai', messages: [{ role: 'user', content: text }] })
      .expect(201);
    expect(res.body.compaction).toMatchObject({ scheduled: true });
    // What the compaction scheduled on the request path cost (issue #21): the job row, then the queue, as their own stages.
    expect(res.headers['server-timing']).toMatch(/, write;dur=[\d.]+, jobrow;dur=[\d.]+, enqueue;dur=[\d.]+, schedule;dur=[\d.]+$/);
    const scrape = await http().get('/metrics').expect(200);
    const waiting = Number(/compactor_queue_jobs\{queue="compaction",state="waiting"\} (\d+)/.exec(scrape.text)?.[1]);
    expect(waiting).toBeGreaterThanOrEqual(1);
    expect(scrape.text).toMatch(/compactor_queue_jobs\{queue="maintenance",state="active"\} \d+/);
  });

  it('reports unknown routes in the error format', async () => {
    const res = await http().get('/no-such-route').expect(404);
    expect(res.body).toEqual({ error: { code: 'not_found', message: 'Cannot GET /no-such-route' } });
  });

  it('rejects malformed JSON with a 400 in the error format', async () => {
    const res = await http().post('/no-such-route').set({ authorization: `Bearer ${key}`, 'content-type': 'application/json' }).send('{"a":').expect(400);
    expect(res.body.error.code).toBe('invalid_json');
  });

  it('accepts bodies up to 32 MB and answers 413 above', async () => {
    const justUnder = JSON.stringify({ blob: 'x'.repeat(31 * 1024 * 1024) });
    // Parsed, then routed: an unknown POST route proves the body was accepted.
    await http().post('/no-such-route').set({ authorization: `Bearer ${key}`, 'content-type': 'application/json' }).send(justUnder).expect(404);
    const over = JSON.stringify({ blob: 'x'.repeat(33 * 1024 * 1024) });
    const res = await http().post('/no-such-route').set({ authorization: `Bearer ${key}`, 'content-type': 'application/json' }).send(over).expect(413);
    expect(res.body).toEqual({ error: { code: 'payload_too_large', message: 'Request body is larger than the limit of 32 MB' } });
  });

  it('logs requests without bodies and with credentials redacted', async () => {
    const secrets = { authorization: 'Bearer ck_live_SECRET1', 'x-api-key': 'SECRET2', 'x-compactor-key': 'SECRET3' };
    const probe = `/log-probe-${Date.now()}`;
    // The bearer key is unknown: refused before the body is read.
    await http().post(probe).set(secrets).send({ note: 'BODYMARKER' }).expect(401);
    const entry = api.logs.find((l) => (l.req as { url?: string } | undefined)?.url === probe);
    expect(entry).toBeDefined();
    const headers = (entry!.req as { headers: Record<string, string> }).headers;
    expect(headers.authorization).toBe('[redacted]');
    expect(headers['x-api-key']).toBe('[redacted]');
    expect(headers['x-compactor-key']).toBe('[redacted]');
    const all = JSON.stringify(api.logs);
    for (const secret of ['SECRET1', 'SECRET2', 'SECRET3', 'BODYMARKER']) expect(all).not.toContain(secret);
  });
});

describe('readiness with a dependency down', () => {
  it('answers 503 naming Redis when Redis is unreachable', async () => {
    // Port 1 on loopback refuses connections.
    const api = await startTestApi({ REDIS_URL: 'redis://127.0.0.1:1' });
    try {
      const res = await request(api.app.getHttpServer()).get('/health/ready').expect(503);
      expect(res.body.error.code).toBe('not_ready');
      expect(res.body.error.message).toBe('Not ready: redis is unreachable');
      expect(res.body.error.details.checks.postgres.status).toBe('up');
      // The dependency is named; the driver's error text (hosts, ports, users) is not.
      expect(res.body.error.details.checks.redis).toEqual({ status: 'down', error: expect.stringMatching(/^(unreachable|no answer within 2000 ms)$/) });
      expect(JSON.stringify(res.body)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|:1\b/);
    } finally {
      await api.close();
    }
  });

  it('answers 503 naming PostgreSQL when PostgreSQL is unreachable', async () => {
    const api = await startTestApi({ DATABASE_URL: 'postgresql://nobody:pw@127.0.0.1:1/none' });
    try {
      const res = await request(api.app.getHttpServer()).get('/health/ready').expect(503);
      expect(res.body.error.message).toBe('Not ready: postgres is unreachable');
      expect(res.body.error.details.checks.postgres).toEqual({ status: 'down', error: 'unreachable' });
      expect(JSON.stringify(res.body)).not.toMatch(/:pw@|nobody|ECONNREFUSED|127\.0\.0\.1/);
    } finally {
      await api.close();
    }
  });
});
