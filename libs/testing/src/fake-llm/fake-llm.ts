import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A fake LLM upstream for tests: a real HTTP server on 127.0.0.1 (ephemeral port) that speaks
 * the three wire protocols the summarizers (and the proxy) use:
 *
 * - OpenAI Chat Completions: `POST /v1/chat/completions` (and `/chat/completions`), `GET /v1/models`
 * - Anthropic Messages: `POST /v1/messages`
 * - Ollama native: `POST /api/chat`, `GET /api/tags`
 *
 * Non-streamed and streamed: `stream: true` gets the providers' real event streams (OpenAI
 * `data:` chunks ending in `[DONE]`, with a usage chunk when `stream_options.include_usage`;
 * Anthropic `message_start` … `message_stop` events; Ollama NDJSON, its default when
 * `stream` is not `false`).
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

export type FakeLlmProvider = 'openai' | 'anthropic' | 'ollama';

export interface FakeLlmUsage {
  inputTokens: number;
  outputTokens: number;
}

/** How a streamed answer stops early: `drop` closes the connection, `stall` leaves it open without sending more. */
export interface FakeLlmInterrupt {
  afterChunks: number;
  mode: 'drop' | 'stall';
}

export type FakeLlmStep =
  /**
   * A normal answer with this text. `usage`: default estimated from the lengths (≈ 4 characters
   * a token); `null` leaves the usage fields out, as some compatible servers do. When streamed,
   * `chunks` are the text deltas (default: the text cut after each word) and `interrupt` ends the
   * stream early (the finishing events are never sent).
   */
  | {
      text: string;
      usage?: Partial<FakeLlmUsage> | null;
      chunks?: string[];
      interrupt?: FakeLlmInterrupt;
      /** Tool calls after the text (several: parallel calls): Anthropic `tool_use` blocks, OpenAI `tool_calls`; streamed as the providers stream them. */
      toolCalls?: FakeLlmToolCall[];
      /** An Anthropic thinking block before the text (OpenAI has none). */
      thinking?: { thinking: string; signature: string };
    }
  /** An error status in the provider's error shape. `retryAfter` sets `Retry-After` (seconds, or the raw header value); `retryAfterMs` sets `retry-after-ms`. */
  | { status: number; retryAfter?: number | string; retryAfterMs?: number; message?: string }
  /** Never answers: the request stays open until the client gives up (timeout or abort) or the fake closes. */
  | { hang: true }
  /**
   * A 200 that is not a valid answer: `invalid-json` (default) is a truncated JSON body,
   * `missing-fields` valid JSON without the answer (OpenAI: `choices: []`), `empty-text` an
   * answer whose text is empty. Always a non-streamed JSON body, even for `stream: true`.
   */
  | { malformed: true | 'invalid-json' | 'missing-fields' | 'empty-text' }
  /** This exact body (status 200 unless given): a string is sent as is (text/plain unless `headers` say otherwise), anything else as JSON. */
  | { body: unknown; status?: number; headers?: Record<string, string> }
  /** Closes the connection without answering (a network error for the client). */
  | { drop: true }
  /**
   * Holds the request until `until` settles, then answers with `then` (default: the normal
   * answer): lets a test act while a call is in flight (e.g. append while a compaction runs).
   */
  | { until: Promise<unknown>; then?: FakeLlmStep };

/** A tool call in a scripted answer. `input` is sent as Anthropic's `input` and as OpenAI's `arguments` (JSON text). */
export interface FakeLlmToolCall {
  id: string;
  name: string;
  input: unknown;
}

/**
 * A scripted agent loop: the upstream side of a client's tool loop (Claude Code, an SDK's tool
 * runner, an agent's own loop). Each completion request the loop matches takes its next turn, in
 * order: answers that call tools, then the final answer. The client runs the tools and sends their
 * results in its next request; the loop reads them back (`FakeLlmToolLoopRun.results`), so a test
 * sees what reached the upstream. A turn given as a function is built when its request arrives
 * (return `{ until, then }` to hold the answer while the test waits for something, such as a
 * worker catching up, as a real model's thinking time would).
 */
