import 'server-only';
import { cookies } from 'next/headers';
import createClient from 'openapi-fetch';
import { getDashboardConfig } from '../config';
import type { CompactorClient } from '../api/client';
import type { paths } from '../api/schema';

/**
 * The API key lives only here, on the dashboard's server: entered once in Settings, kept in an
 * httpOnly, SameSite=Strict cookie that the browser's JavaScript cannot read, and sent to the API
 * as a Bearer token by server code. It never appears in a URL, a page or a log line.
 */
export const API_KEY_COOKIE = 'compactor_api_key';
/** A year: the key stays until it is removed in Settings or revoked. */
const MAX_AGE_S = 365 * 24 * 3600;

export async function readApiKey(): Promise<string | null> {
  const value = (await cookies()).get(API_KEY_COOKIE)?.value;
  return value && value.trim() ? value : null;
}

export async function storeApiKey(key: string, secure: boolean): Promise<void> {
  (await cookies()).set(API_KEY_COOKIE, key, { httpOnly: true, sameSite: 'strict', secure, path: '/', maxAge: MAX_AGE_S });
}

export async function clearApiKey(): Promise<void> {
  (await cookies()).delete(API_KEY_COOKIE);
}

/** A typed client that authenticates with `key`. */
export function clientWithKey(key: string, fetchImpl?: (input: Request) => Promise<Response>): CompactorClient {
  return createClient<paths>({ baseUrl: getDashboardConfig().COMPACTOR_API_URL, headers: { Authorization: `Bearer ${key}` }, fetch: fetchImpl });
}

/** The typed client for this request's key, or null when no key was entered yet (pages then point to Settings). */
export async function authedClient(): Promise<CompactorClient | null> {
  const key = await readApiKey();
  return key ? clientWithKey(key) : null;
}
