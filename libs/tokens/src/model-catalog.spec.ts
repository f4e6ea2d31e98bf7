import { DEFAULT_MODEL_SPEC, MODEL_CATALOG, resolveModel } from './model-catalog';

describe('resolveModel', () => {
  it.each([
    // OpenAI: exact ids, case, dated variants, aliases, provider prefixes
    ['gpt-4o', 'gpt-4o'],
    ['GPT-4o', 'gpt-4o'],
    ['gpt-4o-2024-08-06', 'gpt-4o'],
    ['chatgpt-4o-latest', 'gpt-4o'],
    ['openai/gpt-4o', 'gpt-4o'],
    ['gpt-4o-mini-2024-07-18', 'gpt-4o-mini'],
    ['gpt-4.1', 'gpt-4.1'],
    ['gpt-4.1-mini-2025-04-14', 'gpt-4.1-mini'],
    ['gpt-4.1-nano', 'gpt-4.1-nano'],
    ['o1-2024-12-17', 'o1'],
    ['o1-mini', 'o1-mini'],
    ['o3', 'o3'],
    ['o3-2025-04-16', 'o3'],
    ['o3-mini-2025-01-31', 'o3-mini'],
    ['o4-mini', 'o4-mini'],
    ['gpt-5', 'gpt-5'],
    ['gpt-5-mini-2025-08-07', 'gpt-5-mini'],
    ['gpt-5-nano', 'gpt-5-nano'],
    ['gpt-5-codex', 'gpt-5'],
    ['gpt-5-chat-latest', 'gpt-5-chat-latest'],
    ['gpt-4-turbo-2024-04-09', 'gpt-4-turbo'],
    ['gpt-4-1106-preview', 'gpt-4-turbo'],
    ['gpt-4', 'gpt-4'],
    ['gpt-4-0613', 'gpt-4'],
    ['gpt-4.5-preview', 'gpt-4.5-preview'],
    ['gpt-3.5-turbo-0125', 'gpt-3.5-turbo'],
    // Anthropic: API ids, dated ids, -latest aliases, dotted and reordered spellings, Bedrock, Vertex
    ['claude-sonnet-4-5-20250929', 'claude-sonnet-4-5'],
    ['claude-sonnet-4-5', 'claude-sonnet-4-5'],
    ['anthropic/claude-sonnet-4.5', 'claude-sonnet-4-5'],
    ['claude-sonnet-4-20250514', 'claude-sonnet-4'],
    ['claude-sonnet-4-0', 'claude-sonnet-4'],
    ['claude-4-sonnet', 'claude-sonnet-4'],
    ['claude-opus-4-1-20250805', 'claude-opus-4-1'],
    ['claude-opus-4-20250514', 'claude-opus-4'],
    ['claude-opus-4-5-20251101', 'claude-opus-4-5'],
    ['claude-haiku-4-5-20251001', 'claude-haiku-4-5'],
    ['claude-3-7-sonnet-20250219', 'claude-3-7-sonnet'],
    // Families by pattern: versions newer than the catalog keep their own id and take the tier's latest entry
    ['claude-opus-4-8', 'claude-opus-4-8'],
    ['claude-opus-4-8-20261015', 'claude-opus-4-8'],
    ['claude-opus-5-5', 'claude-opus-5-5'],
    ['claude-opus-5-7', 'claude-opus-5-7'],
    ['claude-sonnet-5', 'claude-sonnet-5'],
    ['claude-sonnet-5-latest', 'claude-sonnet-5'],
    ['claude-haiku-4-6', 'claude-haiku-4-6'],
    ['us.anthropic.claude-opus-4-8-v1:0', 'claude-opus-4-8'],
    ['gpt-5.2', 'gpt-5.2'],
    ['gpt-5.4-mini', 'gpt-5.4-mini'],
    ['claude-3-7-sonnet-latest', 'claude-3-7-sonnet'],
    ['claude-3-5-sonnet-latest', 'claude-3-5-sonnet'],
    ['claude-3-5-sonnet-20241022', 'claude-3-5-sonnet'],
    ['claude-3.5-sonnet', 'claude-3-5-sonnet'],
    ['claude-3-5-haiku-latest', 'claude-3-5-haiku'],
    ['claude-3-opus-20240229', 'claude-3-opus'],
    ['claude-3-haiku-20240307', 'claude-3-haiku'],
    ['anthropic.claude-3-5-sonnet-20241022-v2:0', 'claude-3-5-sonnet'],
    ['us.anthropic.claude-sonnet-4-20250514-v1:0', 'claude-sonnet-4'],
    ['claude-3-5-sonnet-v2@20241022', 'claude-3-5-sonnet'],
    // Gemini
    ['gemini-2.5-pro', 'gemini-2.5-pro'],
    ['gemini-2.5-pro-preview-06-05', 'gemini-2.5-pro'],
    ['gemini-2.5-flash', 'gemini-2.5-flash'],
    ['gemini-2.5-flash-lite', 'gemini-2.5-flash-lite'],
    ['gemini-2.0-flash-001', 'gemini-2.0-flash'],
    ['models/gemini-1.5-pro-002', 'gemini-1.5-pro'],
    ['gemini-1.5-flash-latest', 'gemini-1.5-flash'],
    ['gemini-1.5-flash-8b', 'gemini-1.5-flash-8b'],
    // Ollama tags and Hugging Face style names
    ['llama3.1:8b', 'llama3.1:8b'],
    ['llama3.1', 'llama3.1:8b'],
    ['llama3.1:latest', 'llama3.1:8b'],
    ['ollama/llama3.1:70b', 'llama3.1:70b'],
    ['llama3.1:405b', 'llama3.1:405b'],
    ['llama3.1:8b-instruct-q4_K_M', 'llama3.1:8b'],
    ['meta-llama/Meta-Llama-3.1-70B-Instruct', 'llama3.1:70b'],
    ['llama3:70b', 'llama3:70b'],
    ['llama3.2:1b', 'llama3.2:1b'],
    ['llama3.2', 'llama3.2:3b'],
    ['llama3.3', 'llama3.3:70b'],
    ['qwen2.5-coder:32b', 'qwen2.5-coder:32b'],
    ['qwen2.5-coder:1.5b-instruct-q8_0', 'qwen2.5-coder:1.5b'],
    ['qwen2.5:72b', 'qwen2.5:72b'],
    ['Qwen/Qwen2.5-7B-Instruct', 'qwen2.5:7b'],
    ['qwen3:30b-a3b', 'qwen3:30b'],
    ['qwen3', 'qwen3:8b'],
    ['mistral:7b', 'mistral:7b'],
    ['mistral', 'mistral:7b'],
    ['mistral-7b-instruct-v0.3', 'mistral:7b'],
    ['mistral-nemo', 'mistral-nemo:12b'],
    ['mistral-nemo:12b-instruct-2407-q4_0', 'mistral-nemo:12b'],
    ['mistral-small', 'mistral-small:24b'],
    ['mistral-small:22b', 'mistral-small:22b'],
    ['mistral-small3.1', 'mistral-small:24b'],
    ['mistral-large', 'mistral-large:123b'],
    ['codestral:22b', 'codestral:22b'],
    ['mixtral:8x7b', 'mixtral:8x7b'],
    ['mixtral:8x22b', 'mixtral:8x22b'],
  ])('%s → %s', (input, id) => {
    const resolved = resolveModel(input);
    expect(resolved.known).toBe(true);
    expect(resolved.spec.id).toBe(id);
  });

  it('marks OpenAI models exact with their own encoding', () => {
    expect(resolveModel('gpt-4o').spec).toMatchObject({ provider: 'openai', accuracy: 'exact', encoding: 'o200k_base', multiplier: 1, margin: 0 });
    expect(resolveModel('o3-mini').spec.encoding).toBe('o200k_base');
    expect(resolveModel('gpt-5').spec.encoding).toBe('o200k_base');
    expect(resolveModel('gpt-4-turbo').spec.encoding).toBe('cl100k_base');
    expect(resolveModel('gpt-3.5-turbo').spec.encoding).toBe('cl100k_base');
  });

  it('marks Claude, Gemini and Ollama models approx with a multiplier and a margin', () => {
    for (const id of ['claude-sonnet-4-5', 'gemini-2.5-pro', 'llama3.1:8b', 'qwen2.5-coder:32b', 'mistral:7b']) {
      const { spec } = resolveModel(id);
      expect(spec.accuracy).toBe('approx');
      expect(spec.multiplier).toBeGreaterThanOrEqual(1);
      expect(spec.margin).toBeGreaterThan(0);
    }
    expect(resolveModel('claude-3-5-sonnet').spec.contextWindow).toBe(200_000);
    expect(resolveModel('gemini-1.5-pro').spec.contextWindow).toBe(2_097_152);
    expect(resolveModel('gemini-2.5-flash').spec.contextWindow).toBe(1_048_576);
  });

  it('takes the parameter count from the Ollama tag, also for sizes the catalog does not list', () => {
    expect(resolveModel('llama3.1:70b').spec).toMatchObject({ parameterCountB: 70, sizeTier: 'large', provider: 'ollama' });
    expect(resolveModel('llama3.2:1b').spec).toMatchObject({ parameterCountB: 1, sizeTier: 'small' });
    expect(resolveModel('qwen2.5-coder:1.5b').spec.parameterCountB).toBe(1.5);
    expect(resolveModel('mixtral:8x7b').spec.parameterCountB).toBe(46.7);

    const inferred = resolveModel('qwen2.5:110b');
    expect(inferred).toMatchObject({ known: true, spec: { id: 'qwen2.5:110b', parameterCountB: 110, sizeTier: 'large' } });
    expect(inferred.warning).toContain('110b is not in the catalog');
  });

  it('warns that Ollama serves num_ctx tokens, not the trained window', () => {
    const resolved = resolveModel('llama3.1:8b');
    expect(resolved.spec.prices).toEqual({ inputPerMTok: 0, outputPerMTok: 0 });
    expect(resolved.warning).toContain('num_ctx');
    expect(resolved.warning).toContain('131,072');
  });

  it('needs no warning for hosted models', () => {
    expect(resolveModel('claude-sonnet-4-5').warning).toBeUndefined();
  });

  it.each(['unknown', 'my-finetune-v2', 'gpt-6', '', 'mistral-openorca', 'claude-2.1'])(
    'falls back to the documented default for %j',
    (id) => {
      const resolved = resolveModel(id);
      expect(resolved.known).toBe(false);
      expect(resolved.spec).toEqual({ ...DEFAULT_MODEL_SPEC, id });
      expect(resolved.warning).toBe(
        `Unknown model "${id}": tokens are estimated (o200k_base × 1.1 + 10% margin) with a 128,000-token window; ` +
          'set contextWindow (and outputReserve) on the session if the model differs',
      );
    },
  );

  it('does not let callers mutate the catalog through a resolved spec', () => {
    const { spec } = resolveModel('gpt-4o');
    expect(() => {
      (spec as { contextWindow: number }).contextWindow = 1;
    }).toThrow(TypeError);
    expect(resolveModel('gpt-4o').spec.contextWindow).toBe(128_000);
  });
});