export interface FakeLlmToolLoop {
  /** Which completion requests belong to the loop (e.g. by a header its client sends); default: every one. */
  match?: (request: FakeLlmRequest) => boolean;
  /** One answer per request of the loop, in order; the last one should call no tool. */
  turns: Array<FakeLlmStep | ((request: FakeLlmRequest, turn: number) => FakeLlmStep)>;
}

export interface FakeLlmToolLoopRun {
  /** The loop's requests, in order of arrival (one per turn; more when the client sent more than the script has). */
  readonly requests: FakeLlmRequest[];
  /**
   * For each request after the first: the tool results it carried for the previous turn's calls, by call id
   * (Anthropic `tool_result` blocks, OpenAI `tool` messages; their text). A call whose result is missing maps to undefined.
   */
  readonly results: Array<Record<string, string | undefined>>;
  /** Whether every turn has been answered. */
  done(): boolean;
  /** Requests the loop matched after its last turn (they got the last turn again). */
  overruns(): number;
  /** Detaches the loop: its later requests get the script or the default answer. */
  stop(): void;
}

export interface FakeLlmAuth {
  /** The header that carried the credential (lower case). */
  header: string;
  /** `Bearer` when the header was `Authorization: Bearer …`. */
  scheme?: string;
  /** `fakeLlmKeyFingerprint(key)` of the credential sent (the key itself is never recorded). */
  fingerprint: string;
  /** Whether it equals the fake's `apiKey` (undefined when the fake has none). */
  matches?: boolean;
}

export interface FakeLlmRequest {
  /** 0-based order of arrival. */
  index: number;
  method: string;
  path: string;
  /** Which protocol the path belongs to (undefined for unknown paths). */
  provider?: FakeLlmProvider;
  /** Lower-case header names; credentials (authorization, x-api-key, api-key, cookie…) replaced by `[redacted]`. */
  headers: Record<string, string>;
  auth?: FakeLlmAuth;
  /** Query parameters of the URL. */
  query: Record<string, string>;
  /** The parsed JSON body (the raw text when it was not JSON; undefined for no body). */
  body: unknown;
  /** Whether the answer is (or would be) streamed: `stream: true` (OpenAI, Anthropic), `stream` not `false` (Ollama). */
  stream: boolean;
  /** Convenience views of the body: the system prompt(s), the user turns' text, the model. */
  system?: string;
  userContent?: string;
  userTurns: number;
  model?: string;
  /** What the fake did: `answer`, `stream`, `stream:drop`, `stream:stall`, `status:429`, `hang`, `malformed:invalid-json`, `body`, `drop`, `auth:401`, `not-found`, `list`. */
  outcome: string;
  /** The status it answered with and the exact bytes of the body it sent (UTF-8), once the response finished or was cut. */
  responseStatus?: number;
  responseBody?: string;
}

export interface FakeLlmOptions {
  /** Steps for the next completion calls, in order; when empty, the default answer. */
  script?: FakeLlmStep[];
  /**
   * When set, completion calls must carry this key (`Authorization: Bearer`, `x-api-key` or
   * `api-key`); otherwise they get a 401 whose error message quotes the key that was sent, as
   * some providers do, so tests can check that clients never repeat it.
   */
  apiKey?: string;
  /** Chooses the step for a call when the script is empty (return undefined for the default answer). */
  respond?: (request: FakeLlmRequest) => FakeLlmStep | undefined;
  /** The answer text for a request (default `SUMMARY(<first 40 chars of the user content>)`). */
  summarize?: (request: FakeLlmRequest) => string;
  /** Models listed by `GET /api/tags` and `GET /v1/models`. */
  models?: string[];
}

