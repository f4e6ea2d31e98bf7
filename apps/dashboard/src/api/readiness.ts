import { z } from 'zod';
import type { CompactorClient } from './client';
import type { paths } from './schema';

type ReadyResponses = paths['/health/ready']['get']['responses'];
type ReadyChecks = ReadyResponses[200]['content']['application/json']['checks'];

export type DependencyName = keyof ReadyChecks;

export interface DependencyState {
  name: DependencyName;
  label: string;
  up: boolean;
  latencyMs?: number;
  error?: string;
}

/** What the dashboard knows about the API's readiness, in the four cases a page must render. */
export type Readiness =
  | { state: 'ready'; apiUrl: string; dependencies: DependencyState[] }
  | { state: 'not_ready'; apiUrl: string; message: string; dependencies: DependencyState[] }
  | { state: 'unreachable'; apiUrl: string; reason: string }
  | { state: 'unexpected'; apiUrl: string; reason: string };

export const READINESS_TIMEOUT_MS = 3000;

const LABELS: Record<DependencyName, string> = { postgres: 'PostgreSQL', redis: 'Redis' };

const dependencyCheck = z.object({
  status: z.enum(['up', 'down']),
  latencyMs: z.number().optional(),
  error: z.string().optional(),
});

// Annotated with the generated type, so a change to the OpenAPI document that this check
// no longer matches fails the typecheck instead of slipping through at runtime.
const readyChecks: z.ZodType<ReadyChecks> = z.object({ postgres: dependencyCheck, redis: dependencyCheck });

const readyBody = z.object({ checks: readyChecks });

// The 503 body is the API's error envelope; its `details` are free-form in the contract.
const notReadyDetails = z.object({ checks: readyChecks });

function toDependencies(checks: ReadyChecks): DependencyState[] {
  return (Object.keys(LABELS) as DependencyName[]).map((name) => ({
    name,
    label: LABELS[name],
    up: checks[name].status === 'up',
    latencyMs: checks[name].latencyMs,
    error: checks[name].error,
  }));
}

/** Why a request got no HTTP answer at all, in words an operator can act on. */
export function describeFetchFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof DOMException && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return `no answer within ${timeoutMs} ms`;
  }
  if (error instanceof Error) {
    // Node's fetch says only "fetch failed"; the socket error (ECONNREFUSED, ENOTFOUND…) is the cause.
    const cause: unknown = error.cause;
    if (cause instanceof Error && cause.message) return cause.message;
    // An AggregateError (one failure per resolved address) has an empty message but a code.
    const code = (cause as { code?: unknown } | undefined)?.code;
    return typeof code === 'string' ? code : error.message;
  }
  return String(error);
}

/** Asks the API whether it and its dependencies are ready. Never throws. */
export async function checkReadiness(
  client: CompactorClient,
  apiUrl: string,
  timeoutMs = READINESS_TIMEOUT_MS,
): Promise<Readiness> {
  let result;
  try {
    result = await client.GET('/health/ready', { signal: AbortSignal.timeout(timeoutMs), cache: 'no-store' });
  } catch (error) {
    // A 2xx body that is not JSON: something answers on that port, but not the Compactor API.
    if (error instanceof SyntaxError) return { state: 'unexpected', apiUrl, reason: 'the answer is not JSON' };
    return { state: 'unreachable', apiUrl, reason: describeFetchFailure(error, timeoutMs) };
  }

  const { data, error, response } = result;
  if (response.ok) {
    const body = readyBody.safeParse(data);
    if (body.success) return { state: 'ready', apiUrl, dependencies: toDependencies(body.data.checks) };
    return { state: 'unexpected', apiUrl, reason: 'the readiness answer does not match the API contract' };
  }

  if (response.status === 503) {
    // openapi-fetch hands back the raw text when the body is not JSON, whatever the type says.
    const body: unknown = error;
    const envelope = z.object({ error: z.object({ message: z.string(), details: z.unknown().optional() }) }).safeParse(body);
    if (!envelope.success) return { state: 'not_ready', apiUrl, message: 'Not ready', dependencies: [] };
    const details = notReadyDetails.safeParse(envelope.data.error.details);
    return {
      state: 'not_ready',
      apiUrl,
      message: envelope.data.error.message,
      dependencies: details.success ? toDependencies(details.data.checks) : [],
    };
  }

  return { state: 'unexpected', apiUrl, reason: `HTTP ${response.status} ${response.statusText}`.trim() };
}
