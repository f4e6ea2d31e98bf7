import { Encoding, ModelPrices, ModelSizeTier, ModelSpec, ResolvedModel } from './types';

/*
 * Where the numbers come from (compiled November 2025; check before billing on them):
 * - Prices: the providers' published list prices, USD per million tokens, standard tier,
 *   the lower tier where the price depends on prompt length (Gemini 1.5 ≤128k, 2.5/3 Pro ≤200k):
 *   openai.com/api/pricing, anthropic.com/pricing, ai.google.dev/gemini-api/docs/pricing.
 *   Local Ollama models cost 0.
 * - Windows: the providers' model pages; open models: the model cards (trained window) as
 *   listed in the Ollama library. Ollama itself only serves `num_ctx` tokens (its default is
 *   a few thousand), so for Ollama the real window is whatever num_ctx the server runs with.
 * - Multipliers: rough ratios of each model's tokenizer to the base tiktoken encoding on
 *   English prose, code and JSON (Claude's ~65k vocabulary needs ~1.2x o200k; Mistral's 32k
 *   SentencePiece vocabulary ~1.25x; Tekken, Qwen and Llama 3 vocabularies are close to
 *   o200k). They are starting points: the proxy recalibrates each session from the
 *   upstream's reported usage (see recalibratedMultiplier).
 */

/** OpenAI cookbook: every message costs 3 framing tokens plus its role (1 token). */
const OPENAI_MESSAGE_OVERHEAD = 4;
/** Anthropic and Gemini frame each turn similarly; an estimate in base tokens. */
const HOSTED_MESSAGE_OVERHEAD = 4;
/** Llama/Qwen/Mistral chat templates: a header of ~4 special tokens and an end-of-turn token. */
const OLLAMA_MESSAGE_OVERHEAD = 5;

function prices(inputPerMTok: number, outputPerMTok: number): ModelPrices {
  return { inputPerMTok, outputPerMTok };
}

function openai(
  id: string,
  family: string,
  encoding: Encoding,
  contextWindow: number,
  defaultOutputReserve: number,
  price: ModelPrices,
  sizeTier: ModelSizeTier,
): ModelSpec {
  return {
    id,
    provider: 'openai',
    family,
    contextWindow,
    defaultOutputReserve,
    accuracy: 'exact',
    encoding,
    multiplier: 1,
    margin: 0,
    messageOverhead: OPENAI_MESSAGE_OVERHEAD,
    prices: price,
    sizeTier,
  };
}

/** Claude: o200k × 1.2 plus a 5% margin; every current Claude model has a 200k window. */
function claude(id: string, defaultOutputReserve: number, price: ModelPrices, sizeTier: ModelSizeTier): ModelSpec {
  return {
    id,
    provider: 'anthropic',
    family: 'claude',
    contextWindow: 200_000,
    defaultOutputReserve,
    accuracy: 'approx',
    encoding: 'o200k_base',
    multiplier: 1.2,
    margin: 0.05,
    messageOverhead: HOSTED_MESSAGE_OVERHEAD,
    prices: price,
    sizeTier,
  };
}

/**
 * Claude models with a native 1M window. Windows and maximum outputs as Claude Code 2.1.332's own
 * model table lists them (the CLI the proxy is tested with); prices: the tier's latest published ones.
 */
function claude1m(id: string, maxOutput: number, price: ModelPrices, sizeTier: ModelSizeTier): ModelSpec {
  return { ...claude(id, maxOutput, price, sizeTier), contextWindow: 1_000_000 };
}

/** Gemini's 256k SentencePiece vocabulary is close to o200k: × 1.05 plus a 10% margin. */
function gemini(
  id: string,
  contextWindow: number,
  defaultOutputReserve: number,
  price: ModelPrices,
  sizeTier: ModelSizeTier,
): ModelSpec {
  return {
    id,
    provider: 'gemini',
    family: 'gemini',
    contextWindow,
    defaultOutputReserve,
    accuracy: 'approx',
    encoding: 'o200k_base',
    multiplier: 1.05,
    margin: 0.1,
    messageOverhead: HOSTED_MESSAGE_OVERHEAD,
    prices: price,
    sizeTier,
  };
}