export interface FakeLlm {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** Base URL for the OpenAI SDK (`<url>/v1`). */
  readonly openaiBaseUrl: string;
  /** Base URL for the Anthropic SDK (`<url>`). */
  readonly anthropicBaseUrl: string;
  /** Host for the Ollama client (`<url>`). */
  readonly ollamaHost: string;
  /** Every request received, in order. */
  readonly requests: FakeLlmRequest[];
  /** Completion requests only (POSTs to the three chat endpoints). */
  completionRequests(): FakeLlmRequest[];
  /** Replaces the steps still pending with these (the next completion calls take them in order, then the default answer). */
  script(steps: FakeLlmStep[]): void;
  /** Appends steps to the script. */
  enqueue(...steps: FakeLlmStep[]): void;
  /** Installs a scripted tool loop (see FakeLlmToolLoop): the requests it matches take its turns, after any scripted step. */
  toolLoop(loop: FakeLlmToolLoop): FakeLlmToolLoopRun;
  /** Steps not yet taken. */
  pendingSteps(): number;
  /** Clears the script, the tool loops and the recorded requests, and restarts `index` at 0 (open hanging requests stay open until their client gives up). */
  reset(): void;
  /** Resolves once `count` requests in total have arrived (event-driven, no polling). */
  waitForRequests(count: number, timeoutMs?: number): Promise<FakeLlmRequest[]>;
  /** Stops the server and destroys every open connection (hanging ones too). */
  close(): Promise<void>;
}

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
  '/v1/messages': 'anthropic',
  '/messages': 'anthropic',
  '/api/chat': 'ollama',
};

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => {
        if (typeof part === 'string') return part;
        if (part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string') return (part as { text: string }).text;
        return '';
      })
      .join('');
  }
  return '';
}

function views(provider: FakeLlmProvider | undefined, body: unknown): Pick<FakeLlmRequest, 'system' | 'userContent' | 'userTurns' | 'model'> {
  if (!provider || !body || typeof body !== 'object') return { userTurns: 0 };
  const b = body as { model?: unknown; system?: unknown; messages?: unknown };
  const messages = Array.isArray(b.messages) ? (b.messages as Array<{ role?: unknown; content?: unknown }>) : [];
  const systems = messages.filter((m) => m && (m.role === 'system' || m.role === 'developer')).map((m) => textOf(m.content));
  if (provider === 'anthropic' && b.system !== undefined) systems.unshift(textOf(b.system));
  const users = messages.filter((m) => m && m.role === 'user').map((m) => textOf(m.content));
  return {
    model: typeof b.model === 'string' ? b.model : undefined,
    system: systems.length > 0 ? systems.join('\n') : undefined,
    userContent: users.length > 0 ? users.join('\n') : undefined,
    userTurns: users.length,
  };
}

function credentialOf(headers: IncomingMessage['headers']): { header: string; scheme?: string; key: string } | undefined {
  const authorization = headers['authorization'];
  if (typeof authorization === 'string' && authorization.length > 0) {
    const match = /^(\S+)\s+(.*)$/.exec(authorization);
    return match ? { header: 'authorization', scheme: match[1], key: match[2] } : { header: 'authorization', key: authorization };
  }
  for (const name of ['x-api-key', 'api-key']) {
    const value = headers[name];
    if (typeof value === 'string' && value.length > 0) return { header: name, key: value };
  }
  return undefined;
}

function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

function openaiErrorType(status: number): { type: string; code: string | null } {
  if (status === 401) return { type: 'invalid_request_error', code: 'invalid_api_key' };
  if (status === 429) return { type: 'requests', code: 'rate_limit_exceeded' };
  if (status >= 500) return { type: 'server_error', code: null };
  return { type: 'invalid_request_error', code: null };
}

function errorBody(provider: FakeLlmProvider | undefined, status: number, message: string): unknown {
  switch (provider) {
    case 'anthropic':
      return { type: 'error', error: { type: anthropicErrorType(status), message } };
    case 'ollama':
      return { error: message };
    default:
      return { error: { message, ...openaiErrorType(status), param: null } };
  }
}

const CREATED_AT = '2026-01-01T00:00:00Z';
const CREATED = 1_767_225_600;

