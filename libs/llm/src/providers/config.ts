import type { Summarizer } from '@compactor/compaction';
import { z } from 'zod';
import { LOCAL_SUMMARIZER_MODEL, LocalSummarizer } from '../local';
import { AnthropicSummarizer, ANTHROPIC_DEFAULT_MODEL } from './anthropic';
import { SummarizerConfigError } from './errors';
import { OLLAMA_DEFAULT_HOST, OLLAMA_DEFAULT_MODEL, OLLAMA_DEFAULT_NUM_CTX, OllamaSummarizer } from './ollama';
import { OPENAI_DEFAULT_MODEL, OpenAISummarizer } from './openai';
import { DEFAULT_TIMEOUT_MS, type RemoteSummarizerOptions } from './remote-summarizer';

export const SUMMARIZER_PROVIDERS = ['local', 'openai', 'anthropic', 'ollama'] as const;
export type SummarizerProvider = (typeof SUMMARIZER_PROVIDERS)[number];

export const DEFAULT_SUMMARIZER_MODELS: Readonly<Record<Exclude<SummarizerProvider, 'local'>, string>> = Object.freeze({
  openai: OPENAI_DEFAULT_MODEL,
  anthropic: ANTHROPIC_DEFAULT_MODEL,
  ollama: OLLAMA_DEFAULT_MODEL,
});

/** Unset and blank (`KEY=` in a .env file) are the same. */
const blankToUndefined = (value: unknown): unknown => (typeof value === 'string' && value.trim() === '' ? undefined : value);
const optionalString = z.preprocess(blankToUndefined, z.string().trim().optional());
const positiveInt = (fallback: number) => z.preprocess(blankToUndefined, z.coerce.number().int().positive().default(fallback));

/**
 * The summarizer's settings, over environment-like fields (pass `process.env` or a parsed
 * .env). A plain `z.object` so it can be merged into a larger env schema; the cross-field
 * rules (a key for the chosen provider) are in `summarizerConfigIssues`.
 */
export const summarizerConfigSchema = z.object({
  /** `local` (default, offline, deterministic) | `openai` | `anthropic` | `ollama`. */
  COMPACTOR_SUMMARIZER: z.preprocess(
    (value) => (typeof value === 'string' ? (value.trim() === '' ? undefined : value.trim().toLowerCase()) : value),
    z.enum(SUMMARIZER_PROVIDERS).default('local'),
  ),
  /** Model id; defaults per provider: openai `gpt-4o-mini`, anthropic `claude-haiku-4-5`, ollama `llama3.1:8b`. */
  COMPACTOR_SUMMARIZER_MODEL: optionalString,
  /** OpenAI-compatible base URL (vLLM, LM Studio, OpenRouter, Ollama's /v1) or Anthropic base URL. */
  COMPACTOR_SUMMARIZER_BASE_URL: z.preprocess(blankToUndefined, z.url({ protocol: /^https?$/ }).optional()),
  OPENAI_API_KEY: optionalString,
  ANTHROPIC_API_KEY: optionalString,
  /** Ollama's native API (`ollama` provider). */
  OLLAMA_HOST: z.preprocess(blankToUndefined, z.string().trim().default(OLLAMA_DEFAULT_HOST)),
  /** Ollama `num_ctx`. */
  COMPACTOR_SUMMARIZER_NUM_CTX: positiveInt(OLLAMA_DEFAULT_NUM_CTX),
  /** Per attempt. */
  COMPACTOR_SUMMARIZER_TIMEOUT_MS: positiveInt(DEFAULT_TIMEOUT_MS),
});

export type SummarizerConfigInput = z.input<typeof summarizerConfigSchema>;
export type SummarizerConfig = z.output<typeof summarizerConfigSchema>;

export interface SummarizerConfigIssue {
  variable: keyof SummarizerConfig;
  message: string;
}

/** Cross-field rules: the chosen provider has what it needs. Messages name variables, never values. */
export function summarizerConfigIssues(config: SummarizerConfig): SummarizerConfigIssue[] {
  const issues: SummarizerConfigIssue[] = [];
  if (config.COMPACTOR_SUMMARIZER === 'openai' && !config.OPENAI_API_KEY && !config.COMPACTOR_SUMMARIZER_BASE_URL) {
    issues.push({
      variable: 'OPENAI_API_KEY',
      message: 'OPENAI_API_KEY is required when COMPACTOR_SUMMARIZER=openai (unless COMPACTOR_SUMMARIZER_BASE_URL points to an OpenAI-compatible server that needs no key)',
    });
  }
  if (config.COMPACTOR_SUMMARIZER === 'anthropic' && !config.ANTHROPIC_API_KEY) {
    issues.push({ variable: 'ANTHROPIC_API_KEY', message: 'ANTHROPIC_API_KEY is required when COMPACTOR_SUMMARIZER=anthropic' });
  }
  return issues;
}