const K128 = 128_000;
/** Recommended room for o-series reasoning plus the answer (OpenAI's reasoning guide says at least 25,000). */
const REASONING_RESERVE = 25_000;

const HOSTED_MODELS: ModelSpec[] = [
  // OpenAI: exact counts with the model's own encoding.
  openai('gpt-5', 'gpt-5', 'o200k_base', 400_000, 128_000, prices(1.25, 10), 'frontier'),
  openai('gpt-5-mini', 'gpt-5', 'o200k_base', 400_000, 128_000, prices(0.25, 2), 'medium'),
  openai('gpt-5-nano', 'gpt-5', 'o200k_base', 400_000, 128_000, prices(0.05, 0.4), 'small'),
  openai('gpt-5-pro', 'gpt-5', 'o200k_base', 400_000, 128_000, prices(15, 120), 'frontier'),
  openai('gpt-5-chat-latest', 'gpt-5', 'o200k_base', K128, 16_384, prices(1.25, 10), 'frontier'),
  openai('gpt-5.1', 'gpt-5', 'o200k_base', 400_000, 128_000, prices(1.25, 10), 'frontier'),
  openai('gpt-5.1-chat-latest', 'gpt-5', 'o200k_base', K128, 16_384, prices(1.25, 10), 'frontier'),
  openai('gpt-4.1', 'gpt-4.1', 'o200k_base', 1_047_576, 32_768, prices(2, 8), 'large'),
  openai('gpt-4.1-mini', 'gpt-4.1', 'o200k_base', 1_047_576, 32_768, prices(0.4, 1.6), 'medium'),
  openai('gpt-4.1-nano', 'gpt-4.1', 'o200k_base', 1_047_576, 32_768, prices(0.1, 0.4), 'small'),
  openai('gpt-4.5-preview', 'gpt-4.5', 'o200k_base', K128, 16_384, prices(75, 150), 'frontier'),
  openai('gpt-4o', 'gpt-4o', 'o200k_base', K128, 16_384, prices(2.5, 10), 'large'),
  openai('gpt-4o-mini', 'gpt-4o', 'o200k_base', K128, 16_384, prices(0.15, 0.6), 'medium'),
  openai('o1', 'o1', 'o200k_base', 200_000, REASONING_RESERVE, prices(15, 60), 'frontier'),
  openai('o1-pro', 'o1', 'o200k_base', 200_000, REASONING_RESERVE, prices(150, 600), 'frontier'),
  openai('o1-preview', 'o1', 'o200k_base', K128, REASONING_RESERVE, prices(15, 60), 'frontier'),
  openai('o1-mini', 'o1', 'o200k_base', K128, REASONING_RESERVE, prices(1.1, 4.4), 'medium'),
  openai('o3', 'o3', 'o200k_base', 200_000, REASONING_RESERVE, prices(2, 8), 'frontier'),
  openai('o3-pro', 'o3', 'o200k_base', 200_000, REASONING_RESERVE, prices(20, 80), 'frontier'),
  openai('o3-mini', 'o3', 'o200k_base', 200_000, REASONING_RESERVE, prices(1.1, 4.4), 'medium'),
  openai('o4-mini', 'o4', 'o200k_base', 200_000, REASONING_RESERVE, prices(1.1, 4.4), 'medium'),
  openai('gpt-4-turbo', 'gpt-4', 'cl100k_base', K128, 4_096, prices(10, 30), 'large'),
  openai('gpt-4', 'gpt-4', 'cl100k_base', 8_192, 2_048, prices(30, 60), 'large'),
  openai('gpt-4-32k', 'gpt-4', 'cl100k_base', 32_768, 4_096, prices(60, 120), 'large'),
  openai('gpt-3.5-turbo', 'gpt-3.5', 'cl100k_base', 16_385, 4_096, prices(0.5, 1.5), 'medium'),

  // Anthropic: canonical ids are the API aliases; dated ids match by prefix.
  claude1m('claude-opus-5-5', 128_000, prices(5, 25), 'frontier'),
  claude1m('claude-opus-5', 128_000, prices(5, 25), 'frontier'),
  claude1m('claude-sonnet-5', 128_000, prices(3, 15), 'frontier'),
  claude1m('claude-opus-4-8', 128_000, prices(5, 25), 'frontier'),
  claude1m('claude-opus-4-7', 128_000, prices(5, 25), 'frontier'),
  claude1m('claude-opus-4-6', 128_000, prices(5, 25), 'frontier'),
  claude1m('claude-sonnet-4-6', 128_000, prices(3, 15), 'frontier'),
  claude('claude-opus-4-5', 16_384, prices(5, 25), 'frontier'),
  claude('claude-sonnet-4-5', 16_384, prices(3, 15), 'frontier'),
  claude('claude-haiku-4-5', 16_384, prices(1, 5), 'medium'),
  claude('claude-opus-4-1', 16_384, prices(15, 75), 'frontier'),
  claude('claude-opus-4', 16_384, prices(15, 75), 'frontier'),
  claude('claude-sonnet-4', 16_384, prices(3, 15), 'frontier'),
  claude('claude-3-7-sonnet', 16_384, prices(3, 15), 'large'),
  claude('claude-3-5-sonnet', 8_192, prices(3, 15), 'large'),
  claude('claude-3-5-haiku', 8_192, prices(0.8, 4), 'medium'),
  claude('claude-3-opus', 4_096, prices(15, 75), 'large'),
  claude('claude-3-sonnet', 4_096, prices(3, 15), 'large'),
  claude('claude-3-haiku', 4_096, prices(0.25, 1.25), 'small'),

  // Google Gemini.
  gemini('gemini-3-pro-preview', 1_048_576, 16_384, prices(2, 12), 'frontier'),
  gemini('gemini-2.5-pro', 1_048_576, 16_384, prices(1.25, 10), 'frontier'),
  gemini('gemini-2.5-flash', 1_048_576, 16_384, prices(0.3, 2.5), 'medium'),
  gemini('gemini-2.5-flash-lite', 1_048_576, 16_384, prices(0.1, 0.4), 'small'),
  gemini('gemini-2.0-flash', 1_048_576, 8_192, prices(0.1, 0.4), 'medium'),
  gemini('gemini-2.0-flash-lite', 1_048_576, 8_192, prices(0.075, 0.3), 'small'),
  gemini('gemini-1.5-pro', 2_097_152, 8_192, prices(1.25, 5), 'large'),
  gemini('gemini-1.5-flash', 1_048_576, 8_192, prices(0.075, 0.3), 'medium'),
  gemini('gemini-1.5-flash-8b', 1_048_576, 8_192, prices(0.0375, 0.15), 'small'),
];

