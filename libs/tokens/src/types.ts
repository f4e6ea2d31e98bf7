/** `exact`: the model's own tokenizer is available (OpenAI via js-tiktoken); `approx`: a calibrated estimate. */
export type Accuracy = 'exact' | 'approx';

/** The tiktoken encodings this library loads. */
export type Encoding = 'o200k_base' | 'cl100k_base';

/** List prices in USD per million tokens. */
export interface ModelPrices {
  inputPerMTok: number;
  outputPerMTok: number;
}

export type ModelProvider = 'openai' | 'anthropic' | 'gemini' | 'ollama' | 'unknown';

export type ModelSizeTier = 'small' | 'medium' | 'large' | 'frontier';

export interface ModelSpec {
  /** Canonical catalog id. */
  id: string;
  provider: ModelProvider;
  /** e.g. 'gpt-4o', 'claude', 'gemini', 'llama', 'qwen', 'mistral'. */
  family: string;
  contextWindow: number;
  defaultOutputReserve: number;
  /** `exact` only where js-tiktoken has the model's own tokenizer (OpenAI). */
  accuracy: Accuracy;
  /** The model's own encoding when exact; the base of the estimate when approx. */
  encoding: Encoding;
  /** 1 for exact; calibrated ratio (model tokens / base-encoding tokens) for approx. */
  multiplier: number;
  /** Fraction added on top of approx estimates (e.g. 0.1); 0 for exact. */
  margin: number;
  /** Per-message framing tokens, in base-encoding tokens. */
  messageOverhead: number;
  prices?: ModelPrices;
  /** Parameter count in billions, where known (open models). */
  parameterCountB?: number;
  sizeTier: ModelSizeTier;
}

export interface ResolvedModel {
  spec: ModelSpec;
  /** false when the id matched nothing and the default spec was used. */
  known: boolean;
  /** A human-readable caveat to show the client (unknown model, Ollama num_ctx, inferred size). */
  warning?: string;
}