/** Parses and checks env-like input; throws `SummarizerConfigError` naming the variables at fault. */
export function parseSummarizerConfig(input: SummarizerConfigInput | Record<string, unknown>): SummarizerConfig {
  const parsed = summarizerConfigSchema.safeParse(input);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const variable = String(first?.path[0] ?? 'COMPACTOR_SUMMARIZER');
    const all = parsed.error.issues.map((issue) => `${String(issue.path[0] ?? '?')}: ${issue.message}`).join('; ');
    throw new SummarizerConfigError(`Invalid summarizer configuration: ${all}`, variable);
  }
  const issues = summarizerConfigIssues(parsed.data);
  if (issues.length > 0) throw new SummarizerConfigError(issues.map((i) => i.message).join('; '), issues[0].variable);
  return parsed.data;
}

/** The model a config selects (the provider's default when unset; the local summarizer's own name, as its answers report it). */
export function summarizerModelOf(config: SummarizerConfig): string {
  return config.COMPACTOR_SUMMARIZER === 'local' ? LOCAL_SUMMARIZER_MODEL : (config.COMPACTOR_SUMMARIZER_MODEL ?? DEFAULT_SUMMARIZER_MODELS[config.COMPACTOR_SUMMARIZER]);
}

/** A secret-free description for status pages and logs. */
export function describeSummarizerConfig(config: SummarizerConfig): {
  provider: SummarizerProvider;
  model: string;
  endpoint?: string;
  keyConfigured: boolean;
  timeoutMs: number;
  numCtx?: number;
} {
  const provider = config.COMPACTOR_SUMMARIZER;
  const base = { provider, model: summarizerModelOf(config), timeoutMs: config.COMPACTOR_SUMMARIZER_TIMEOUT_MS };
  switch (provider) {
    case 'openai':
      return { ...base, endpoint: stripCredentials(config.COMPACTOR_SUMMARIZER_BASE_URL ?? 'https://api.openai.com/v1'), keyConfigured: !!config.OPENAI_API_KEY };
    case 'anthropic':
      return { ...base, endpoint: stripCredentials(config.COMPACTOR_SUMMARIZER_BASE_URL ?? 'https://api.anthropic.com'), keyConfigured: !!config.ANTHROPIC_API_KEY };
    case 'ollama':
      return { ...base, endpoint: stripCredentials(config.OLLAMA_HOST), keyConfigured: false, numCtx: config.COMPACTOR_SUMMARIZER_NUM_CTX };
    default:
      return { ...base, keyConfigured: false };
  }
}

function stripCredentials(url: string): string {
  try {
    const parsed = new URL(url.includes('://') ? url : `http://${url}`);
    parsed.username = '';
    parsed.password = '';
    parsed.search = '';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return '(invalid URL)';
  }
}

/** Test and runtime hooks passed to the remote summarizers (sleep, random, fetch, onRetry, retry timing…). */
export type SummarizerDeps = Omit<RemoteSummarizerOptions, 'model' | 'timeoutMs'>;

function createLocalSummarizer(): Summarizer {
  return new LocalSummarizer();
}

/**
 * The summarizer a configuration selects. Accepts raw env-like input (`process.env`) or an
 * already parsed config; throws `SummarizerConfigError` naming the variable when one is missing.
 */
export function createSummarizer(input: SummarizerConfigInput | Record<string, unknown> = {}, deps: SummarizerDeps = {}): Summarizer {
  const config = parseSummarizerConfig(input);
  const common = { ...deps, model: summarizerModelOf(config), timeoutMs: config.COMPACTOR_SUMMARIZER_TIMEOUT_MS };
  switch (config.COMPACTOR_SUMMARIZER) {
    case 'openai':
      return new OpenAISummarizer({ ...common, apiKey: config.OPENAI_API_KEY, baseUrl: config.COMPACTOR_SUMMARIZER_BASE_URL });
    case 'anthropic':
      return new AnthropicSummarizer({ ...common, apiKey: config.ANTHROPIC_API_KEY ?? '', baseUrl: config.COMPACTOR_SUMMARIZER_BASE_URL });
    case 'ollama':
      return new OllamaSummarizer({ ...common, host: config.OLLAMA_HOST, numCtx: config.COMPACTOR_SUMMARIZER_NUM_CTX });
    default:
      return createLocalSummarizer();
  }
}
