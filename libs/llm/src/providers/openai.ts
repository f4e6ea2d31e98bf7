import OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { MalformedAnswerError, SummarizerConfigError } from './errors';
import {
  type AttemptContext,
  type ProviderAnswer,
  RemoteSummarizer,
  type RemoteSummarizerOptions,
  reportedTokens,
  type SummaryPrompt,
} from './remote-summarizer';

export const OPENAI_DEFAULT_MODEL = 'gpt-4o-mini';
export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';

export interface OpenAISummarizerOptions extends RemoteSummarizerOptions {
  /** Required for api.openai.com; optional for an OpenAI-compatible server that needs none (no Authorization header is sent then). */
  apiKey?: string;
  /** Any OpenAI-compatible base URL (vLLM, LM Studio, OpenRouter, Ollama's `/v1`). Default `https://api.openai.com/v1`. */
  baseUrl?: string;
  organization?: string;
  project?: string;
  /** Extra headers (e.g. OpenRouter's `HTTP-Referer`). */
  headers?: Record<string, string>;
  /**
   * Reasoning models (o1/o3/o4, gpt-5) take `max_completion_tokens`, no `temperature` and
   * `reasoning_effort: low`. Default: detected from the model id.
   */
  reasoning?: boolean;
}

/** o-series and gpt-5 ids, with or without an `openai/` prefix (OpenRouter); not the `gpt-5…-chat` variants, which are chat models. */
export function isOpenAIReasoningModel(model: string): boolean {
  const id = model.trim();
  const match = /^(?:openai\/)?(?:o\d|gpt-5)/i.exec(id);
  if (!match) return false;
  if (match[0].toLowerCase().endsWith('gpt-5')) {
    // `(?![.\d]*-chat)` as a scan (the linear-time checker cannot decide lookaheads): after the version, not `-chat`.
    let i = match[0].length;
    while (i < id.length && (id[i] === '.' || (id[i] >= '0' && id[i] <= '9'))) i += 1;
    if (id.slice(i, i + 5).toLowerCase() === '-chat') return false;
  }
  return true;
}

/**
 * Reasoning tokens count against `max_completion_tokens`: without room for them a reasoning
 * model can spend the whole budget thinking and answer nothing. Added to the summary's own
 * budget (with `reasoning_effort: low`).
 */
export const REASONING_HEADROOM_TOKENS = 4_096;

export interface OpenAIEndpoint {
  /** What the SDK appends `/chat/completions` to: no trailing slash, no query. */
  baseURL: string;
  /** Query parameters of the given URL (e.g. `api-version`), sent on every request. */
  query: Record<string, string>;
}

/**
 * Reads an OpenAI-compatible base URL as users write it: `http://host:8000/v1`,
 * `https://openrouter.ai/api/v1/`, the full endpoint `…/v1/chat/completions`, or a URL with
 * a query (`?api-version=…`, which the SDK would otherwise glue in front of the path).
 * No `/v1` is added: servers differ in their prefix, and the URL says which one.
 */
export function parseOpenAIBaseUrl(raw: string): OpenAIEndpoint {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new SummarizerConfigError('openai: the base URL is not a valid URL (COMPACTOR_SUMMARIZER_BASE_URL)', 'COMPACTOR_SUMMARIZER_BASE_URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new SummarizerConfigError('openai: the base URL must be http or https (COMPACTOR_SUMMARIZER_BASE_URL)', 'COMPACTOR_SUMMARIZER_BASE_URL');
  }
  const path = url.pathname.replace(/\/+$/, '').replace(/\/chat\/completions$/, '').replace(/\/+$/, '');
  const query = Object.fromEntries(url.searchParams);
  return { baseURL: `${url.origin}${path}`, query };
}

/** Summarizes through the Chat Completions API with the official `openai` SDK (its own retries off). */
export class OpenAISummarizer extends RemoteSummarizer {
  readonly provider = 'openai' as const;
  /** The endpoint, for diagnostics (holds no secret unless the caller put one in the URL). */
  readonly baseUrl: string;
  readonly #client: OpenAI;
  readonly #apiKey: string | undefined;
  readonly #reasoning: boolean;

  constructor(options: OpenAISummarizerOptions = {}) {
    const model = options.model ?? OPENAI_DEFAULT_MODEL;
    super('openai', model, options);
    if (!options.apiKey && !options.baseUrl) {
      throw new SummarizerConfigError('openai: an API key is required (OPENAI_API_KEY) unless an OpenAI-compatible base URL is set', 'OPENAI_API_KEY');
    }
    const endpoint = parseOpenAIBaseUrl(options.baseUrl ?? OPENAI_DEFAULT_BASE_URL);
    this.baseUrl = endpoint.baseURL;
    this.#apiKey = options.apiKey || undefined;
    this.#reasoning = options.reasoning ?? isOpenAIReasoningModel(model);
    this.#client = new OpenAI({
      // A keyless compatible server: the SDK needs some key, and the header is removed below.
      apiKey: this.#apiKey ?? 'unused',
      baseURL: this.baseUrl,
      defaultQuery: Object.keys(endpoint.query).length > 0 ? endpoint.query : undefined,
      organization: options.organization ?? null,
      project: options.project ?? null,
      webhookSecret: null,
      maxRetries: 0,
      timeout: this.timeoutMs + 1_000,
      logLevel: 'off',
      fetch: options.fetch,
      defaultHeaders: { ...options.headers, ...(this.#apiKey ? {} : { Authorization: null }) },
    });
  }

  protected secrets(): Array<string | undefined> {
    return [this.#apiKey];
  }

  #reasoningBudget(maxTokens: number): number {
    const wanted = maxTokens + REASONING_HEADROOM_TOKENS;
    return this.outputCap !== undefined && this.outputCap > 0 ? Math.min(wanted, this.outputCap) : wanted;
  }

  protected async send(prompt: SummaryPrompt, context: AttemptContext): Promise<ProviderAnswer> {
    const body: ChatCompletionCreateParamsNonStreaming = {
      model: this.model,
      messages: [
        { role: 'system', content: prompt.system },
        { role: 'user', content: prompt.user },
      ],
      stream: false,
      ...(this.#reasoning
        ? { max_completion_tokens: this.#reasoningBudget(prompt.maxTokens), reasoning_effort: 'low' as const }
        : { max_tokens: prompt.maxTokens, temperature: 0 }),
    };
    const completion: unknown = await this.#client.chat.completions.create(body, {
      signal: context.signal,
      timeout: context.timeoutMs + 1_000,
      maxRetries: 0,
    });
    if (!completion || typeof completion !== 'object') throw new MalformedAnswerError('not a JSON object');
    const { choices, usage } = completion as { choices?: unknown; usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } };
    if (!Array.isArray(choices) || choices.length === 0) throw new MalformedAnswerError('no choices');
    const message = (choices[0] as { message?: { content?: unknown; refusal?: unknown } } | null)?.message;
    const content = message?.content;
    let text: string | undefined;
    if (typeof content === 'string') text = content;
    else if (Array.isArray(content)) text = content.map((p: { text?: unknown }) => (typeof p?.text === 'string' ? p.text : '')).join('');
    if (!text || text.trim().length === 0) throw new MalformedAnswerError(typeof message?.refusal === 'string' ? 'refusal' : 'no text in choices[0].message.content');
    return { text, inputTokens: reportedTokens(usage?.prompt_tokens), outputTokens: reportedTokens(usage?.completion_tokens) };
  }
}
