import fc from 'fast-check';
import { Tiktoken } from 'js-tiktoken/lite';
import cl100k from 'js-tiktoken/ranks/cl100k_base';
import o200k from 'js-tiktoken/ranks/o200k_base';
import { createTokenCounter } from './bpe-counter';
import { combineCounts, MULTIPLIER_RANGE, recalibratedMultiplier } from './combine';
import { countTextSync } from './encoders';
import { DEFAULT_IMAGE_TOKENS } from './images';
import { resolveModel } from './model-catalog';
import { Encoding, ModelSpec } from './types';

const reference: Record<Encoding, Tiktoken> = {
  o200k_base: new Tiktoken(o200k),
  cl100k_base: new Tiktoken(cl100k),
};
const referenceCount = (text: string, encoding: Encoding) => reference[encoding].encode(text, [], []).length;

const SAMPLES = [
  '',
  'hello',
  'Hello, world! This is a test of the emergency broadcast system.',
  "It's they'll we'VE I'M can't",
  'Special tokens are plain text here: <|endoftext|> <|endofprompt|> <|fim_prefix|>',
  'Ünïcödé — 日本語のテキスト、中文文本 😀👍🏽 مرحبا бонжур',
  'function add(a: number, b: number): number {\n  return a + b;\n}\n\n\n    indented\ttabs\r\n',
  JSON.stringify({ tool: 'grep', output: ['src/a.ts:12: const x = 1;', 'src/b.ts:40: // TODO'], ok: true }),
  '0123456789 3.14159 1e-10 0xDEADBEEF',
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  '\ud83d lone surrogates \udc00 are replaced',
  // Long pre-tokens take the heap merge path (≥ 128 bytes in one piece).
  '='.repeat(640),
  ' '.repeat(300) + 'x',
  'a'.repeat(500),
  'ab'.repeat(200),
  '日本語'.repeat(60),
  '-'.repeat(80) + '\n' + '|'.repeat(200),
];

describe.each(['o200k_base', 'cl100k_base'] as const)('countTextSync in %s', (encoding) => {
  it.each(SAMPLES.map((text) => [JSON.stringify(text.slice(0, 40)), text]))('equals js-tiktoken for %s', (_label, text) => {
    expect(countTextSync(text, encoding)).toBe(referenceCount(text, encoding));
  });

  it('equals js-tiktoken on arbitrary text, including lone surrogates', () => {
    const surrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code));
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 200 }),
      fc.string({ unit: fc.oneof(fc.constantFrom(' ', '\n', 'a', 'Z', '9', "'", '=', '<|endoftext|>', 'é', '日'), surrogate), maxLength: 150 }),
    );
    fc.assert(
      fc.property(text, (value) => countTextSync(value, encoding) === referenceCount(value, encoding)),
      { numRuns: 200 },
    );
  });

  it('gives the same counts with the heap merge for every piece', () => {
    const heapOnly = createTokenCounter(encoding === 'o200k_base' ? o200k : cl100k, { largePieceBytes: 2 });
    for (const text of SAMPLES) expect(heapOnly(text)).toBe(referenceCount(text, encoding));
  });
});

it('counts a 200,000-char single pre-token without quadratic blow-up', () => {
  // js-tiktoken's own merge needs over a minute for 20,000 '='; 64 '=' make one o200k token.
  expect(referenceCount('='.repeat(640), 'o200k_base')).toBe(10);
  expect(countTextSync('='.repeat(200_000), 'o200k_base')).toBe(3_125);
});

const spec = (overrides: Partial<ModelSpec>): ModelSpec => ({ ...resolveModel('gpt-4o').spec, ...overrides });

