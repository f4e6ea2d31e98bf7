import { ApiKeyScope } from '@compactor/persistence';
import { FakeLlm, FakeLlmOptions, startFakeLlm } from '@compactor/testing';
import { AddressInfo } from 'node:net';
import { startTestApi, TestApi } from '../test-app';

export interface ProxyTestStack {
  api: TestApi;
  /** The upstream both proxy routes forward to. */
  fake: FakeLlm;
  /** A key of a new tenant. */
  key: string;
  /** The API's loopback URL, for SDK clients and fetch. */
  base: string;
}

/** What every proxy int-spec starts from: the real API with both proxy routes pointed at a fake upstream, and a tenant key. */
export async function startProxyTestStack(options: { fake?: FakeLlmOptions; env?: Record<string, string>; scopes?: ApiKeyScope[] } = {}): Promise<ProxyTestStack> {
  const fake = await startFakeLlm(options.fake);
  const api = await startTestApi({ COMPACTOR_PROXY_ANTHROPIC_BASE_URL: fake.url, COMPACTOR_PROXY_OPENAI_BASE_URL: fake.url, ...options.env });
  const key = await api.tenantKey(options.scopes ?? ['ingest', 'read']);
  return { api, fake, key, base: `http://127.0.0.1:${(api.app.getHttpServer().address() as AddressInfo).port}` };
}
