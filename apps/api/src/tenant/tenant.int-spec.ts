import { FakeLlm, pollUntil, startFakeLlm } from '@compactor/testing';
import request from 'supertest';
import { ProxyTestStack, startProxyTestStack } from '../proxy/proxy-test-stack';
import { startTestApi, TestApi } from '../test-app';

const uid = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}`;

interface AuditEntry {
  keyId: string | null;
  action: string;
  targetType: string;
  targetId: string;
  data: { changes: Record<string, { from: unknown; to: unknown }> };
}

/** Issue #20 item 2: the tenant's settings over the API, validated and audited; sessions take its default policy. */
describe('tenant settings (GET/PATCH /v1/tenant)', () => {
  describe('with internal upstreams not allowed (the default)', () => {
    let api: TestApi;
    beforeAll(async () => {
      api = await startTestApi({ COMPACTOR_PROXY_ALLOW_PRIVATE_UPSTREAMS: 'false' });
    });
    afterAll(async () => api?.close());

    const http = () => request(api.app.getHttpServer());
    const auth = (key: string) => ({ Authorization: `Bearer ${key}` });
    const audit = async (key: string) => (await http().get('/v1/audit').set(auth(key)).expect(200)).body.entries as AuditEntry[];
    const fieldsOf = (res: request.Response) => (res.body.error.details.fields as { field: string }[]).map((f) => f.field);

    it('needs a key (401) and the admin scope (403)', async () => {
      await http().get('/v1/tenant').expect(401);
      await http().patch('/v1/tenant').send({ proxy: { timeoutMs: 5_000 } }).expect(401);
      const name = uid('tenant');
      for (const scopes of [['read'], ['ingest']] as const) {
        const key = await api.tenantKey([...scopes], name);
        await http().get('/v1/tenant').set(auth(key)).expect(403);
        await http().patch('/v1/tenant').set(auth(key)).send({ proxy: { timeoutMs: 5_000 } }).expect(403);
      }
    });

    it('shows the settings: none of its own yet, the environment defaults beside them', async () => {
      const name = uid('tenant');
      const admin = await api.tenantKey(['admin'], name);
      const res = (await http().get('/v1/tenant').set(auth(admin)).expect(200)).body;
      expect(res).toEqual({
        id: expect.any(String),
        name,
        proxy: { anthropicBaseUrl: null, openaiBaseUrl: null, timeoutMs: null },
        proxyDefaults: {
          anthropicBaseUrl: api.config.COMPACTOR_PROXY_ANTHROPIC_BASE_URL,
          openaiBaseUrl: api.config.COMPACTOR_PROXY_OPENAI_BASE_URL,
          timeoutMs: api.config.COMPACTOR_PROXY_TIMEOUT_MS,
        },
        allowPrivateUpstreams: false,
        defaultPolicy: null,
        limits: {
          requestsPerMinutePerKey: null,
          requestsPerMinute: null,
          appendedTokensPerMinute: null,
          summarizerTokensPerDay: null,
          summarizerCostPerDayUsd: null,
          sessionRetentionDays: null,
        },
        limitDefaults: {
          requestsPerMinutePerKey: api.config.COMPACTOR_LIMIT_REQUESTS_PER_MINUTE_PER_KEY,
          requestsPerMinute: api.config.COMPACTOR_LIMIT_REQUESTS_PER_MINUTE,
          appendedTokensPerMinute: api.config.COMPACTOR_LIMIT_APPENDED_TOKENS_PER_MINUTE,
          summarizerTokensPerDay: api.config.COMPACTOR_LIMIT_SUMMARIZER_TOKENS_PER_DAY,
          summarizerCostPerDayUsd: api.config.COMPACTOR_LIMIT_SUMMARIZER_COST_PER_DAY_USD,
          sessionRetentionDays: api.config.COMPACTOR_LIMIT_SESSION_RETENTION_DAYS,
        },
        spendToday: { since: `${new Date().toISOString().slice(0, 10)}T00:00:00.000Z`, summarizerTokens: 0, summarizerCostUsd: 0 },
      });
    });

    it('refuses each bad field with a 400 naming it, internal upstreams included, and changes nothing', async () => {
      const admin = await api.tenantKey(['admin']);
      const before = (await http().get('/v1/tenant').set(auth(admin)).expect(200)).body;
      const cases: [unknown, string][] = [
        [{ proxy: { anthropicBaseUrl: 'ftp://files.example.com' } }, 'proxy.anthropicBaseUrl'],
        [{ proxy: { anthropicBaseUrl: 'not a url' } }, 'proxy.anthropicBaseUrl'],
        [{ proxy: { openaiBaseUrl: 'https://user:s3cret-pass@api.example.com' } }, 'proxy.openaiBaseUrl'],
        [{ proxy: { openaiBaseUrl: 'https://api.example.com/?x=1' } }, 'proxy.openaiBaseUrl'],
        [{ proxy: { openaiBaseUrl: 42 } }, 'proxy.openaiBaseUrl'],
        [{ proxy: { timeoutMs: 5 } }, 'proxy.timeoutMs'],
        [{ proxy: { timeoutMs: 1.5 } }, 'proxy.timeoutMs'],
        [{ proxy: { timeoutMs: '5000' } }, 'proxy.timeoutMs'],
        [{ proxy: { timeoutMs: 3_600_001 } }, 'proxy.timeoutMs'],
        [{ defaultPolicy: 'no-such-preset' }, 'defaultPolicy'],
        [{ defaultPolicy: { preset: 'balanced', overrides: { notAParameter: 1 } } }, 'defaultPolicy.overrides.notAParameter'],
        [{ proxy: { anthropicBaseUrl: 'http://169.254.169.254' } }, 'proxy.anthropicBaseUrl'],
        [{ proxy: { openaiBaseUrl: 'http://localhost:8080' } }, 'proxy.openaiBaseUrl'],
        [{ proxy: { openaiBaseUrl: 'http://10.1.2.3' } }, 'proxy.openaiBaseUrl'],
        [{ limits: { requestsPerMinutePerKey: -1 } }, 'limits.requestsPerMinutePerKey'],
        [{ limits: { requestsPerMinute: 2.5 } }, 'limits.requestsPerMinute'],
        [{ limits: { appendedTokensPerMinute: 10 } }, 'limits.appendedTokensPerMinute'],
        [{ limits: { summarizerTokensPerDay: '1000000' } }, 'limits.summarizerTokensPerDay'],
        [{ limits: { summarizerCostPerDayUsd: 0.001 } }, 'limits.summarizerCostPerDayUsd'],
        [{ limits: { sessionRetentionDays: 40_000 } }, 'limits.sessionRetentionDays'],
        [{}, '(body)'],
      ];
      for (const [body, field] of cases) {
        const res = await http().patch('/v1/tenant').set(auth(admin)).send(body as object);
        expect([JSON.stringify(body), res.status]).toEqual([JSON.stringify(body), 400]);
        expect([JSON.stringify(body), fieldsOf(res)]).toEqual([JSON.stringify(body), expect.arrayContaining([field])]);
        expect(JSON.stringify(res.body)).not.toContain('s3cret-pass');
      }
      const internal = await http().patch('/v1/tenant').set(auth(admin)).send({ proxy: { anthropicBaseUrl: 'http://127.0.0.1:9', openaiBaseUrl: 'http://[::1]:9' } }).expect(400);
      expect(fieldsOf(internal)).toEqual(['proxy.anthropicBaseUrl', 'proxy.openaiBaseUrl']);
      expect(internal.body.error.message).toContain('COMPACTOR_PROXY_ALLOW_PRIVATE_UPSTREAMS');
      const unknown = await http().patch('/v1/tenant').set(auth(admin)).send({ quotas: { rpm: 1 } }).expect(400);
      expect(unknown.body.error.message).toContain('"quotas"');
      const unknownLimit = await http().patch('/v1/tenant').set(auth(admin)).send({ limits: { rpm: 1 } }).expect(400);
      expect(unknownLimit.body.error.message).toContain('"rpm"');
      expect((await http().get('/v1/tenant').set(auth(admin)).expect(200)).body).toEqual(before);
      expect(await audit(admin)).toEqual([]);
    });

    it('changes only the fields given, null clears one, every change is one audit entry and a no-op writes none', async () => {
      const admin = await api.tenantKey(['admin']);
      const keys = (await http().get('/v1/keys').set(auth(admin)).expect(200)).body.keys as { id: string; prefix: string }[];
      const adminId = keys.find((k) => admin.startsWith(k.prefix))!.id;
      // Public addresses (IP literals: no DNS needed).
      const first = (
        await http()
          .patch('/v1/tenant')
          .set(auth(admin))
          .send({ proxy: { anthropicBaseUrl: 'https://203.0.113.10', timeoutMs: 30_000 }, defaultPolicy: 'factor3' })
          .expect(200)
      ).body;
      expect(first.proxy).toEqual({ anthropicBaseUrl: 'https://203.0.113.10', openaiBaseUrl: null, timeoutMs: 30_000 });
      expect(first.defaultPolicy).toEqual({ preset: 'factor3', overrides: {} });

      const second = (
        await http()
          .patch('/v1/tenant')
          .set(auth(admin))
          .send({ proxy: { openaiBaseUrl: 'https://198.51.100.7', timeoutMs: null }, defaultPolicy: { preset: 'balanced', overrides: { summarizeAbove: 0.5 } } })
          .expect(200)
      ).body;
      expect(second.proxy).toEqual({ anthropicBaseUrl: 'https://203.0.113.10', openaiBaseUrl: 'https://198.51.100.7', timeoutMs: null });
      expect(second.defaultPolicy).toEqual({ preset: 'balanced', overrides: { summarizeAbove: 0.5 } });
      expect((await http().get('/v1/tenant').set(auth(admin)).expect(200)).body).toEqual(second);

      await http().patch('/v1/tenant').set(auth(admin)).send({ proxy: { openaiBaseUrl: 'https://198.51.100.7' } }).expect(200);
      const entries = await audit(admin);
      expect(entries).toEqual([
        {
          id: expect.any(String),
          createdAt: expect.any(String),
          keyId: adminId,
          action: 'tenant.updated',
          targetType: 'tenant',
          targetId: second.id,
          data: {
            changes: {
              'proxy.openaiBaseUrl': { from: null, to: 'https://198.51.100.7' },
              'proxy.timeoutMs': { from: 30_000, to: null },
              defaultPolicy: { from: { preset: 'factor3', overrides: {} }, to: { preset: 'balanced', overrides: { summarizeAbove: 0.5 } } },
            },
          },
        },
        {
          id: expect.any(String),
          createdAt: expect.any(String),
          keyId: adminId,
          action: 'tenant.updated',
          targetType: 'tenant',
          targetId: second.id,
          data: {
            changes: {
              'proxy.anthropicBaseUrl': { from: null, to: 'https://203.0.113.10' },
              'proxy.timeoutMs': { from: null, to: 30_000 },
              defaultPolicy: { from: null, to: { preset: 'factor3', overrides: {} } },
            },
          },
        },
      ]);
    });

    it('sets, zeroes (no limit) and clears limits, each change audited', async () => {
      const admin = await api.tenantKey(['admin']);
      const set = (
        await http().patch('/v1/tenant').set(auth(admin)).send({ limits: { requestsPerMinutePerKey: 600, summarizerCostPerDayUsd: 2.5, sessionRetentionDays: 0 } }).expect(200)
      ).body;
      expect(set.limits).toEqual({
        requestsPerMinutePerKey: 600,
        requestsPerMinute: null,
        appendedTokensPerMinute: null,
        summarizerTokensPerDay: null,
        summarizerCostPerDayUsd: 2.5,
        sessionRetentionDays: 0,
      });
      const cleared = (await http().patch('/v1/tenant').set(auth(admin)).send({ limits: { requestsPerMinutePerKey: null } }).expect(200)).body;
      expect(cleared.limits.requestsPerMinutePerKey).toBeNull();
      expect(cleared.limits.summarizerCostPerDayUsd).toBe(2.5);
      const entries = await audit(admin);
      expect(entries.map((e) => e.data.changes)).toEqual([
        { 'limits.requestsPerMinutePerKey': { from: 600, to: null } },
        {
          'limits.requestsPerMinutePerKey': { from: null, to: 600 },
          'limits.summarizerCostPerDayUsd': { from: null, to: 2.5 },
          'limits.sessionRetentionDays': { from: null, to: 0 },
        },
      ]);
    });

    it('gives sessions created without a policy the default (append and POST /v1/sessions); an explicit policy wins', async () => {
      const admin = await api.tenantKey(['admin', 'ingest', 'read']);
      const policyOf = async (id: string) => (await http().get(`/v1/sessions/${id}`).set(auth(admin)).expect(200)).body.policy;
      const append = (id: string, extra: object = {}) =>
        http().post(`/v1/sessions/${id}/messages`).set(auth(admin)).send({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }], ...extra }).expect(201);

      const before = uid('before');
      await append(before);
      expect(await policyOf(before)).toEqual({ preset: 'balanced', overrides: {} });

      await http().patch('/v1/tenant').set(auth(admin)).send({ defaultPolicy: { preset: 'checkpoint-aging', overrides: {} } }).expect(200);
      const appended = uid('appended');
      await append(appended);
      expect(await policyOf(appended)).toEqual({ preset: 'checkpoint-aging', overrides: {} });
      const created = uid('created');
      await http().post('/v1/sessions').set(auth(admin)).send({ id: created, model: 'gpt-4o' }).expect(201);
      expect(await policyOf(created)).toEqual({ preset: 'checkpoint-aging', overrides: {} });
      const explicit = uid('explicit');
      await append(explicit, { policy: 'factor3' });
      expect(await policyOf(explicit)).toEqual({ preset: 'factor3', overrides: {} });
      // Sessions that exist keep theirs.
      expect(await policyOf(before)).toEqual({ preset: 'balanced', overrides: {} });

      await http().patch('/v1/tenant').set(auth(admin)).send({ defaultPolicy: null }).expect(200);
      const cleared = uid('cleared');
      await append(cleared);
      expect(await policyOf(cleared)).toEqual({ preset: 'balanced', overrides: {} });
    });
  });

  describe('through the proxy', () => {
    let stack: ProxyTestStack;
    let other: FakeLlm;
    beforeAll(async () => {
      stack = await startProxyTestStack();
      other = await startFakeLlm();
    });
    afterAll(async () => {
      await stack?.api.close();
      await stack?.fake.close();
      await other?.close();
    });

    const anthropic = (key: string, session: string) =>
      fetch(`${stack.base}/v1/proxy/anthropic/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-compactor-key': key, 'x-compactor-session': session, 'x-api-key': 'sk-ant-test' },
        body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 256, messages: [{ role: 'user', content: 'What is in the repository?' }] }),
      });

    it("a session the proxy creates takes the tenant's default policy; a new upstream applies at the next request", async () => {
      const name = uid('tenant');
      const admin = await stack.api.tenantKey(['admin'], name);
      const ingest = await stack.api.tenantKey(['ingest', 'read'], name);
      const http = () => request(stack.api.app.getHttpServer());
      await http().patch('/v1/tenant').set({ Authorization: `Bearer ${admin}` }).send({ defaultPolicy: 'two-layer' }).expect(200);

      const id = uid('proxied');
      const res = await anthropic(ingest, id);
      expect(res.status).toBe(200);
      await res.text();
      // The proxy records the exchange after it has answered: wait for the session it creates.
      const session = await pollUntil(
        async () => {
          const r = await http().get(`/v1/sessions/${id}`).set({ Authorization: `Bearer ${ingest}` });
          return r.status === 200 ? r.body : undefined;
        },
        { what: `the proxied session ${id} to be recorded`, timeoutMs: 10_000 },
      );
      expect(session.policy).toEqual({ preset: 'two-layer', overrides: {} });

      // The proxy's settings cache is dropped on PATCH: the very next request goes to the new upstream.
      const before = other.completionRequests().length;
      await http().patch('/v1/tenant').set({ Authorization: `Bearer ${admin}` }).send({ proxy: { anthropicBaseUrl: other.url } }).expect(200);
      const next = await anthropic(ingest, uid('moved'));
      expect(next.status).toBe(200);
      await next.text();
      expect(other.completionRequests().length).toBe(before + 1);
    });
  });
});
