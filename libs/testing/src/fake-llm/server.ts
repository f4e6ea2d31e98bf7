import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { anthropicProtocol } from './anthropic';
import { ollamaProtocol } from './ollama';
import { openaiChatProtocol } from './openai-chat';
import { openaiResponsesProtocol } from './openai-responses';
import { AnswerExtras, FakeProtocol, fakeStreamChunks, StreamPlan } from './protocol';
import type { FakeLlm, FakeLlmAuth, FakeLlmInterrupt, FakeLlmOptions, FakeLlmProvider, FakeLlmRequest, FakeLlmStep, FakeLlmToolCall, FakeLlmToolLoop, FakeLlmUsage } from './types';

/**
 * A fake LLM upstream for tests: a real HTTP server on 127.0.0.1 (ephemeral port) that speaks
 * the wire protocols the summarizers, the proxy and the agents it serves use, one file each:
 *
 * - OpenAI Chat Completions (openai-chat.ts): `POST /v1/chat/completions` (and `/chat/completions`), `GET /v1/models`
 * - OpenAI Responses (openai-responses.ts): `POST /v1/responses` (and `/responses`)
 * - Anthropic Messages (anthropic.ts): `POST /v1/messages`
 * - Ollama native (ollama.ts): `POST /api/chat`, `GET /api/tags`
 *
 * Non-streamed and streamed: `stream: true` gets the providers' real event streams (OpenAI
 * `data:` chunks ending in `[DONE]`, with a usage chunk when `stream_options.include_usage`;
 * Responses `response.*` events; Anthropic `message_start` … `message_stop` events; Ollama
 * NDJSON, its default when `stream` is not `false`). Errors come in each provider's shape, from
 * the mapping the proxy uses too (`@compactor/compaction` provider-error-shapes).
 *
 * Answers are deterministic: `SUMMARY(<first 40 characters of the user content>)` unless a
 * scripted step or `respond` says otherwise. Every completion call takes the next step of the
 * script (one queue shared by all endpoints): an answer, an error status (with `Retry-After`),
 * a hang (never answers; the client must time out or abort), a malformed answer, a raw body,
 * or a dropped connection. Every request is recorded with its secrets redacted, so tests
 * assert what was sent. `toolLoop` scripts the upstream side of a client's multi-turn tool loop
 * (tool calls, then a final answer) for the requests it matches, and reads back the tool results
 * each next request carried.
 *
 * ```ts
 * const fake = await startFakeLlm();
 * fake.script([...repeatStep({ status: 429, retryAfter: 1 }, 2), { text: 'ok' }]);
 * // … point a client at fake.url (fake.openaiBaseUrl for the OpenAI SDK) …
 * expect(fake.requests[0].body).toMatchObject({ model: 'gpt-4o-mini' });
 * await fake.close();
 * ```
 */

const SECRET_HEADERS = new Set(['authorization', 'proxy-authorization', 'x-api-key', 'api-key', 'cookie', 'set-cookie']);

