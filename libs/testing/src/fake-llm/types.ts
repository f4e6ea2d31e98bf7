/** The fake LLM upstream's public types (see server.ts). */

/** The wire protocols the fake speaks: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages, Ollama native. */
export type FakeLlmProvider = 'openai' | 'responses' | 'anthropic' | 'ollama';

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
      /** Tool calls after the text (several: parallel calls): Anthropic `tool_use` blocks, OpenAI `tool_calls`, Responses `function_call` items; streamed as the providers stream them. */
      toolCalls?: FakeLlmToolCall[];
      /** An Anthropic thinking block before the text; Responses: a `reasoning` item whose `encrypted_content` is the signature (Chat Completions has none). */
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
  /**
   * Responses only: a `custom_tool_call` item (a freeform tool, such as Codex's `apply_patch` on models whose catalog entry
   * says `apply_patch_tool_type: "freeform"`), whose `input` is the string as sent, instead of a `function_call`.
   */
  custom?: true;
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
  /** Whether the answer is (or would be) streamed: `stream: true` (OpenAI, Responses, Anthropic), `stream` not `false` (Ollama). */
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
  /** Completion requests only (POSTs to the four completion endpoints). */
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
  /**
   * An outage: stops listening (connections are refused) and cuts the open ones; `start()` listens
   * again on the same port. The recorded requests and the script are kept.
   */
  stop(): Promise<void>;
  start(): Promise<void>;
}