/** Other names for catalog ids (the dated forms need no alias: they match by prefix). */
const ALIASES: Record<string, string> = {
  'chatgpt-4o-latest': 'gpt-4o',
  'gpt-5-chat': 'gpt-5-chat-latest',
  'gpt-5.1-chat': 'gpt-5.1-chat-latest',
  'gpt-4-1106-preview': 'gpt-4-turbo',
  'gpt-4-0125-preview': 'gpt-4-turbo',
  'gpt-4-vision-preview': 'gpt-4-turbo',
  'gpt-35-turbo': 'gpt-3.5-turbo', // Azure's spelling
  'gemini-3-pro': 'gemini-3-pro-preview',
  'gemini-pro-latest': 'gemini-2.5-pro',
  'gemini-flash-latest': 'gemini-2.5-flash',
  'gemini-flash-lite-latest': 'gemini-2.5-flash-lite',
};

/* ---------------------------------------------------------------- open models (Ollama) */

interface OpenSize {
  parameterCountB: number;
  contextWindow?: number;
  multiplier?: number;
}

interface OpenFamily {
  /** Ollama's model name; catalog ids are `${name}:${tag}`. */
  name: string;
  family: string;
  /** Matches the start of a normalized id (Ollama tags and Hugging Face style names). */
  pattern: RegExp;
  defaultTag: string;
  contextWindow: number;
  multiplier: number;
  margin: number;
  sizes: Record<string, OpenSize>;
}