/** A short, stable fingerprint of a credential, to compare with `FakeLlmRequest.auth.fingerprint`. */
export function fakeLlmKeyFingerprint(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

/** `count` copies of a step, for scripts such as "429 twice, then succeed". */
export function repeatStep(step: FakeLlmStep, count: number): FakeLlmStep[] {
  return Array.from({ length: Math.max(0, count) }, () => step);
}

/** The default answer text: `SUMMARY(` + the first 40 characters of the user content + `)`. */
export function fakeSummaryText(userContent: string): string {
  return `SUMMARY(${userContent.slice(0, 40)})`;
}

const COMPLETION_PATHS: Record<string, FakeLlmProvider> = {
  '/v1/chat/completions': 'openai',
  '/chat/completions': 'openai',
  '/v1/responses': 'responses',
  '/responses': 'responses',
  '/v1/messages': 'anthropic',
  '/messages': 'anthropic',
  '/api/chat': 'ollama',
};

const PROTOCOLS: Record<FakeLlmProvider, FakeProtocol> = {
  openai: openaiChatProtocol,
  responses: openaiResponsesProtocol,
  anthropic: anthropicProtocol,
  ollama: ollamaProtocol,
};

const isBody = (body: unknown): body is Record<string, unknown> => !!body && typeof body === 'object' && !Array.isArray(body);

function views(provider: FakeLlmProvider | undefined, body: unknown): Pick<FakeLlmRequest, 'system' | 'userContent' | 'userTurns' | 'model'> {
  if (!provider || !isBody(body)) return { userTurns: 0 };
  return PROTOCOLS[provider].views(body);
}

/** An error in the shape of the path's protocol (OpenAI's for unknown paths). */
function errorBody(provider: FakeLlmProvider | undefined, status: number, message: string): unknown {
  return PROTOCOLS[provider ?? 'openai'].errorBody(status, message);
}

/** The text of tool results in a request body, by call id (the last one wins): Anthropic `tool_result` blocks, OpenAI `tool` messages, Responses `function_call_output` items. */
export function fakeLlmToolResults(body: unknown): Map<string, string> {
  if (!isBody(body)) return new Map();
  return new Map([...anthropicProtocol.toolResults(body), ...openaiChatProtocol.toolResults(body), ...openaiResponsesProtocol.toolResults(body)]);
}

function credentialOf(headers: IncomingMessage['headers']): { header: string; scheme?: string; key: string } | undefined {
  const authorization = headers['authorization'];
  if (typeof authorization === 'string' && authorization.length > 0) {
    // `<scheme> <key>`: split at the first run of whitespace after a non-empty scheme.
    const space = [...authorization].findIndex((c, i) => i > 0 && c.trim() === '');
    if (space < 0 || authorization[0].trim() === '') return { header: 'authorization', key: authorization };
    return { header: 'authorization', scheme: authorization.slice(0, space), key: authorization.slice(space).trimStart() };
  }
  for (const name of ['x-api-key', 'api-key']) {
    const value = headers[name];
    if (typeof value === 'string' && value.length > 0) return { header: name, key: value };
  }
  return undefined;
}

/** Writes a streamed answer; returns the outcome to record. */
function sendStream(res: ServerResponse, protocol: FakeProtocol, plan: StreamPlan, interrupt: FakeLlmInterrupt | undefined): string {
  const frames = protocol.streamFrames(plan);
  res.writeHead(200, {
    'content-type': protocol.streamContentType,
    'cache-control': 'no-cache',
  });
  const sent = interrupt ? frames.chunks.slice(0, Math.max(0, interrupt.afterChunks)) : frames.chunks;
  const opening = [...frames.head, ...sent].join('');
  if (opening.length > 0) res.write(opening);
  else res.flushHeaders();
  if (interrupt?.mode === 'stall') return 'stream:stall';
  if (interrupt?.mode === 'drop') {
    // Ends the connection in the middle of the chunked body: what was written is flushed first.
    res.socket?.end();
    return 'stream:drop';
  }
  for (const frame of frames.tail) res.write(frame);
  res.end();
  return 'stream';
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)), ...headers });
  res.end(payload);
}

function estimateTokens(text: string | undefined): number {
  return Math.max(1, Math.ceil((text ?? '').length / 4));
}

/** The tool calls a step makes (none for anything but a text answer, held answers included). */
function callsOf(step: FakeLlmStep | undefined): FakeLlmToolCall[] {
  if (!step) return [];
  if ('until' in step) return callsOf(step.then);
  return 'text' in step ? (step.toolCalls ?? []) : [];
}

interface ActiveLoop {
  loop: FakeLlmToolLoop;
  requests: FakeLlmRequest[];
  results: Array<Record<string, string | undefined>>;
  previousCalls: FakeLlmToolCall[];
  overruns: number;
}

