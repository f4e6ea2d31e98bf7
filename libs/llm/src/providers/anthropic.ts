import Anthropic from '@anthropic-ai/sdk';
import type { MessageCreateParamsNonStreaming } from '@anthropic-ai/sdk/resources/messages';
import { MalformedAnswerError, SummarizerConfigError } from './errors';
import {
  type AttemptContext,
  type ProviderAnswer,
  RemoteSummarizer,
  type RemoteSummarizerOptions,
  reportedTokens,
  type SummaryPrompt,
} from './remote-summarizer';

export const ANTHROPIC_DEFAULT_MODEL = 'claude-haiku-4-5';
export const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com';

export interface AnthropicSummarizerOptions extends RemoteSummarizerOptions {
  apiKey: string;
  /** Default `https://api.anthropic.com` (the SDK's `ANTHROPIC_BASE_URL` variable is not read). */
  baseUrl?: string;
  headers?: Record<string, string>;
  /**
   * How the key is sent: `bearer` (`Authorization: Bearer`, SDK 1.x's default) or `x-api-key`
   * (for Anthropic-compatible proxies that still read only that header). Default `bearer`.
   */
  apiKeyHeader?: 'bearer' | 'x-api-key';
}

/**
 * The SDK appends `/v1/messages` to its base URL; a base URL written with `/v1` or the full
 * endpoint (as for OpenAI-compatible servers) would double it, so both are cut off.
 */
export function normalizeAnthropicBaseUrl(raw: string): string {
  return raw
    .trim()
    .replace(/\/+$/, '')
    .replace(/\/v1(?:\/messages)?$/, '');
}

/** Summarizes through the Messages API with the official `@anthropic-ai/sdk` (its own retries off). */
export class AnthropicSummarizer extends RemoteSummarizer {
  readonly provider = 'anthropic' as const;
  readonly baseUrl: string;
  readonly #client: Anthropic;
  readonly #apiKey: string;

  constructor(options: AnthropicSummarizerOptions) {
    super('anthropic', options.model ?? ANTHROPIC_DEFAULT_MODEL, options);
    if (!options.apiKey) throw new SummarizerConfigError('anthropic: an API key is required (ANTHROPIC_API_KEY)', 'ANTHROPIC_API_KEY');
    this.#apiKey = options.apiKey;
    this.baseUrl = normalizeAnthropicBaseUrl(options.baseUrl ?? ANTHROPIC_DEFAULT_BASE_URL);
    this.#client = new Anthropic({
      apiKey: options.apiKey,
      baseURL: this.baseUrl,
      webhookKey: null,
      maxRetries: 0,
      timeout: this.timeoutMs + 1_000,
      logLevel: 'off',
      fetch: options.fetch,
      defaultHeaders: options.apiKeyHeader === 'x-api-key' ? { ...options.headers, 'x-api-key': options.apiKey, Authorization: null } : options.headers,
    });
  }

  protected secrets(): Array<string | undefined> {
    return [this.#apiKey];
  }

  protected async send(prompt: SummaryPrompt, context: AttemptContext): Promise<ProviderAnswer> {
    const body: MessageCreateParamsNonStreaming = {
      model: this.model,
      max_tokens: prompt.maxTokens,
      system: prompt.system,
      messages: [{ role: 'user', content: prompt.user }],
      // No `temperature`: API version 2026-10-21 (sent by SDK 1.x) rejects every sampling
      // parameter with a 400, even at its default.
    };
    const message: unknown = await this.#client.messages.create(body, {
      signal: context.signal,
      timeout: context.timeoutMs + 1_000,
      maxRetries: 0,
    });
    if (!message || typeof message !== 'object') throw new MalformedAnswerError('not a JSON object');
    const { content, usage } = message as { content?: unknown; usage?: { input_tokens?: unknown; output_tokens?: unknown } };
    if (!Array.isArray(content)) throw new MalformedAnswerError('no content');
    const text = content
      .filter((block: { type?: unknown; text?: unknown }) => block?.type === 'text' && typeof block.text === 'string')
      .map((block: { text: string }) => block.text)
      .join('');
    if (text.trim().length === 0) throw new MalformedAnswerError('no text block in content');
    return { text, inputTokens: reportedTokens(usage?.input_tokens), outputTokens: reportedTokens(usage?.output_tokens) };
  }
}
