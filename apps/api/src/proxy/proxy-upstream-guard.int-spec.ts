import { PrismaService } from '@compactor/persistence';
import http from 'node:http';
import { ProxyTestStack, startProxyTestStack } from './proxy-test-stack';

/** Raw HTTP, so that paths reach the API exactly as written (clients normalize `..`). */
function rawGet(base: string, path: string, headers: Record<string, string>): Promise<{ status: number; body: unknown }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, path, method: 'GET', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, body: text.startsWith('{') ? JSON.parse(text) : text });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

const uid = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}`;

async function tenantWithUpstream(stack: ProxyTestStack, proxy: Record<string, string>): Promise<string> {
  const name = uid('tenant');
  const key = await stack.api.tenantKey(['ingest'], name);
  await stack.api.app.get(PrismaService).tenant.update({ where: { name }, data: { settings: { proxy } } });
  return key;
}

/** Issue #15 F8/F9: a tenant's upstream cannot point into the operator's network, and a pass-through path cannot leave the base path. */
describe('proxy upstream guard', () => {
  describe('with internal upstreams not allowed (the default)', () => {
    let stack: ProxyTestStack;
    beforeAll(async () => {
      stack = await startProxyTestStack({ env: { COMPACTOR_PROXY_ALLOW_PRIVATE_UPSTREAMS: 'false' } });
    });
    afterAll(async () => {
      await stack.api.close();
      await stack.fake.close();
    });

    it("refuses a tenant's upstream on the metadata address or loopback, before connecting, in the provider's shape", async () => {
      const metadata = await tenantWithUpstream(stack, { anthropicBaseUrl: 'http://169.254.169.254' });
      const res = await rawGet(stack.base, '/v1/proxy/anthropic/v1/models', { 'x-compactor-key': metadata });
      expect(res).toEqual({
        status: 502,
        body: {
          type: 'error',
          error: {
            type: 'api_error',
            message: "Compactor proxy: the tenant's Anthropic upstream resolves to an internal address (169.254.169.254); set COMPACTOR_PROXY_ALLOW_PRIVATE_UPSTREAMS=true to allow it",
          },
        },
      });

      const before = stack.fake.requests.length;
      const loopback = await tenantWithUpstream(stack, { openaiBaseUrl: `http://localhost:${stack.fake.port}` });
      const refused = await rawGet(stack.base, '/v1/proxy/openai/v1/models', { 'x-compactor-key': loopback });
      expect(refused.status).toBe(502);
      expect((refused.body as { error: { code: string } }).error.code).toBe('upstream_not_allowed');
      expect(stack.fake.requests.length).toBe(before);
    });

    it("keeps the operator's own upstreams (the environment's, here on loopback) working", async () => {
      const res = await rawGet(stack.base, '/v1/proxy/openai/v1/models', { 'x-compactor-key': stack.key });
      expect(res.status).toBe(200);
    });
  });

  describe('pass-through paths', () => {
    let stack: ProxyTestStack;
    let key: string;
    beforeAll(async () => {
      stack = await startProxyTestStack(); // the test config allows loopback upstreams
      key = await tenantWithUpstream(stack, { anthropicBaseUrl: `${stack.fake.url}/base`, openaiBaseUrl: `${stack.fake.url}/base` });
    });
    afterAll(async () => {
      await stack.api.close();
      await stack.fake.close();
    });

    it('forwards a path under the base path', async () => {
      const before = stack.fake.requests.length;
      await rawGet(stack.base, '/v1/proxy/anthropic/v1/models?limit=2', { 'x-compactor-key': key });
      expect(stack.fake.requests.slice(before).map((r) => r.path)).toEqual(['/base/v1/models']);
    });

    it.each(['/v1/%2e%2e/%2e%2e/admin', '/v1/%2E%2E/%2e%2E/admin', '/..%2f..%2fadmin', '/v1/../../admin', '/v1/%2e/x', '/v1/a%5c..%5c..%5cadmin'])(
      '%s is a 400 and nothing is forwarded',
      async (path) => {
        const before = stack.fake.requests.length;
        for (const provider of ['anthropic', 'openai']) {
          const res = await rawGet(stack.base, `/v1/proxy/${provider}${path}`, { 'x-compactor-key': key });
          expect(res.status).toBe(400);
          const body = res.body as { error: { message: string } };
          expect(body.error.message).toBe("Compactor proxy: a pass-through path may not leave the upstream's base path (no '.' or '..' segments, encoded or not, and no encoded slashes)");
        }
        expect(stack.fake.requests.length).toBe(before);
      },
    );
  });
});
