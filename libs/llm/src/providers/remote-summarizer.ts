/**
 * The shared part of the remote summarizers (openai, anthropic, ollama).
 *
 * Retry policy (seed 003: 3 attempts with backoff):
 * - 3 attempts in total; the SDKs' own retries are off (`maxRetries: 0`) so they don't multiply.
 * - Retried: 429, 408, 5xx (Retry-After / retry-after-ms honoured, capped at 30 s), per-attempt
 *   timeouts and connection errors; otherwise full-jitter exponential backoff (500 ms × 2^n, ≤ 8 s).
 * - Not retried: other 4xx (401/403 → `auth`, 400/404/… → `bad-request`) and the caller's abort.
 * - Malformed 200 answers (invalid JSON, wrong shape, no choices, empty text) → `malformed`,
 *   retried once only (see MALFORMED_RETRIES).
 * - Error messages carry statuses and short upstream identifiers, never upstream text, and are
 *   scrubbed of the summarizer's secrets.
 */
import {
  LlmError,
  type LlmErrorKind,
  renderTranscript,
  type SummarizeRequest,
  type SummarizeResult,
  type Summarizer,
} from '@compactor/compaction';
import { combineCounts, countTextSync, type ModelPrices, type ModelSpec, resolveModel } from '@compactor/tokens';
import {
  type AttemptFailure,
  errorClassName,
  failureForStatus,
  isConnectionError,
  isJsonSyntaxError,
  isTimeoutError,
  MalformedAnswerError,
  networkCode,
  redactSecrets,
  statusOf,
  upstreamCode,
} from './errors';
import { backoffDelayMs, DEFAULT_RETRY, defaultSleep, parseRetryAfterMs, type RetryOptions, type Sleep } from './retry';

export type RemoteProvider = 'openai' | 'anthropic' | 'ollama';

/** What a retry hook sees (no request content, no secrets). */
export interface RetryEvent {
  provider: RemoteProvider;
  model: string;
  /** The attempt that failed (1-based). */
  attempt: number;
  kind: LlmErrorKind;
  status?: number;
  /** The wait before the next attempt. */
  delayMs: number;
}

/** Options every remote summarizer takes. */
export interface RemoteSummarizerOptions extends RetryOptions {
  model?: string;
  /** Per attempt, covering the whole answer (default 60 000 ms). */
  timeoutMs?: number;
  /** Injectable for tests: the wait between attempts (default: a timer that an abort ends early). */
  sleep?: Sleep;
  /** Injectable for tests: the jitter source in [0, 1) (default `Math.random`). */
  random?: () => number;
  /** Overrides the catalog's context window (`resolveModel(model).spec.contextWindow`). */
  contextWindow?: number;
  /** Caps `max_tokens`. Default: the catalog's output reserve for the provider's own hosted models, none otherwise. */
  maxOutputTokens?: number;
  /** Prices for the cost; `null` forces 0 (a free or local endpoint). Default: the catalog's prices for known models. */
  prices?: ModelPrices | null;
  /** A fetch implementation for the SDK (proxies, tests). Default: the global fetch. */
  fetch?: typeof globalThis.fetch;
  /** Called before each retry (for logs and metrics). */
  onRetry?: (event: RetryEvent) => void;
}

/** The prompt as every provider sends it: a system prompt and one user turn. */
export interface SummaryPrompt {
  system: string;
  user: string;
  maxTokens: number;
}

/** What a provider adapter returns from one successful call. */
export interface ProviderAnswer {
  text: string;
  /** The upstream's own count; undefined when its answer has none (then estimated from the catalog). */
  inputTokens?: number;
  outputTokens?: number;
}

/** One attempt's context: the signal that ends it (timeout or caller's abort) and the response headers seen, when the adapter captures them. */
export interface AttemptContext {
  signal: AbortSignal;
  timeoutMs: number;
  responseHeaders?: Headers;
}

export const DEFAULT_TIMEOUT_MS = 60_000;
/** `max_tokens` ≈ targetTokens × 1.5, at least 256. */
export const MIN_OUTPUT_TOKENS = 256;
export const OUTPUT_TOKENS_FACTOR = 1.5;
/**
 * Malformed answers (invalid JSON, no choices, empty text) are retried once: a truncated body
 * from a proxy or a transient empty completion deserves a second try, but a model that keeps
 * answering nothing at temperature 0 is not worth a third.
 */
export const MALFORMED_RETRIES = 1;

/**
 * The user turn: an optional `Session goal: …` line, the span's facts-ledger entries the summary
 * must keep verbatim (SPEC.md "Facts ledger"; whatever it still lacks is appended after it), then
 * the transcript.
 */
