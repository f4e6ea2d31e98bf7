/**
 * What a page does with an API answer that is not data: a missing or rejected key, a key
 * without the scope, an unknown session, an API that does not answer. Pure, so every case is
 * tested without a server.
 */
export type ApiFailure =
  | { kind: 'rejected'; message: string }
  | { kind: 'forbidden'; message: string }
  | { kind: 'not-found'; message: string }
  | { kind: 'invalid'; message: string }
  | { kind: 'unreachable'; message: string }
  | { kind: 'failed'; message: string };

export type ApiResult<T> = { ok: true; data: T } | { ok: false; failure: ApiFailure };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The API's error envelope `{ error: { code, message } }`, when the body is one. */
export function errorMessage(body: unknown): string | null {
  if (!isRecord(body) || !isRecord(body.error)) return null;
  return typeof body.error.message === 'string' ? body.error.message : null;
}

/** The API's messages are phrases; the page shows them as sentences. */
const sentence = (text: string | null): string | null => (text === null ? null : /[.!?]$/.test(text.trim()) ? text.trim() : `${text.trim()}.`);

export function failureFromStatus(status: number, body: unknown): ApiFailure {
  const message = sentence(errorMessage(body));
  if (status === 401) return { kind: 'rejected', message: message ?? 'The API rejected the key.' };
  if (status === 403) return { kind: 'forbidden', message: message ?? 'The key lacks the scope this needs.' };
  if (status === 404) return { kind: 'not-found', message: message ?? 'Not found.' };
  if (status === 400 || status === 409 || status === 422) return { kind: 'invalid', message: message ?? `The API refused the request (HTTP ${status}).` };
  return { kind: 'failed', message: message ?? `The API answered HTTP ${status}.` };
}

/** Why a request got no answer, in words (Node's fetch hides the socket error in `cause`). */
export function describeNetworkError(error: unknown): string {
  if (error instanceof Error) {
    const cause: unknown = error.cause;
    if (cause instanceof Error && cause.message) return cause.message;
    const code = isRecord(cause) && typeof cause.code === 'string' ? cause.code : null;
    return code ?? error.message;
  }
  return String(error);
}

/** Runs one typed-client call and folds every outcome into data or a failure; never throws. */
export async function apiCall<T>(call: () => Promise<{ data?: T; error?: unknown; response: Response }>): Promise<ApiResult<T>> {
  let result;
  try {
    result = await call();
  } catch (error) {
    if (error instanceof SyntaxError) return { ok: false, failure: { kind: 'failed', message: 'The API answered with something that is not JSON.' } };
    return { ok: false, failure: { kind: 'unreachable', message: `The API did not answer: ${describeNetworkError(error)}.` } };
  }
  if (result.response.ok && result.data !== undefined) return { ok: true, data: result.data };
  return { ok: false, failure: failureFromStatus(result.response.status, result.error) };
}

/** What a server action tells the page: a sentence for a status line either way. */
export type ActionResult = { ok: boolean; message: string };