/** Starts a fake LLM upstream on 127.0.0.1 (ephemeral port). Close it with `close()`. */
export async function startFakeLlm(options: FakeLlmOptions = {}): Promise<FakeLlm> {
  const script: FakeLlmStep[] = [...(options.script ?? [])];
  const requests: FakeLlmRequest[] = [];
  const sockets = new Set<Socket>();
  const waiters: Array<{ count: number; resolve: (r: FakeLlmRequest[]) => void }> = [];
  let counter = 0;
  const loops: ActiveLoop[] = [];

  /** The next turn of the first tool loop that matches the request (undefined: no loop does). */
  const loopStep = (request: FakeLlmRequest): FakeLlmStep | undefined => {
    const active = loops.find((l) => (l.loop.match ?? (() => true))(request));
    if (!active) return undefined;
    const turn = Math.min(active.requests.length, active.loop.turns.length - 1);
    if (active.requests.length >= active.loop.turns.length) active.overruns++;
    if (active.requests.length > 0) {
      const sent = fakeLlmToolResults(request.body);
      active.results.push(Object.fromEntries(active.previousCalls.map((c) => [c.id, sent.get(c.id)])));
    }
    active.requests.push(request);
    const spec = active.loop.turns[turn];
    const step = typeof spec === 'function' ? spec(request, turn) : spec;
    active.previousCalls = callsOf(step);
    return step;
  };

  const record = (request: FakeLlmRequest): void => {
    if (requests.includes(request)) return; // a held request was recorded when it arrived
    requests.push(request);
    for (const waiter of [...waiters]) {
      if (requests.length >= waiter.count) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve([...requests]);
      }
    }
  };

  const responseOf = new WeakMap<ServerResponse, FakeLlmRequest>();

  const handle = (req: IncomingMessage, res: ServerResponse, raw: string): void => {
    const parsedUrl = new URL(req.url ?? '/', 'http://127.0.0.1');
    const path = parsedUrl.pathname;
    const query = Object.fromEntries(parsedUrl.searchParams);
    const method = req.method ?? 'GET';
    const provider = COMPLETION_PATHS[path] ?? (path.startsWith('/api/') ? 'ollama' : path.startsWith('/v1/') ? 'openai' : undefined);
    let body: unknown;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw);
      } catch {
        body = raw;
      }
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined) continue;
      headers[name] = SECRET_HEADERS.has(name) ? '[redacted]' : Array.isArray(value) ? value.join(', ') : value;
    }
    const credential = credentialOf(req.headers);
    const auth: FakeLlmAuth | undefined = credential
      ? {
          header: credential.header,
          ...(credential.scheme ? { scheme: credential.scheme } : {}),
          fingerprint: fakeLlmKeyFingerprint(credential.key),
          ...(options.apiKey !== undefined ? { matches: credential.key === options.apiKey } : {}),
        }
      : undefined;
    const request: FakeLlmRequest = {
      index: counter++,
      method,
      path,
      query,
      provider,
      headers,
      auth,
      body,
      stream: COMPLETION_PATHS[path] !== undefined && PROTOCOLS[COMPLETION_PATHS[path]].wantsStream(body),
      ...views(provider, body),
      outcome: 'answer',
    };
    responseOf.set(res, request);

    const models = options.models ?? ['llama3.1:8b', 'gpt-4o-mini'];
    if (method === 'GET' && path === '/api/tags') {
      request.outcome = 'list';
      record(request);
      sendJson(res, 200, { models: models.map((name) => ({ name, model: name, modified_at: '2026-01-01T00:00:00Z', size: 0, digest: fakeLlmKeyFingerprint(name) })) });
      return;
    }
    if (method === 'GET' && (path === '/v1/models' || path === '/models')) {
      request.outcome = 'list';
      record(request);
      sendJson(res, 200, { object: 'list', data: models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'fake' })) });
      return;
    }
    const completion = COMPLETION_PATHS[path];
    if (method !== 'POST' || !completion) {
      request.outcome = 'not-found';
      record(request);
      sendJson(res, 404, errorBody(provider, 404, `no route for ${method} ${path}`));
      return;
    }
    if (options.apiKey !== undefined && !auth?.matches) {
      request.outcome = 'auth:401';
      record(request);
      // Quotes the key that was sent, as some providers do: clients must never repeat it.
      sendJson(res, 401, errorBody(completion, 401, `Incorrect API key provided: ${credential?.key ?? '(none)'}`));
      return;
    }

    const next = script.shift() ?? loopStep(request) ?? options.respond?.(request);
    if (next && 'until' in next) {
      request.outcome = 'held';
      record(request);
      void next.until.finally(() => answer(req, res, request, completion, next.then));
      return;
    }
    answer(req, res, request, completion, next);
  };

  const answer = (req: IncomingMessage, res: ServerResponse, request: FakeLlmRequest, completion: FakeLlmProvider, step: FakeLlmStep | undefined): void => {
    const model = request.model ?? 'fake-model';
    const protocol = PROTOCOLS[completion];
    if (step && 'hang' in step) {
      request.outcome = 'hang';
      record(request);
      return; // never answers; the socket is destroyed when the client gives up or the fake closes
    }
    if (step && 'drop' in step) {
      request.outcome = 'drop';
      record(request);
      req.socket.destroy();
      return;
    }
    if (step && 'malformed' in step) {
      const variant = step.malformed === true ? 'invalid-json' : step.malformed;
      request.outcome = `malformed:${variant}`;
      record(request);
      if (variant === 'invalid-json') {
        const payload = '{"id":"truncated","choices":[{"message":{"content":"SUMM';
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) });
        res.end(payload);
      } else if (variant === 'missing-fields') {
        sendJson(res, 200, protocol.missingFieldsBody(model));
      } else {
        sendJson(res, 200, protocol.answerBody(model, '', { inputTokens: estimateTokens(request.userContent), outputTokens: 0 }, request.index, {}));
      }
      return;
    }
    if (step && 'body' in step) {
      request.outcome = 'body';
      record(request);
      if (typeof step.body === 'string') {
        res.writeHead(step.status ?? 200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': String(Buffer.byteLength(step.body)), ...step.headers });
        res.end(step.body);
      } else {
        sendJson(res, step.status ?? 200, step.body, step.headers);
      }
      return;
    }
    if (step && 'status' in step) {
      request.outcome = `status:${step.status}`;
      record(request);
      const extra: Record<string, string> = {};
      if (step.retryAfter !== undefined) extra['retry-after'] = String(step.retryAfter);
      if (step.retryAfterMs !== undefined) extra['retry-after-ms'] = String(step.retryAfterMs);
      sendJson(res, step.status, errorBody(completion, step.status, step.message ?? `fake upstream error ${step.status}`), extra);
      return;
    }
    const answer = step && 'text' in step ? step : undefined;
    const text = answer ? answer.text : (options.summarize ?? ((r: FakeLlmRequest) => fakeSummaryText(r.userContent ?? '')))(request);
    const usage: FakeLlmUsage | null =
      answer?.usage === null
        ? null
        : {
            inputTokens: answer?.usage?.inputTokens ?? estimateTokens(`${request.system ?? ''}${request.userContent ?? ''}`),
            outputTokens: answer?.usage?.outputTokens ?? estimateTokens(text),
          };
    if (request.stream) {
      const includeUsage = (request.body as { stream_options?: { include_usage?: unknown } } | undefined)?.stream_options?.include_usage === true;
      const extras: AnswerExtras = { toolCalls: answer?.toolCalls, thinking: answer?.thinking };
      const plan: StreamPlan = { model, index: request.index, chunks: answer?.chunks ?? (text === '' && (answer?.toolCalls?.length ?? 0) > 0 ? [] : fakeStreamChunks(text)), usage, includeUsage, extras };
      request.outcome = 'stream';
      record(request);
      request.outcome = sendStream(res, protocol, plan, answer?.interrupt);
      return;
    }
    record(request);
    sendJson(res, 200, protocol.answerBody(model, text, usage, request.index, { toolCalls: answer?.toolCalls, thinking: answer?.thinking }));
  };

  const server: Server = createServer((req, res) => {
    // The exact bytes sent, so tests can compare what a client (or a proxy's client) received.
    const sent: Buffer[] = [];
    const keep = (chunk: unknown) => {
      if (typeof chunk === 'string') sent.push(Buffer.from(chunk));
      else if (chunk instanceof Uint8Array) sent.push(Buffer.from(chunk));
    };
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      keep(chunk);
      return write(chunk, ...rest);
    }) as typeof res.write;
    res.end = ((chunk?: unknown, ...rest: unknown[]) => {
      if (typeof chunk !== 'function') keep(chunk);
      return end(chunk, ...rest);
    }) as typeof res.end;
    const finished = () => {
      const request = responseOf.get(res);
      if (!request) return;
      request.responseStatus = res.statusCode;
      request.responseBody = Buffer.concat(sent).toString('utf8');
    };
    res.on('finish', finished);
    res.on('close', finished);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        handle(req, res, Buffer.concat(chunks).toString('utf8'));
      } catch (error) {
        if (!res.headersSent) sendJson(res, 500, { error: { message: `fake LLM failed: ${String(error)}` } });
      }
    });
    req.on('error', () => undefined);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.keepAliveTimeout = 1000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  let closed: Promise<void> | undefined;

  return {
    url,
    port,
    openaiBaseUrl: `${url}/v1`,
    anthropicBaseUrl: url,
    ollamaHost: url,
    requests,
    completionRequests: () => requests.filter((r) => r.method === 'POST' && COMPLETION_PATHS[r.path] !== undefined),
    script: (steps) => {
      script.splice(0, script.length, ...steps);
    },
    enqueue: (...steps) => {
      script.push(...steps);
    },
    pendingSteps: () => script.length,
    toolLoop: (loop) => {
      if (loop.turns.length === 0) throw new Error('fake LLM: a tool loop needs at least one turn');
      const active: ActiveLoop = { loop, requests: [], results: [], previousCalls: [], overruns: 0 };
      loops.push(active);
      return {
        requests: active.requests,
        results: active.results,
        done: () => active.requests.length >= loop.turns.length,
        overruns: () => active.overruns,
        stop: () => {
          const i = loops.indexOf(active);
          if (i >= 0) loops.splice(i, 1);
        },
      };
    },
    reset: () => {
      script.length = 0;
      loops.length = 0;
      requests.length = 0;
      counter = 0;
    },
    waitForRequests: (count, timeoutMs = 10_000) => {
      if (requests.length >= count) return Promise.resolve([...requests]);
      return new Promise<FakeLlmRequest[]>((resolve, reject) => {
        const timer = setTimeout(() => {
          const i = waiters.indexOf(waiter);
          if (i >= 0) waiters.splice(i, 1);
          reject(new Error(`fake LLM: waited ${timeoutMs} ms for ${count} requests, got ${requests.length}`));
        }, timeoutMs);
        timer.unref();
        const waiter = {
          count,
          resolve: (r: FakeLlmRequest[]) => {
            clearTimeout(timer);
            resolve(r);
          },
        };
        waiters.push(waiter);
      });
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
        sockets.clear();
      }),
    start: () =>
      new Promise<void>((resolve, reject) => {
        if (server.listening) return resolve();
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject);
          resolve();
        });
      }),
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
        sockets.clear();
      });
      return closed;
    },
  };
}