// Order matters: the more specific names come first.
const OPEN_FAMILIES: OpenFamily[] = [
  {
    name: 'llama3.3',
    family: 'llama',
    pattern: /^(?:meta-)?llama-?3\.3(?![\d.])/,
    defaultTag: '70b',
    contextWindow: 131_072,
    multiplier: 1.05,
    margin: 0.05,
    sizes: { '70b': { parameterCountB: 70 } },
  },
  {
    name: 'llama3.2',
    family: 'llama',
    pattern: /^(?:meta-)?llama-?3\.2(?![\d.])/,
    defaultTag: '3b',
    contextWindow: 131_072,
    multiplier: 1.05,
    margin: 0.05,
    sizes: { '1b': { parameterCountB: 1 }, '3b': { parameterCountB: 3 } },
  },
  {
    name: 'llama3.1',
    family: 'llama',
    pattern: /^(?:meta-)?llama-?3\.1(?![\d.])/,
    defaultTag: '8b',
    contextWindow: 131_072,
    multiplier: 1.05,
    margin: 0.05,
    sizes: { '8b': { parameterCountB: 8 }, '70b': { parameterCountB: 70 }, '405b': { parameterCountB: 405 } },
  },
  {
    name: 'llama3',
    family: 'llama',
    pattern: /^(?:meta-)?llama-?3(?![\d.])/,
    defaultTag: '8b',
    contextWindow: 8_192,
    multiplier: 1.05,
    margin: 0.05,
    sizes: { '8b': { parameterCountB: 8 }, '70b': { parameterCountB: 70 } },
  },
  {
    name: 'qwen2.5-coder',
    family: 'qwen',
    pattern: /^qwen-?2\.5-coder(?![\w.])/,
    defaultTag: '7b',
    contextWindow: 32_768,
    multiplier: 1.05,
    margin: 0.1,
    sizes: sizesOf([0.5, 1.5, 3, 7, 14, 32]),
  },
  {
    name: 'qwen2.5',
    family: 'qwen',
    pattern: /^qwen-?2\.5(?=$|[:@]|-\d|-instruct)/,
    defaultTag: '7b',
    contextWindow: 32_768,
    multiplier: 1.05,
    margin: 0.1,
    sizes: sizesOf([0.5, 1.5, 3, 7, 14, 32, 72]),
  },
  {
    name: 'qwen3',
    family: 'qwen',
    pattern: /^qwen-?3(?=$|[:@]|-\d|-instruct)/,
    defaultTag: '8b',
    contextWindow: 40_960,
    multiplier: 1.05,
    margin: 0.1,
    sizes: sizesOf([0.6, 1.7, 4, 8, 14, 30, 32, 235]),
  },
  {
    name: 'mistral-nemo',
    family: 'mistral',
    pattern: /^mistral-nemo(?![\w.])/,
    defaultTag: '12b',
    contextWindow: 131_072,
    multiplier: 1.05, // Tekken tokenizer
    margin: 0.1,
    sizes: { '12b': { parameterCountB: 12 } },
  },
  {
    name: 'mistral-small',
    family: 'mistral',
    pattern: /^mistral-small(?:-?3(?:\.\d)?)?(?![\w.])/,
    defaultTag: '24b',
    contextWindow: 131_072,
    multiplier: 1.05, // Tekken tokenizer (24b); the 22b uses the older 32k vocabulary
    margin: 0.1,
    sizes: {
      '22b': { parameterCountB: 22, contextWindow: 32_768, multiplier: 1.25 },
      '24b': { parameterCountB: 24 },
    },
  },
  {
    name: 'mistral-large',
    family: 'mistral',
    pattern: /^mistral-large(?![\w.])/,
    defaultTag: '123b',
    contextWindow: 131_072,
    multiplier: 1.25,
    margin: 0.1,
    sizes: { '123b': { parameterCountB: 123 } },
  },
  {
    name: 'codestral',
    family: 'mistral',
    pattern: /^codestral(?![\w.])/,
    defaultTag: '22b',
    contextWindow: 32_768,
    multiplier: 1.25,
    margin: 0.1,
    sizes: { '22b': { parameterCountB: 22 } },
  },
  {
    name: 'mixtral',
    family: 'mistral',
    pattern: /^mixtral(?![\w.])/,
    defaultTag: '8x7b',
    contextWindow: 32_768,
    multiplier: 1.25,
    margin: 0.1,
    sizes: { '8x7b': { parameterCountB: 46.7 }, '8x22b': { parameterCountB: 141, contextWindow: 65_536 } },
  },
  {
    name: 'mistral',
    family: 'mistral',
    pattern: /^mistral(?:-7b)?(?=$|[:@]|-instruct|-v\d)/,
    defaultTag: '7b',
    contextWindow: 32_768,
    multiplier: 1.25, // 32k SentencePiece vocabulary
    margin: 0.1,
    sizes: { '7b': { parameterCountB: 7 } },
  },
];