function anthropicUsage(usage: FakeLlmUsage): Record<string, unknown> {
  return {
    input_tokens: usage.inputTokens,
    output_tokens: usage.outputTokens,
    cache_creation_input_tokens: null,
    cache_read_input_tokens: null,
    server_tool_use: null,
    service_tier: 'standard',
  };
}

/** A complete (non-streamed) answer. `usage: null` leaves the usage fields out. */
function answerBody(provider: FakeLlmProvider, model: string, text: string, usage: FakeLlmUsage | null, index: number, extra: AnswerExtras = {}): unknown {
  const calls = extra.toolCalls ?? [];
  switch (provider) {
    case 'anthropic':
      return {
        id: `msg_fake_${index}`,
        type: 'message',
        role: 'assistant',
        model,
        content: [
          ...(extra.thinking ? [{ type: 'thinking', thinking: extra.thinking.thinking, signature: extra.thinking.signature }] : []),
          ...(text !== '' || calls.length === 0 ? [{ type: 'text', text, citations: null }] : []),
          ...calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.input })),
        ],
        stop_reason: calls.length > 0 ? 'tool_use' : 'end_turn',
        stop_sequence: null,
        ...(usage ? { usage: anthropicUsage(usage) } : {}),
      };
    case 'ollama':
      return {
        model,
        created_at: CREATED_AT,
        message: { role: 'assistant', content: text },
        done: true,
        done_reason: 'stop',
        total_duration: 1_000_000,
        load_duration: 1000,
        ...(usage ? { prompt_eval_count: usage.inputTokens, prompt_eval_duration: 1000, eval_count: usage.outputTokens, eval_duration: 1000 } : {}),
      };
    default:
      return {
        id: `chatcmpl-fake-${index}`,
        object: 'chat.completion',
        created: CREATED,
        model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: calls.length > 0 && text === '' ? null : text,
              refusal: null,
              annotations: [],
              ...(calls.length > 0 ? { tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.input) } })) } : {}),
            },
            logprobs: null,
            finish_reason: calls.length > 0 ? 'tool_calls' : 'stop',
          },
        ],
        ...(usage
          ? { usage: { prompt_tokens: usage.inputTokens, completion_tokens: usage.outputTokens, total_tokens: usage.inputTokens + usage.outputTokens } }
          : {}),
        system_fingerprint: null,
      };
  }
}

/** Tool calls and thinking of a scripted answer. */
interface AnswerExtras {
  toolCalls?: FakeLlmToolCall[];
  thinking?: { thinking: string; signature: string };
}

/** A tool call's JSON arguments in two pieces, as providers stream them. */
function argumentPieces(input: unknown): string[] {
  const json = JSON.stringify(input);
  const cut = Math.floor(json.length / 2);
  return cut > 0 ? [json.slice(0, cut), json.slice(cut)] : [json];
}

/** The default deltas of a streamed answer: the text cut after each word (whitespace stays with the word before it). */
export function fakeStreamChunks(text: string): string[] {
  const pieces = text.match(/\s*\S+\s*/g);
  return pieces && pieces.length > 0 ? pieces : [text];
}

interface StreamPlan {
  provider: FakeLlmProvider;
  model: string;
  index: number;
  chunks: string[];
  usage: FakeLlmUsage | null;
  /** OpenAI: `stream_options.include_usage`. */
  includeUsage: boolean;
  extras?: AnswerExtras;
}

