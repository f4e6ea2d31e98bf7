import { normalizeAnthropicBaseUrl, ANTHROPIC_DEFAULT_BASE_URL } from './anthropic';
import type { SummarizerConfig } from './config';
import { normalizeOllamaHost } from './ollama';
import { OPENAI_DEFAULT_BASE_URL, parseOpenAIBaseUrl } from './openai';

/**
 * What a cheap look at the summarizer's provider says (issue #15, compactions held by an LLM outage):
 * - `up`: the list-models endpoint answered 2xx (or the summarizer is the in-process `local` one);
 * - `down`: no answer (connection refused or reset, DNS, timeout) or a 5xx / 429;
 * - `unknown`: it answered something else (401/403/404…: some OpenAI-compatible servers have no
 *   `/models`, a key may list nothing): the probe cannot tell, the caller falls back to time.
 */
export type SummarizerHealth = 'up' | 'down' | 'unknown';

export interface SummarizerProbeOptions {
  /** Gives up after this long (default 5 s): a probe that hangs is `down`. */
  timeoutMs?: number;
  fetch?: typeof globalThis.fetch;
}

export const SUMMARIZER_PROBE_TIMEOUT_MS = 5_000;

/** The request a probe sends: a GET of the provider's list-models endpoint, with its credentials. */
export function summarizerProbeRequest(config: SummarizerConfig): { url: string; headers: Record<string, string> } | undefined {
  switch (config.COMPACTOR_SUMMARIZER) {
    case 'openai': {
      const endpoint = parseOpenAIBaseUrl(config.COMPACTOR_SUMMARIZER_BASE_URL ?? OPENAI_DEFAULT_BASE_URL);
      const url = new URL(`${endpoint.baseURL}/models`);
      for (const [k, v] of Object.entries(endpoint.query)) url.searchParams.set(k, v);
      return { url: url.toString(), headers: config.OPENAI_API_KEY ? { authorization: `Bearer ${config.OPENAI_API_KEY}` } : {} };
    }
    case 'anthropic':
      return {
        url: `${normalizeAnthropicBaseUrl(config.COMPACTOR_SUMMARIZER_BASE_URL ?? ANTHROPIC_DEFAULT_BASE_URL)}/v1/models`,
        headers: { 'x-api-key': config.ANTHROPIC_API_KEY ?? '', 'anthropic-version': '2023-06-01' },
      };
    case 'ollama': {
      const host = normalizeOllamaHost(config.OLLAMA_HOST);
      return { url: `${host.includes('://') ? host : `http://${host}`}/api/tags`, headers: {} };
    }
    default:
      return undefined;
  }
}

/** Probes the configured summarizer once. Never throws; never logs or returns the key. */
export async function probeSummarizer(config: SummarizerConfig, options: SummarizerProbeOptions = {}): Promise<SummarizerHealth> {
  let request: ReturnType<typeof summarizerProbeRequest>;
  try {
    request = summarizerProbeRequest(config);
  } catch {
    return 'unknown';
  }
  if (!request) return 'up';
  const doFetch = options.fetch ?? globalThis.fetch;
  try {
    const res = await doFetch(request.url, {
      method: 'GET',
      headers: { accept: 'application/json', ...request.headers },
      signal: AbortSignal.timeout(options.timeoutMs ?? SUMMARIZER_PROBE_TIMEOUT_MS),
    });
    await res.body?.cancel().catch(() => undefined);
    if (res.ok) return 'up';
    if (res.status >= 500 || res.status === 429) return 'down';
    return 'unknown';
  } catch {
    return 'down';
  }
}