function sizesOf(billions: number[]): Record<string, OpenSize> {
  return Object.fromEntries(billions.map((b) => [`${b}b`, { parameterCountB: b }]));
}

function tierForParameters(billions: number): ModelSizeTier {
  if (billions < 10) return 'small';
  if (billions <= 40) return 'medium';
  return 'large';
}

function openSpec(family: OpenFamily, tag: string, size: OpenSize): ModelSpec {
  const contextWindow = size.contextWindow ?? family.contextWindow;
  return {
    id: `${family.name}:${tag}`,
    provider: 'ollama',
    family: family.family,
    contextWindow,
    defaultOutputReserve: Math.min(4_096, Math.floor(contextWindow / 4)),
    accuracy: 'approx',
    encoding: 'o200k_base',
    multiplier: size.multiplier ?? family.multiplier,
    margin: family.margin,
    messageOverhead: OLLAMA_MESSAGE_OVERHEAD,
    prices: prices(0, 0),
    parameterCountB: size.parameterCountB,
    sizeTier: tierForParameters(size.parameterCountB),
  };
}

const OPEN_MODELS: ModelSpec[] = OPEN_FAMILIES.flatMap((family) =>
  Object.entries(family.sizes).map(([tag, size]) => openSpec(family, tag, size)),
);

/* ---------------------------------------------------------------- catalog and default */

/**
 * The default for unknown models: a 128k window and an o200k estimate × 1.1 plus a 10%
 * margin (≈ 1.21× o200k), generous enough for the common tokenizers.
 */
export const DEFAULT_MODEL_SPEC: ModelSpec = Object.freeze({
  id: 'unknown',
  provider: 'unknown',
  family: 'unknown',
  contextWindow: 128_000,
  defaultOutputReserve: 4_096,
  accuracy: 'approx',
  encoding: 'o200k_base',
  multiplier: 1.1,
  margin: 0.1,
  messageOverhead: 5,
  sizeTier: 'medium',
} satisfies ModelSpec);

function freezeSpec(spec: ModelSpec): ModelSpec {
  if (spec.prices) Object.freeze(spec.prices);
  return Object.freeze(spec);
}

export const MODEL_CATALOG: readonly ModelSpec[] = Object.freeze([...HOSTED_MODELS, ...OPEN_MODELS].map(freezeSpec));

const BY_ID = new Map(MODEL_CATALOG.map((spec) => [spec.id, spec]));

/** Hosted ids and aliases, longest first, for longest-prefix matching. */
const HOSTED_KEYS: Array<[key: string, spec: ModelSpec]> = [
  ...HOSTED_MODELS.map((spec): [string, ModelSpec] => [spec.id, BY_ID.get(spec.id) as ModelSpec]),
  ...Object.entries(ALIASES).map(([alias, id]): [string, ModelSpec] => [alias, BY_ID.get(id) as ModelSpec]),
].sort((a, b) => b[0].length - a[0].length);

/** What may follow a catalog id in a longer id: a date, a version, a tag, a Vertex `@date`. */
const BOUNDARY = new Set(['-', ':', '@', '_']);