describe('resolveModel memo (issue #21: every append resolves its model)', () => {
  it('answers a repeated id with the same frozen lookup, unknown ids included', () => {
    for (const id of ['claude-sonnet-4-5', 'gpt-4o', 'llama3.1:8b', `no-such-model-${Math.random()}`]) {
      const first = resolveModel(id);
      expect(resolveModel(id)).toBe(first);
      expect(Object.isFrozen(first)).toBe(true);
      expect(Object.isFrozen(first.spec)).toBe(true);
      expect(() => {
        (first.spec as { contextWindow: number }).contextWindow = 1;
      }).toThrow(TypeError);
    }
  });

  it('stays bounded and correct past its size: ids resolved after it was cleared are the same lookups', () => {
    const before = resolveModel('gpt-4o');
    for (let i = 0; i < 2_500; i += 1) expect(resolveModel(`client-model-${i}`).spec.id).toBe(`client-model-${i}`);
    const after = resolveModel('gpt-4o');
    expect(after).toEqual(before);
    expect(resolveModel('client-model-7').known).toBe(false);
  });
});

describe('MODEL_CATALOG', () => {
  it('has unique ids, each resolving to itself', () => {
    const ids = MODEL_CATALOG.map((spec) => spec.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const spec of MODEL_CATALOG) expect(resolveModel(spec.id).spec).toBe(spec);
  });

  it('is internally consistent', () => {
    for (const spec of MODEL_CATALOG) {
      expect(spec.contextWindow).toBeGreaterThan(spec.defaultOutputReserve);
      expect(spec.defaultOutputReserve).toBeGreaterThan(0);
      expect(spec.messageOverhead).toBeGreaterThan(0);
      if (spec.accuracy === 'exact') {
        expect(spec).toMatchObject({ provider: 'openai', multiplier: 1, margin: 0 });
      } else {
        expect(spec.provider).not.toBe('openai');
        expect(spec.margin).toBeGreaterThan(0);
      }
      if (spec.provider === 'ollama') {
        expect(spec.parameterCountB).toBeGreaterThan(0);
        expect(spec.prices).toEqual({ inputPerMTok: 0, outputPerMTok: 0 });
      } else {
        expect(spec.prices?.inputPerMTok).toBeGreaterThan(0);
        expect(spec.prices?.outputPerMTok).toBeGreaterThanOrEqual(spec.prices?.inputPerMTok ?? 0);
      }
    }
  });

  it('covers every provider family the brief names', () => {
    const families = new Set(MODEL_CATALOG.map((spec) => spec.family));
    for (const family of ['gpt-4o', 'gpt-4.1', 'gpt-5', 'claude', 'gemini', 'llama', 'qwen', 'mistral']) {
      expect(families).toContain(family);
    }
  });

  it('resolves newer versions of a family from the nearest earlier catalog entry of the same tier, with no warning', () => {
    // Claude Code 2.1's models have a native 1M window.
    expect(resolveModel('claude-opus-4-8').spec).toMatchObject({ id: 'claude-opus-4-8', contextWindow: 1_000_000, defaultOutputReserve: 128_000 });
    expect(resolveModel('claude-opus-5-5-20261001').spec.id).toBe('claude-opus-5-5');
    const opus = resolveModel('claude-opus-5-9');
    expect(opus.known).toBe(true);
    expect(opus.warning).toBeUndefined();
    expect(opus.spec).toMatchObject({ id: 'claude-opus-5-9', provider: 'anthropic', contextWindow: 1_000_000, prices: resolveModel('claude-opus-5-5').spec.prices });
    // Not the 4.0 entry its prefix would have matched.
    expect(resolveModel('claude-opus-4-9').spec.contextWindow).toBe(1_000_000);
    expect(resolveModel('claude-sonnet-6').spec).toMatchObject({ contextWindow: 1_000_000, prices: resolveModel('claude-sonnet-5').spec.prices });
    expect(resolveModel('claude-haiku-4-6').spec).toMatchObject({ contextWindow: 200_000, prices: resolveModel('claude-haiku-4-5').spec.prices });
    expect(resolveModel('gpt-5.2').spec).toMatchObject({ provider: 'openai', encoding: 'o200k_base', contextWindow: 400_000 });
    expect(resolveModel('gpt-5.4-mini').spec.prices).toEqual(resolveModel('gpt-5-mini').spec.prices);
    // A tier the catalog has no earlier version of, and names outside every family, stay unknown.
    expect(resolveModel('claude-opus-2').known).toBe(false);
    expect(resolveModel('claude-sonet-5').known).toBe(false);
  });
});