export function buildUserContent(request: Pick<SummarizeRequest, 'messages' | 'goal' | 'facts'>): string {
  const transcript = renderTranscript(request.messages);
  const goal = request.goal?.trim();
  const facts = request.facts?.length
    ? `Facts to keep verbatim (identifiers, paths, values: use their exact spelling; for settings only the latest value counts):\n${request.facts.map((f) => `- ${f}`).join('\n')}\n\n`
    : '';
  return `${goal ? `Session goal: ${goal}\n\n` : ''}${facts}${transcript}`;
}

/** `max(256, round(targetTokens × 1.5))`, capped when a cap is given. */
export function maxOutputTokensFor(targetTokens: number, cap?: number): number {
  const wanted = Number.isFinite(targetTokens) && targetTokens > 0 ? Math.max(MIN_OUTPUT_TOKENS, Math.round(targetTokens * OUTPUT_TOKENS_FACTOR)) : MIN_OUTPUT_TOKENS;
  return cap !== undefined && cap > 0 ? Math.min(wanted, Math.floor(cap)) : wanted;
}

/** A usage field as the upstream sent it: a non-negative number, else undefined (absent, null, garbage). */
export function reportedTokens(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : undefined;
}

/**
 * Tokens of the texts as the model would count them, from the catalog's encoding, multiplier
 * and per-message overhead: used only when the upstream reports no usage (some
 * OpenAI-compatible servers; Ollama on a prompt-cache hit).
 */
export function estimateTokens(texts: string[], spec: ModelSpec): number {
  let total = 0;
  for (const text of texts) total += combineCounts({ textTokens: [countTextSync(text, spec.encoding)], images: [], opaqueJson: [] }, spec);
  return total;
}

/**
 * The shared part of the remote summarizers: prompt, per-attempt timeout, retries with full
 * jitter and `Retry-After`, error classification, usage and cost. Adapters implement `send`.
 */
export abstract class RemoteSummarizer implements Summarizer {
  abstract readonly provider: RemoteProvider;
  readonly model: string;
  readonly contextWindow: number;
  readonly deterministic = false;
  protected readonly timeoutMs: number;
  protected readonly prices: ModelPrices | undefined;
  protected readonly outputCap: number | undefined;
  /** The catalog entry for the model (the default spec for unknown ids): usage estimates. */
  protected readonly spec: ModelSpec;
  readonly #retry: Required<RetryOptions>;
  readonly #sleep: Sleep;
  readonly #random: () => number;
  readonly #onRetry: ((event: RetryEvent) => void) | undefined;