function normalize(id: string): string {
  let s = id.trim().toLowerCase();
  // Provider or namespace prefixes: `openai/gpt-4o`, `ollama/llama3.1:70b`, `models/gemini-1.5-pro`,
  // `meta-llama/Meta-Llama-3.1-8B-Instruct`, `hf.co/org/Model-GGUF:Q4_K_M`.
  const slash = s.lastIndexOf('/');
  if (slash >= 0) s = s.slice(slash + 1);
  // Bedrock: `anthropic.claude-…`, `us.anthropic.claude-…`.
  s = s.replace(/^(?:[a-z]{2,4}\.)?anthropic\./, '');
  if (s.startsWith('claude')) {
    // `claude-3.5-sonnet` → `claude-3-5-sonnet`, `claude-sonnet-4.5` → `claude-sonnet-4-5`.
    s = s.replace(/(\d)\.(\d)/g, '$1-$2');
    // Claude 3.x names put the version first, Claude 4+ the tier first; accept either order.
    s = s
      .replace(/^claude-(opus|sonnet|haiku)-(3(?:-\d)?)(?=$|-)/, 'claude-$2-$1')
      .replace(/^claude-([4-9](?:-\d)?)-(opus|sonnet|haiku)(?=$|-)/, 'claude-$2-$1');
  }
  return s;
}

/** Claude 4+ ids put the tier first: `claude-opus-4-8`, `claude-sonnet-5`, `claude-haiku-4-5-20251001`. */
const CLAUDE_TIER_FIRST = /^claude-(opus|sonnet|haiku)-(\d{1,2})(?:-(\d))?(?=$|[-@:_])/;

/**
 * Model families by pattern (SPEC.md "Budget"): a Claude version the catalog does not list yet
 * (`claude-opus-4-8`, `claude-sonnet-5`, their dated and `-latest` forms) takes the catalog's
 * nearest earlier version of the same tier (its window, output reserve, tokenizer estimate and
 * prices), under its own id; so does a GPT-5 point release (`gpt-5.2`, `gpt-5.4-mini`).
 */
function matchFamily(s: string): ModelSpec | undefined {
  const claude = CLAUDE_TIER_FIRST.exec(s);
  if (claude) {
    const [, tier, major, minor] = claude;
    const wanted = Number(major) * 10 + Number(minor ?? 0);
    let best: { version: number; spec: ModelSpec } | undefined;
    for (const spec of HOSTED_MODELS) {
      const known = CLAUDE_TIER_FIRST.exec(spec.id);
      if (!known || known[1] !== tier) continue;
      const version = Number(known[2]) * 10 + Number(known[3] ?? 0);
      if (version <= wanted && (!best || version > best.version)) best = { version, spec };
    }
    if (!best) return undefined;
    const id = `claude-${tier}-${major}${minor && minor !== '0' ? `-${minor}` : ''}`;
    return best.version === wanted ? BY_ID.get(best.spec.id) : freezeSpec({ ...BY_ID.get(best.spec.id)!, id });
  }
  const gpt = /^gpt-(\d{1,2})\.(\d{1,2})(?=$|-)(-(?:mini|nano|pro))?/.exec(s);
  if (gpt) {
    const variant = gpt[3] ?? '';
    const base = BY_ID.get(`gpt-${gpt[1]}.1${variant}`) ?? BY_ID.get(`gpt-${gpt[1]}${variant}`) ?? BY_ID.get(`gpt-${gpt[1]}`);
    return base ? freezeSpec({ ...base, id: `gpt-${gpt[1]}.${gpt[2]}${variant}` }) : undefined;
  }
  return undefined;
}

function matchHosted(s: string): ModelSpec | undefined {
  for (const [key, spec] of HOSTED_KEYS) {
    if (s === key || (s.startsWith(key) && BOUNDARY.has(s[key.length]))) return spec;
  }
  return undefined;
}

/** `8b`, `1.5b`, `30b-a3b` → `30b`, `8x7b`; the first size mentioned after the family name. */
function sizeTag(rest: string): string | undefined {
  // "Not followed by a letter or digit" is written as a following non-alphanumeric or the end (the linear-time checker cannot decide lookaheads).
  const moe = /(?:^|[^a-z0-9.])(\d+x\d+(?:\.\d+)?b)(?:[^a-z0-9]|$)/.exec(rest);
  if (moe) return moe[1];
  const dense = /(?:^|[^a-z0-9.])(\d+(?:\.\d+)?)b(?:[^a-z0-9]|$)/.exec(rest);
  return dense ? `${Number(dense[1])}b` : undefined;
}