/** The frames of a streamed answer, split into the head (before any text), one frame per text chunk, and the tail. */
function streamFrames(plan: StreamPlan): { head: string[]; chunks: string[]; tail: string[] } {
  const { provider, model, index, usage } = plan;
  switch (provider) {
    case 'anthropic': {
      const event = (data: Record<string, unknown>): string => `event: ${String(data['type'])}\ndata: ${JSON.stringify(data)}\n\n`;
      const startUsage = usage ? anthropicUsage({ inputTokens: usage.inputTokens, outputTokens: 1 }) : undefined;
      const calls = plan.extras?.toolCalls ?? [];
      const thinking = plan.extras?.thinking;
      if (calls.length > 0 || thinking) {
        // Thinking first, then the text (left out when empty and tools are called), then one block per tool call.
        const withText = plan.chunks.join('') !== '' || calls.length === 0;
        const textIndex = thinking ? 1 : 0;
        const firstTool = textIndex + (withText ? 1 : 0);
        const head = [
          event({
            type: 'message_start',
            message: { id: `msg_fake_${index}`, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, ...(startUsage ? { usage: startUsage } : {}) },
          }),
          ...(thinking
            ? [
                event({ type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }),
                event({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: thinking.thinking } }),
                event({ type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: thinking.signature } }),
                event({ type: 'content_block_stop', index: 0 }),
              ]
            : []),
          ...(withText ? [event({ type: 'content_block_start', index: textIndex, content_block: { type: 'text', text: '', citations: null } })] : []),
          event({ type: 'ping' }),
        ];
        return {
          head,
          chunks: withText ? plan.chunks.map((text) => event({ type: 'content_block_delta', index: textIndex, delta: { type: 'text_delta', text } })) : [],
          tail: [
            ...(withText ? [event({ type: 'content_block_stop', index: textIndex })] : []),
            ...calls.flatMap((c, k) => [
              event({ type: 'content_block_start', index: firstTool + k, content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} } }),
              ...argumentPieces(c.input).map((partial_json) => event({ type: 'content_block_delta', index: firstTool + k, delta: { type: 'input_json_delta', partial_json } })),
              event({ type: 'content_block_stop', index: firstTool + k }),
            ]),
            event({
              type: 'message_delta',
              delta: { stop_reason: calls.length > 0 ? 'tool_use' : 'end_turn', stop_sequence: null },
              usage: usage ? { output_tokens: usage.outputTokens, input_tokens: usage.inputTokens } : { output_tokens: 0 },
            }),
            event({ type: 'message_stop' }),
          ],
        };
      }
      return {
        head: [
          event({
            type: 'message_start',
            message: {
              id: `msg_fake_${index}`,
              type: 'message',
              role: 'assistant',
              model,
              content: [],
              stop_reason: null,
              stop_sequence: null,
              ...(startUsage ? { usage: startUsage } : {}),
            },
          }),
          event({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '', citations: null } }),
          event({ type: 'ping' }),
        ],
        chunks: plan.chunks.map((text) => event({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } })),
        tail: [
          event({ type: 'content_block_stop', index: 0 }),
          event({
            type: 'message_delta',
            delta: { stop_reason: 'end_turn', stop_sequence: null },
            usage: usage ? { output_tokens: usage.outputTokens, input_tokens: usage.inputTokens } : { output_tokens: 0 },
          }),
          event({ type: 'message_stop' }),
        ],
      };
    }
    case 'ollama': {
      const line = (data: Record<string, unknown>): string => `${JSON.stringify(data)}\n`;
      return {
        head: [],
        chunks: plan.chunks.map((content) => line({ model, created_at: CREATED_AT, message: { role: 'assistant', content }, done: false })),
        tail: [
          line({
            model,
            created_at: CREATED_AT,
            message: { role: 'assistant', content: '' },
            done: true,
            done_reason: 'stop',
            total_duration: 1_000_000,
            load_duration: 1000,
            ...(usage ? { prompt_eval_count: usage.inputTokens, prompt_eval_duration: 1000, eval_count: usage.outputTokens, eval_duration: 1000 } : {}),
          }),
        ],
      };
    }
    default: {
      const id = `chatcmpl-fake-${index}`;
      const withUsage = plan.includeUsage ? { usage: null } : {};
      const chunk = (choices: unknown[], extra: Record<string, unknown> = withUsage): string =>
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: CREATED, model, system_fingerprint: null, choices, ...extra })}\n\n`;
      const calls = plan.extras?.toolCalls ?? [];
      const tail = [
        ...calls.flatMap((c, k) => [
          chunk([{ index: 0, delta: { tool_calls: [{ index: k, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] }, logprobs: null, finish_reason: null }]),
          ...argumentPieces(c.input).map((piece) => chunk([{ index: 0, delta: { tool_calls: [{ index: k, function: { arguments: piece } }] }, logprobs: null, finish_reason: null }])),
        ]),
        chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: calls.length > 0 ? 'tool_calls' : 'stop' }]),
      ];
      if (plan.includeUsage) {
        const u = usage ?? { inputTokens: 0, outputTokens: 0 };
        tail.push(chunk([], { usage: { prompt_tokens: u.inputTokens, completion_tokens: u.outputTokens, total_tokens: u.inputTokens + u.outputTokens } }));
      }
      tail.push('data: [DONE]\n\n');
      return {
        head: [chunk([{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }])],
        chunks: plan.chunks.map((content) => chunk([{ index: 0, delta: { content }, logprobs: null, finish_reason: null }])),
        tail,
      };
    }
  }
}

/** Writes a streamed answer; returns the outcome to record. */
function sendStream(res: ServerResponse, plan: StreamPlan, interrupt: FakeLlmInterrupt | undefined): string {
  const frames = streamFrames(plan);
  res.writeHead(200, {
    'content-type': plan.provider === 'ollama' ? 'application/x-ndjson' : 'text/event-stream; charset=utf-8',
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

function missingFieldsBody(provider: FakeLlmProvider, model: string): unknown {
  switch (provider) {
    case 'anthropic':
      return { id: 'msg_fake_missing', type: 'message', role: 'assistant', model, content: [], stop_reason: 'end_turn' };
    case 'ollama':
      return { model, created_at: CREATED_AT, done: true };
    default:
      return { id: 'chatcmpl-fake-missing', object: 'chat.completion', created: CREATED, model, choices: [] };
  }
}

/** OpenAI and Anthropic stream on `stream: true`; Ollama streams unless `stream: false` (its default is to stream). */
function wantsStream(provider: FakeLlmProvider | undefined, body: unknown): boolean {
  const stream = body && typeof body === 'object' ? (body as { stream?: unknown }).stream : undefined;
  if (provider === 'ollama') return stream !== false;
  return provider !== undefined && stream === true;
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

/** The text of tool results in a request body, by call id (the last one wins): Anthropic `tool_result` blocks, OpenAI `tool` messages. */
export function fakeLlmToolResults(body: unknown): Map<string, string> {
  const out = new Map<string, string>();
  const messages = body && typeof body === 'object' && Array.isArray((body as { messages?: unknown }).messages) ? ((body as { messages: unknown[] }).messages as Array<Record<string, unknown>>) : [];
  for (const m of messages) {
    if (!m || typeof m !== 'object') continue;
    if (m.role === 'tool' && typeof m.tool_call_id === 'string') out.set(m.tool_call_id, textOf(m.content));
    if (Array.isArray(m.content)) {
      for (const block of m.content as Array<Record<string, unknown>>) {
        if (block && block.type === 'tool_result' && typeof block.tool_use_id === 'string') out.set(block.tool_use_id, textOf(block.content));
      }
    }
  }
  return out;
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
      stream: wantsStream(COMPLETION_PATHS[path], body),
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
        sendJson(res, 200, missingFieldsBody(completion, model));
      } else {
        sendJson(res, 200, answerBody(completion, model, '', { inputTokens: estimateTokens(request.userContent), outputTokens: 0 }, request.index));
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
      const plan: StreamPlan = { provider: completion, model, index: request.index, chunks: answer?.chunks ?? (text === '' && (answer?.toolCalls?.length ?? 0) > 0 ? [] : fakeStreamChunks(text)), usage, includeUsage, extras };
      request.outcome = 'stream';
      record(request);
      request.outcome = sendStream(res, plan, answer?.interrupt);
      return;
    }
    record(request);
    sendJson(res, 200, answerBody(completion, model, text, usage, request.index, { toolCalls: answer?.toolCalls, thinking: answer?.thinking }));
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