describe('combineCounts', () => {
  const empty = { textTokens: [], images: [], opaqueJson: [] };

  it('adds the message overhead to the exact text counts', () => {
    const gpt4o = resolveModel('gpt-4o').spec;
    expect(combineCounts({ ...empty, textTokens: [10, 20] }, gpt4o)).toBe(gpt4o.messageOverhead + 30);
    expect(combineCounts(empty, gpt4o)).toBe(gpt4o.messageOverhead);
  });

  it('gives the exact count of a text for an OpenAI model', () => {
    const gpt4o = resolveModel('gpt-4o').spec;
    const text = 'The quick brown fox jumps over the lazy dog.';
    const tokens = countTextSync(text, gpt4o.encoding);
    expect(combineCounts({ ...empty, textTokens: [tokens] }, gpt4o)).toBe(referenceCount(text, 'o200k_base') + 4);
  });

  it('applies the multiplier and the margin for approx models, rounding up', () => {
    const approx = spec({ accuracy: 'approx', multiplier: 1.2, margin: 0.1, messageOverhead: 4 });
    // (4 + 96) × 1.2 × 1.1 = 132
    expect(combineCounts({ ...empty, textTokens: [96] }, approx)).toBe(132);
    // (4 + 97) × 1.2 × 1.1 = 133.32 → 134
    expect(combineCounts({ ...empty, textTokens: [97] }, approx)).toBe(134);
    const claude = resolveModel('claude-sonnet-4-5').spec;
    expect(combineCounts({ ...empty, textTokens: [1000] }, claude)).toBe(
      Math.ceil((1000 + claude.messageOverhead) * claude.multiplier * (1 + claude.margin)),
    );
  });

  it('adds images by provider formula and opaque blocks at one token per 3 chars, with the margin only', () => {
    const exact = resolveModel('gpt-4o').spec;
    const opaque = JSON.stringify({ type: 'document', source: { data: 'x'.repeat(280) } });
    // An OpenAI image of unknown size counts as the largest its model bills (8 tiles); detail low as the base tokens.
    expect(combineCounts({ textTokens: [], images: [{ width: 1024, height: 1024 }, {}, { detail: 'low' }], opaqueJson: [opaque] }, exact)).toBe(
      4 + 765 + (85 + 8 * 170) + 85 + Math.ceil(opaque.length / 3),
    );
    expect(combineCounts({ textTokens: [], images: [{}], opaqueJson: [] }, resolveModel('claude-sonnet-4-5').spec)).toBeGreaterThanOrEqual(DEFAULT_IMAGE_TOKENS);
    const approx = spec({ provider: 'anthropic', accuracy: 'approx', multiplier: 1.2, margin: 0.1, messageOverhead: 4 });
    // (6 × 1.2 + 54) × 1.1 = 67.32 → 68: the 200×200 image is already in model tokens
    expect(combineCounts({ textTokens: [2], images: [{ width: 200, height: 200 }], opaqueJson: [] }, approx)).toBe(68);
  });

  it('is a positive integer that grows with every part', () => {
    const specs = ['gpt-4o', 'gpt-4', 'claude-3-5-haiku', 'gemini-2.5-flash', 'llama3.1:8b', 'unknown'].map((id) => resolveModel(id).spec);
    const parts = fc.record({
      textTokens: fc.array(fc.nat({ max: 100_000 }), { maxLength: 5 }),
      images: fc.array(fc.record({ width: fc.option(fc.nat({ max: 10_000 }), { nil: undefined }), height: fc.option(fc.nat({ max: 10_000 }), { nil: undefined }) }), { maxLength: 3 }),
      opaqueJson: fc.array(fc.string({ maxLength: 500 }), { maxLength: 3 }),
    });
    fc.assert(
      fc.property(parts, fc.constantFrom(...specs), fc.nat({ max: 1000 }), (p, model, extra) => {
        const total = combineCounts(p, model);
        const more = combineCounts({ ...p, textTokens: [...p.textTokens, extra] }, model);
        return Number.isInteger(total) && total >= 1 && total >= model.messageOverhead && more >= total;
      }),
    );
  });
});

describe('recalibratedMultiplier', () => {
  it('moves part of the way towards the ratio the upstream reported', () => {
    // reported 1.1× the estimate: target 1.32, 30% of the way from 1.2
    expect(recalibratedMultiplier(1.2, 1000, 1100)).toBeCloseTo(1.236, 6);
    expect(recalibratedMultiplier(1.2, 1000, 900)).toBeCloseTo(1.164, 6);
    expect(recalibratedMultiplier(1.2, 1000, 1000)).toBe(1.2);
  });

  it('converges on the observed ratio over repeated reports', () => {
    let multiplier = 1.1;
    const raw = 10_000; // base-encoding tokens of a request whose true size is 13,000
    for (let i = 0; i < 40; i++) multiplier = recalibratedMultiplier(multiplier, raw * multiplier, 13_000);
    expect(multiplier).toBeCloseTo(1.3, 3);
  });

  it('damps outliers, clamps to a sane range and ignores invalid reports', () => {
    expect(recalibratedMultiplier(1, 100, 100_000)).toBeCloseTo(1.3, 6); // at most 2× implied per report
    expect(recalibratedMultiplier(2.9, 100, 1000)).toBe(MULTIPLIER_RANGE.max);
    expect(recalibratedMultiplier(0.55, 1000, 1)).toBe(MULTIPLIER_RANGE.min);
    expect(recalibratedMultiplier(1.2, 0, 500)).toBe(1.2);
    expect(recalibratedMultiplier(1.2, 500, 0)).toBe(1.2);
    expect(recalibratedMultiplier(1.2, Number.NaN, 500)).toBe(1.2);
    expect(recalibratedMultiplier(Number.NaN, 500, 500)).toBe(1);
  });
});