function parameterCountOf(tag: string): number | undefined {
  const moe = /^(\d+)x(\d+(?:\.\d+)?)b$/.exec(tag);
  if (moe) return Number(moe[1]) * Number(moe[2]);
  const dense = /^(\d+(?:\.\d+)?)b$/.exec(tag);
  return dense ? Number(dense[1]) : undefined;
}

function ollamaWarning(spec: ModelSpec): string {
  return (
    `Ollama model "${spec.id}": the context window is the model's trained ${spec.contextWindow.toLocaleString('en-US')} ` +
    'tokens, but Ollama only serves num_ctx tokens (its default is a few thousand) and silently truncates longer prompts; ' +
    'set contextWindow to the num_ctx your server runs with'
  );
}

function matchOpen(s: string): ResolvedModel | undefined {
  for (const family of OPEN_FAMILIES) {
    const match = family.pattern.exec(s);
    if (!match) continue;
    const tag = sizeTag(s.slice(match[0].length)) ?? family.defaultTag;
    const known = BY_ID.get(`${family.name}:${tag}`);
    if (known) return { spec: known, known: true, warning: ollamaWarning(known) };
    const parameterCountB = parameterCountOf(tag);
    const defaultSize = family.sizes[family.defaultTag];
    const spec = freezeSpec(openSpec(family, tag, { parameterCountB: parameterCountB ?? defaultSize.parameterCountB }));
    return {
      spec,
      known: true,
      warning: `${ollamaWarning(spec)}. The size ${tag} is not in the catalog: the ${family.name} family defaults are used`,
    };
  }
  return undefined;
}

function describeEstimate(spec: ModelSpec): string {
  return `${spec.encoding} × ${spec.multiplier} + ${Math.round(spec.margin * 100)}% margin`;
}

/**
 * Looks a model id up in the catalog, case-insensitively: exact ids, dated and versioned
 * variants and aliases (longest prefix), provider prefixes, Ollama tags. Unknown ids get
 * `DEFAULT_MODEL_SPEC` under their own id, `known: false` and a warning to show the client.
 */
export function resolveModel(id: string): ResolvedModel {
  const raw = typeof id === 'string' ? id : '';
  // Every append resolves its session's model (issue #21): a lookup is memoized per id, frozen, in a bounded map.
  const cached = RESOLVED.get(raw);
  if (cached) return cached;
  if (RESOLVED.size >= RESOLVED_MAX) RESOLVED.clear();
  // Frozen: callers share it (every spec in it is frozen already).
  const resolved = Object.freeze(lookUpModel(raw));
  RESOLVED.set(raw, resolved);
  return resolved;
}

/** Ids resolved so far; cleared when it holds RESOLVED_MAX (ids come from clients, so the map must not grow without bound). */
const RESOLVED = new Map<string, ResolvedModel>();
const RESOLVED_MAX = 1_000;

function lookUpModel(raw: string): ResolvedModel {
  const s = normalize(raw);
  if (s && s !== 'unknown') {
    // A Claude id is read by its tier and version first: `claude-opus-4-8` is not `claude-opus-4` with a suffix.
    const hosted = (s.startsWith('claude-') ? matchFamily(s) : undefined) ?? matchHosted(s) ?? matchFamily(s);
    if (hosted) return { spec: hosted, known: true };
    const open = matchOpen(s);
    if (open) return open;
  }
  return {
    spec: freezeSpec({ ...DEFAULT_MODEL_SPEC, id: raw }),
    known: false,
    warning:
      `Unknown model "${raw}": tokens are estimated (${describeEstimate(DEFAULT_MODEL_SPEC)}) with a ` +
      `${DEFAULT_MODEL_SPEC.contextWindow.toLocaleString('en-US')}-token window; set contextWindow ` +
      '(and outputReserve) on the session if the model differs',
  };
}
