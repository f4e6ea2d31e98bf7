import createClient, { type Client } from 'openapi-fetch';
import { CompactorApiError } from './errors';
import type { components, operations, paths } from './generated/schema';

type Schemas = components['schemas'];
/**
 * The append body. The OpenAPI document's `policy` object is the response's `PolicyView` (its
 * `overrides` required) and its preset names an enum; the API also takes a policy without
 * overrides, and checks the name itself (a 400 names the field).
 */
export type AppendMessagesRequest = Omit<Schemas['AppendMessagesRequest'], 'policy' | 'system'> & {
  /** For a new session: a preset name, or a preset with parameter overrides. */
  policy?: string | { preset: string; overrides?: Record<string, unknown> };
  /** Anthropic's top-level system prompt: a string or text blocks. */
  system?: string | { type: 'text'; text: string; [key: string]: unknown }[];
};
export type AppendMessagesResponse = Schemas['AppendMessagesResponse'];
export type ContextResponse = Schemas['ContextResponse'];
export type ContextFormat = ContextResponse['format'];
/** Both fields have defaults (`dryRun: false`, `format: 'anthropic'`), so both are optional. */
export type CompactRequest = Partial<Schemas['CompactRequest']>;
export type CompactResponse = Schemas['CompactResponse'];
export type JobView = Schemas['JobView'];
export type RestoreResponse = Schemas['RestoreResponse'];
export type SessionView = Schemas['SessionView'];
export type SessionPage = Schemas['SessionPage'];
export type SessionDetail = Schemas['SessionDetail'];
export type SnapshotView = Schemas['SnapshotView'];
export type SnapshotList = Schemas['SnapshotList'];
export type ListSessionsQuery = NonNullable<operations['listSessions']['parameters']['query']>;

/** The typed openapi-fetch client of every route in the OpenAPI document. */
export type CompactorRawClient = Client<paths>;

export interface CompactorClientOptions {
  /** The API's base URL, e.g. `http://127.0.0.1:3000`. */
  baseUrl: string;
  /** An API key (`ck_…`), sent as `Authorization: Bearer <key>`. */
  apiKey: string;
  /** A fetch implementation (default: the global fetch). */
  fetch?: (input: Request) => Promise<Response>;
}

/** A job's final states: GET /v1/jobs/:id no longer changes once it reports one. */
const FINISHED: ReadonlySet<string> = new Set(['succeeded', 'skipped', 'failed']);

/**
 * The raw typed client: every route of the OpenAPI document through openapi-fetch, answers as
 * `{ data, error, response }`. `Compactor` below wraps the common calls and throws on errors.
 */
export function createCompactorClient(options: CompactorClientOptions): CompactorRawClient {
  const client = createClient<paths>({ baseUrl: withoutTrailingSlashes(options.baseUrl), fetch: options.fetch });
  client.use({
    onRequest: ({ request }) => {
      request.headers.set('Authorization', `Bearer ${options.apiKey}`);
      return request;
    },
  });
  return client;
}

function withoutTrailingSlashes(url: string): string {
  let end = url.length;
  while (end > 0 && url[end - 1] === '/') end -= 1;
  return url.slice(0, end);
}

/** What openapi-fetch answers: the data, or the error body and the response. */
interface FetchResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

function unwrap<T>(result: FetchResult<T>): T {
  if (result.error !== undefined || !result.response.ok) throw new CompactorApiError(result.response.status, result.error);
  return result.data as T;
}

/**
 * A small client for the REST API's common calls. Each method returns the response body typed
 * from the OpenAPI document, or throws `CompactorApiError` with the API's error body. `api` is the
 * raw typed client for every other route.
 */
export class Compactor {
  readonly api: CompactorRawClient;

  constructor(options: CompactorClientOptions) {
    this.api = createCompactorClient(options);
  }

