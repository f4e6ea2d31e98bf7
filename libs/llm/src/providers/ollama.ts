import { Ollama } from 'ollama';
import { HttpStatusError, MalformedAnswerError } from './errors';
import {
  type AttemptContext,
  maxOutputTokensFor,
  type ProviderAnswer,
  RemoteSummarizer,
  type RemoteSummarizerOptions,
  reportedTokens,
  type SummaryPrompt,
} from './remote-summarizer';

export const OLLAMA_DEFAULT_MODEL = 'llama3.1:8b';
export const OLLAMA_DEFAULT_HOST = 'http://127.0.0.1:11434';
export const OLLAMA_DEFAULT_NUM_CTX = 8192;

export interface OllamaSummarizerOptions extends RemoteSummarizerOptions {
  /** Default `http://127.0.0.1:11434`. */
  host?: string;
  /** The context Ollama allocates (`options.num_ctx`); Ollama silently truncates prompts beyond it. Default 8192. */
  numCtx?: number;
  headers?: Record<string, string>;
  /** `keep_alive` for the model (Ollama's default when unset). */
  keepAlive?: string | number;
}

/**
 * The native API lives under `<host>/api`; a host written with `/api`, `/api/chat` or the
 * OpenAI-compatible `/v1` suffix is cut back to the server's root.
 */
export function normalizeOllamaHost(raw: string): string {
  return raw
    .trim()
    .replace(/\/+$/, '')
    .replace(/\/(?:api(?:\/chat)?|v1)$/, '');
}

/**
 * Summarizes through Ollama's native `/api/chat` (official `ollama` package, `stream: false`)
 * with `options.num_ctx` set: the OpenAI-compatible `/v1` endpoint cannot set it, and
 * Ollama's small default window would cut the transcript. Costs are 0 (local models).
 */
export class OllamaSummarizer extends RemoteSummarizer {
  readonly provider = 'ollama' as const;
  readonly host: string;
  readonly numCtx: number;
  readonly #headers: Record<string, string> | undefined;
  readonly #fetch: typeof globalThis.fetch;
  readonly #keepAlive: string | number | undefined;

  constructor(options: OllamaSummarizerOptions = {}) {
    const numCtx = options.numCtx && options.numCtx > 0 ? Math.floor(options.numCtx) : OLLAMA_DEFAULT_NUM_CTX;
    super('ollama', options.model ?? OLLAMA_DEFAULT_MODEL, { ...options, prices: null }, { contextWindow: numCtx });
    this.numCtx = numCtx;
    this.host = normalizeOllamaHost(options.host ?? OLLAMA_DEFAULT_HOST);
    this.#headers = options.headers;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#keepAlive = options.keepAlive;
  }

  protected secrets(): Array<string | undefined> {
    return Object.entries(this.#headers ?? {})
      .filter(([name]) => /auth|key|token|secret|cookie/i.test(name))
      .map(([, value]) => value.replace(/^Bearer\s+/i, ''));
  }

  /** `num_predict` never exceeds `num_ctx`. */
  protected override maxOutputTokens(targetTokens: number): number {
    return Math.min(maxOutputTokensFor(targetTokens, this.outputCap), this.numCtx);
  }

  protected async send(prompt: SummaryPrompt, context: AttemptContext): Promise<ProviderAnswer> {
    const baseFetch = this.#fetch;
    // The package passes no signal on non-streamed calls: a per-attempt client whose fetch
    // carries the attempt's signal (timeout or abort). Error statuses are turned into an
    // HttpStatusError here, with the headers (Retry-After), before the package reads the body:
    // it would copy the upstream's text into its error and log to the console on non-JSON bodies.
    const client = new Ollama({
      host: this.host,
      headers: this.#headers,
      fetch: async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
        const response = await baseFetch(input, { ...init, signal: context.signal });
        context.responseHeaders = response.headers;
        if (!response.ok) {
          await response.body?.cancel().catch(() => undefined);
          throw new HttpStatusError(response.status, response.headers);
        }
        return response;
      },
    });
    const response: unknown = await client.chat({
      model: this.model,
      messages: [
        { role: 'system', content: prompt.system },
        { role: 'user', content: prompt.user },
      ],
      stream: false,
      ...(this.#keepAlive !== undefined ? { keep_alive: this.#keepAlive } : {}),
      options: { num_ctx: this.numCtx, num_predict: prompt.maxTokens, temperature: 0 },
    });
    if (!response || typeof response !== 'object') throw new MalformedAnswerError('not a JSON object');
    const { message, prompt_eval_count, eval_count } = response as { message?: { content?: unknown }; prompt_eval_count?: unknown; eval_count?: unknown };
    if (!message || typeof message.content !== 'string') throw new MalformedAnswerError('no message.content');
    if (message.content.trim().length === 0) throw new MalformedAnswerError('empty message.content');
    return { text: message.content, inputTokens: reportedTokens(prompt_eval_count), outputTokens: reportedTokens(eval_count) };
  }
}