  protected constructor(provider: RemoteProvider, model: string, options: RemoteSummarizerOptions, defaults: { contextWindow?: number } = {}) {
    this.model = model;
    const resolved = resolveModel(model);
    this.spec = resolved.spec;
    const own = resolved.known && resolved.spec.provider === provider;
    this.contextWindow = options.contextWindow ?? defaults.contextWindow ?? resolved.spec.contextWindow;
    this.timeoutMs = options.timeoutMs && options.timeoutMs > 0 ? options.timeoutMs : DEFAULT_TIMEOUT_MS;
    this.prices = options.prices === null ? undefined : (options.prices ?? (provider !== 'ollama' && resolved.known ? resolved.spec.prices : undefined));
    this.outputCap = options.maxOutputTokens ?? (own ? resolved.spec.defaultOutputReserve : undefined);
    this.#retry = {
      maxAttempts: Math.max(1, Math.floor(options.maxAttempts ?? DEFAULT_RETRY.maxAttempts)),
      baseDelayMs: options.baseDelayMs ?? DEFAULT_RETRY.baseDelayMs,
      maxDelayMs: options.maxDelayMs ?? DEFAULT_RETRY.maxDelayMs,
      maxRetryAfterMs: options.maxRetryAfterMs ?? DEFAULT_RETRY.maxRetryAfterMs,
    };
    this.#sleep = options.sleep ?? defaultSleep;
    this.#random = options.random ?? Math.random;
    this.#onRetry = options.onRetry;
  }

  /** One call to the upstream. Throws the SDK's error, or `MalformedAnswerError`. */
  protected abstract send(prompt: SummaryPrompt, context: AttemptContext): Promise<ProviderAnswer>;

  /** Secrets to scrub from any message this summarizer produces. */
  protected abstract secrets(): Array<string | undefined>;

  /** Caps `max_tokens` further (Ollama: `num_ctx`). */
  protected maxOutputTokens(targetTokens: number): number {
    return maxOutputTokensFor(targetTokens, this.outputCap);
  }

  async summarize(request: SummarizeRequest, signal?: AbortSignal): Promise<SummarizeResult> {
    const user = buildUserContent(request);
    if (user.trim().length === 0) throw this.error({ kind: 'bad-request', retryable: false, reason: 'nothing to summarize (empty transcript)' }, 0);
    const prompt: SummaryPrompt = { system: request.instructions, user, maxTokens: this.maxOutputTokens(request.targetTokens) };
    let malformed = 0;

    for (let attempt = 1; ; attempt++) {
      if (signal?.aborted) throw this.error({ kind: 'aborted', retryable: false, reason: 'aborted by the caller' }, attempt - 1);
      const outcome = await this.attempt(prompt, signal);
      if ('answer' in outcome) {
        const { text } = outcome.answer;
        const inputTokens = outcome.answer.inputTokens ?? estimateTokens([prompt.system, prompt.user], this.spec);
        const outputTokens = outcome.answer.outputTokens ?? estimateTokens([text], this.spec);
        const costUsd = this.prices ? (inputTokens * this.prices.inputPerMTok + outputTokens * this.prices.outputPerMTok) / 1_000_000 : 0;
        return { text, usage: { inputTokens, outputTokens, costUsd }, provider: this.provider, model: this.model, attempts: attempt };
      }
      const failure = outcome.failure;
      if (failure.kind === 'malformed' && ++malformed > MALFORMED_RETRIES) failure.retryable = false;
      if (!failure.retryable || attempt >= this.#retry.maxAttempts) throw this.error(failure, attempt);

      const delayMs =
        failure.retryAfterMs !== undefined ? Math.min(failure.retryAfterMs, this.#retry.maxRetryAfterMs) : backoffDelayMs(attempt, this.#random, this.#retry);
      this.#onRetry?.({ provider: this.provider, model: this.model, attempt, kind: failure.kind, status: failure.status, delayMs });
      try {
        await this.#sleep(delayMs, signal);
      } catch (error) {
        if (signal?.aborted) throw this.error({ kind: 'aborted', retryable: false, reason: 'aborted by the caller' }, attempt);
        throw error;
      }
    }
  }

  private async attempt(prompt: SummaryPrompt, signal: AbortSignal | undefined): Promise<{ answer: ProviderAnswer } | { failure: AttemptFailure }> {
    const controller = new AbortController();
    let timedOut = false;
    const onAbort = (): void => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error('timeout'));
    }, this.timeoutMs);
    const context: AttemptContext = { signal: controller.signal, timeoutMs: this.timeoutMs };
    try {
      const answer = await this.send(prompt, context);
      if (typeof answer.text !== 'string' || answer.text.trim().length === 0) throw new MalformedAnswerError('empty text');
      return { answer: { text: answer.text, inputTokens: reportedTokens(answer.inputTokens), outputTokens: reportedTokens(answer.outputTokens) } };
    } catch (error) {
      if (signal?.aborted) return { failure: { kind: 'aborted', retryable: false, reason: 'aborted by the caller' } };
      if (timedOut) return { failure: { kind: 'timeout', retryable: true, reason: `timed out after ${this.timeoutMs} ms` } };
      return { failure: this.classify(error, context) };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Maps an adapter's error to a failure kind. Never copies upstream text, only statuses and identifiers. */
  protected classify(error: unknown, context: AttemptContext): AttemptFailure {
    if (error instanceof MalformedAnswerError) return { kind: 'malformed', retryable: true, reason: `malformed answer (${error.detail})` };
    if (isJsonSyntaxError(error)) return { kind: 'malformed', retryable: true, reason: 'malformed answer (invalid JSON body)' };
    const status = statusOf(error);
    if (status !== undefined) {
      const headers = (error as { headers?: unknown }).headers ?? context.responseHeaders;
      return failureForStatus(status, upstreamCode(error), parseRetryAfterMs(headers));
    }
    if (isTimeoutError(error)) return { kind: 'timeout', retryable: true, reason: `timed out after ${this.timeoutMs} ms` };
    if (isConnectionError(error)) {
      const code = networkCode(error);
      return { kind: 'network', retryable: true, reason: `network error${code ? ` (${code})` : ''}` };
    }
    const name = errorClassName(error);
    return { kind: 'bad-request', retryable: false, reason: `client error (${/^[A-Za-z]\w{0,47}$/.test(name) ? name : 'unknown'})` };
  }

  private error(failure: AttemptFailure, attempts: number): LlmError {
    const tail = attempts > 1 ? ` after ${attempts} attempts` : '';
    const message = redactSecrets(`${this.provider}: ${failure.reason}${tail}`, this.secrets());
    return new LlmError(failure.kind, message, attempts, failure.status);
  }
}