  /**
   * Appends messages (Anthropic, OpenAI or canonical shape); the first append creates the session.
   * Pass an `idempotencyKey` and the same one when you retry the append: it applies once and the
   * retry gets the first answer. Without one, a retry appends again.
   */
  async append(sessionId: string, body: AppendMessagesRequest, options: { idempotencyKey?: string } = {}): Promise<AppendMessagesResponse> {
    const header = options.idempotencyKey === undefined ? {} : { 'Idempotency-Key': options.idempotencyKey };
    return unwrap(
      await this.api.POST('/v1/sessions/{id}/messages', {
        params: { path: { id: sessionId }, header },
        body: body as Schemas['AppendMessagesRequest'],
      }),
    );
  }

  /**
   * The ready-to-send context in the provider's shape (default `anthropic`). `waitMs`: when it would be served through
   * the fallback while a compaction of the session is queued or running, wait at most this long for it.
   */
  async context(sessionId: string, format?: ContextFormat, options: { waitMs?: number } = {}): Promise<ContextResponse> {
    const query = { ...(format ? { format } : {}), ...(options.waitMs !== undefined ? { waitMs: options.waitMs } : {}) };
    return unwrap(await this.api.GET('/v1/sessions/{id}/context', { params: { path: { id: sessionId }, query } }));
  }

  /** Queues a compaction now (202 with the job); `{ dryRun: true }` answers with the would-be context instead. */
  async compact(sessionId: string, body: CompactRequest = {}): Promise<CompactResponse> {
    return unwrap(await this.api.POST('/v1/sessions/{id}/compact', { params: { path: { id: sessionId } }, body: body as Schemas['CompactRequest'] }));
  }

  /** A compaction job as it is now. */
  async job(jobId: string): Promise<JobView> {
    return unwrap(await this.api.GET('/v1/jobs/{jobId}', { params: { path: { jobId } } }));
  }

  /**
   * Polls a job until it succeeded, was skipped or failed (every `intervalMs`), and returns it;
   * throws once `timeoutMs` passed without that. A trigger folded into a job that had not started
   * (`supersededBy`) is answered by that job: the wait goes on with it and returns it.
   */
  async waitForJob(jobId: string, { timeoutMs = 60_000, intervalMs = 250 } = {}): Promise<JobView> {
    const deadline = Date.now() + timeoutMs;
    const seen = new Set([jobId]);
    for (;;) {
      const job = await this.job(jobId);
      if (job.supersededBy && !seen.has(job.supersededBy)) {
        jobId = job.supersededBy;
        seen.add(jobId);
        continue;
      }
      if (FINISHED.has(job.status)) return job;
      if (Date.now() >= deadline) throw new Error(`compaction job ${jobId} still ${job.status} after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  }

  /** Undoes a compaction: the context returns to the version before it (a new head version); later messages stay. */
  async undo(sessionId: string, jobId: string): Promise<RestoreResponse> {
    return unwrap(await this.api.POST('/v1/sessions/{id}/compactions/{jobId}/undo', { params: { path: { id: sessionId, jobId } } }));
  }

  /** Takes a manual snapshot of the context version in force. */
  async snapshot(sessionId: string, label?: string): Promise<SnapshotView> {
    return unwrap(await this.api.POST('/v1/sessions/{id}/snapshots', { params: { path: { id: sessionId } }, body: label === undefined ? {} : { label } }));
  }

  /** The session's snapshots, newest first. */
  async snapshots(sessionId: string): Promise<SnapshotList> {
    return unwrap(await this.api.GET('/v1/sessions/{id}/snapshots', { params: { path: { id: sessionId } } }));
  }

  /** Restores a snapshot's context version (a new head version); later messages stay. */
  async restore(sessionId: string, snapshotId: string): Promise<RestoreResponse> {
    return unwrap(await this.api.POST('/v1/sessions/{id}/snapshots/{snapshotId}/restore', { params: { path: { id: sessionId, snapshotId } } }));
  }

  /** One session with its budget. */
  async session(sessionId: string): Promise<SessionDetail> {
    return unwrap(await this.api.GET('/v1/sessions/{id}', { params: { path: { id: sessionId } } }));
  }

  /** One page of the tenant's sessions; pass `nextCursor` as `cursor` for the next. */
  async sessions(query: ListSessionsQuery = {}): Promise<SessionPage> {
    return unwrap(await this.api.GET('/v1/sessions', { params: { query } }));
  }
}
