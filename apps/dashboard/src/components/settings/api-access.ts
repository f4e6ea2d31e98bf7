import 'server-only';
import { z } from 'zod';
import type { CompactorClient } from '../../api/client';
import { describeFetchFailure } from '../../api/readiness';
import { authedClient } from '../../server/api-key';

/**
 * The outcome of an authenticated read, in the cases a page renders differently: no key entered
 * yet (point to Settings), the key rejected (401 unknown or revoked, 403 missing scope), the API
 * unavailable or answering off-contract, or the data, checked against its schema.
 */
export type ApiAccess<T> =
  | { state: 'no-key' }
  | { state: 'rejected'; status: 401 | 403; message: string }
  | { state: 'unavailable'; reason: string }
  | { state: 'ok'; data: T };

export type ApiAccessProblem = Exclude<ApiAccess<unknown>, { state: 'ok' }>;

export const API_TIMEOUT_MS = 5000;

const envelope = z.object({ error: z.object({ code: z.string().optional(), message: z.string() }) });

/** The API's error message from an error body, when it has the API's envelope. */
export function errorMessage(body: unknown, fallback: string): string {
  const parsed = envelope.safeParse(body);
  return parsed.success ? parsed.data.error.message : fallback;
}

type Call = (client: CompactorClient, signal: AbortSignal) => Promise<{ data?: unknown; error?: unknown; response: Response }>;

/** Runs one typed API call with `client` and classifies its outcome. Never throws. */
export async function readWith<T>(client: CompactorClient, call: Call, schema: z.ZodType<T>, timeoutMs = API_TIMEOUT_MS): Promise<ApiAccess<T>> {
  let result;
  try {
    result = await call(client, AbortSignal.timeout(timeoutMs));
  } catch (error) {
    if (error instanceof SyntaxError) return { state: 'unavailable', reason: 'the answer is not JSON' };
    return { state: 'unavailable', reason: describeFetchFailure(error, timeoutMs) };
  }
  const { data, error, response } = result;
  if (response.status === 401 || response.status === 403) {
    return { state: 'rejected', status: response.status, message: errorMessage(error, response.statusText || `HTTP ${response.status}`) };
  }
  if (!response.ok) return { state: 'unavailable', reason: `HTTP ${response.status}: ${errorMessage(error, response.statusText)}` };
  const parsed = schema.safeParse(data);
  if (!parsed.success) return { state: 'unavailable', reason: 'the answer does not match the API contract' };
  return { state: 'ok', data: parsed.data };
}

/** The same with this request's saved key; `no-key` when none was entered. */
export async function readWithSavedKey<T>(call: Call, schema: z.ZodType<T>, timeoutMs = API_TIMEOUT_MS): Promise<ApiAccess<T>> {
  const client = await authedClient();
  if (!client) return { state: 'no-key' };
  return readWith(client, call, schema, timeoutMs);
}
