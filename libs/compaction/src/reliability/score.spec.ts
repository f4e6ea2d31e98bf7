import fc from 'fast-check';
import { resolveModel } from '@compactor/tokens';
import {
  COMPRESSION_PENALTY_FLOOR,
  compressionPenaltyOf,
  modelFactorOf,
  reliabilityLevelOf,
  reliabilityOf,
  SIZE_TIER_FACTORS,
} from './score';

const model = (id: string) => resolveModel(id).spec;

describe('reliability score (seed 004)', () => {
  it.each([
    [405, 0.95],
    [70, 0.95],
    [69.9, 0.85],
    [30, 0.85],
    [29.9, 0.7],
    [13, 0.7],
    [12.9, 0.5],
    [7, 0.5],
    [6.9, 0.3],
    [3, 0.3],
    [0.5, 0.3],
  ])('model factor of a %sB model is %s', (parameterCountB, factor) => {
    // The tier is deliberately the wrong one: a known parameter count wins.
    expect(modelFactorOf({ sizeTier: 'frontier', parameterCountB })).toBe(factor);
  });

  it.each([
    ['llama3.2:3b', 0.3],
    ['llama3.1:8b', 0.5],
    ['mixtral:8x7b', 0.85],
    ['llama3.1:70b', 0.95],
    ['claude-opus-4-5', 0.95],
    ['gpt-5', 0.95],
    ['gemini-2.5-pro', 0.95],
    ['gpt-4o', 0.85],
    ['gpt-4o-mini', 0.7],
    ['gpt-5-nano', 0.5],
    ['some-unknown-model', 0.7],
  ])('catalog model %s has factor %s (hosted frontier models count as ≥ 70B)', (id, factor) => {
    expect(modelFactorOf(model(id))).toBe(factor);
  });

  it('tier-only models use the documented tier mapping', () => {
    expect(SIZE_TIER_FACTORS).toEqual({ frontier: 0.95, large: 0.85, medium: 0.7, small: 0.5 });
    expect(modelFactorOf({ sizeTier: 'small' })).toBe(0.5);
    expect(modelFactorOf({ sizeTier: 'large', parameterCountB: Number.NaN })).toBe(0.85);
  });

  it.each([
    [0, 1],
    [1, 0.85],
    [2, 0.7],
    [4, 0.4],
    [5, 0.3],
    [12, 0.3],
    [-3, 1],
  ])('compression penalty after %s compactions is %s (never below 30%%)', (compactions, penalty) => {
    expect(compressionPenaltyOf(compactions)).toBe(penalty);
  });

  it.each([
    [100, 'high', '🟢'],
    [85, 'high', '🟢'],
    [84.9, 'medium', '🟡'],
    [60, 'medium', '🟡'],
    [59.9, 'low', '🟠'],
    [40, 'low', '🟠'],
    [39.9, 'critical', '🔴'],
    [0, 'critical', '🔴'],
  ])('a score of %s is %s %s', (score, level, emoji) => {
    expect(reliabilityLevelOf(score)).toMatchObject({ level, emoji });
  });

  it('a fresh session on a frontier model is 95% high, with no warning', () => {
    expect(reliabilityOf({ model: model('claude-sonnet-4-5'), compactions: 0 })).toEqual({
      score: 95,
      level: 'high',
      emoji: '🟢',
      label: 'High',
      description: 'Excellent reliability',
      badge: '🟢 95%',
      warning: null,
      factors: { modelFactor: 0.95, compressionPenalty: 1, contextConfidence: 1 },
    });
  });

  it('85 is high and 84.9 is medium: a 30B model, before and after losing one fact in 833', () => {
    const m = { sizeTier: 'medium' as const, parameterCountB: 32 };
    expect(reliabilityOf({ model: m, compactions: 0 })).toMatchObject({ score: 85, level: 'high', badge: '🟢 85%' });
    const after = reliabilityOf({ model: m, compactions: 0, contextConfidence: 1 - 1 / 833 });
    expect(after).toMatchObject({ score: 84.9, level: 'medium', emoji: '🟡', badge: '🟡 84%', warning: null });
  });

  it('score = modelFactor × compressionPenalty × contextConfidence, as a percentage with one decimal', () => {
    const r = reliabilityOf({ model: model('gpt-5'), compactions: 2, contextConfidence: 0.9 });
    expect(r.factors).toEqual({ modelFactor: 0.95, compressionPenalty: 0.7, contextConfidence: 0.9 });
    expect(r.score).toBe(59.9);
    expect(r.level).toBe('low');
  });

  it("low reliability carries seed 004's compression warning", () => {
    const r = reliabilityOf({ model: model('llama3.1:70b'), compactions: 3 });
    expect(r).toMatchObject({ score: 52.3, level: 'low', emoji: '🟠' });
    expect(r.warning).toBe(
      [
        '⚠️ Context Compression Warning',
        'Your model (llama3.1:70b) has compressed the conversation 3 times.',
        'Models may lose context accuracy after multiple compressions.',
        '',
        'Recommendations:',
        '- Continue if making good progress',
        '- Start new conversation if seeing hallucinations',
        '- Use larger model for complex long-term tasks',
      ].join('\n'),
    );
  });

  it('below 40% the warning recommends starting a new conversation (seed 004 "Poor Reliability")', () => {
    const r = reliabilityOf({ model: model('llama3.2:3b'), compactions: 3, contextConfidence: 0.5 });
    expect(r).toMatchObject({ score: 8.3, level: 'critical', emoji: '🔴', label: 'Critical' });
    expect(r.warning).toContain('Your model (llama3.2:3b) has compressed the conversation 3 times.');
    expect(r.warning).toContain('Small models may lose context accuracy after multiple compressions.');
    expect(r.warning).toContain('50% of the pinned facts');
    expect(r.warning).toContain('Reliability is below 40%: start a new conversation.');
    expect(r.warning).toContain('- Use larger model (13B+ recommended)');
  });

  it('a small model is critical even before any compaction, and says so without counting compactions', () => {
    const r = reliabilityOf({ model: { sizeTier: 'small', parameterCountB: 3 }, compactions: 0 });
    expect(r).toMatchObject({ score: 30, level: 'critical' });
    expect(r.warning).toContain('Your model has not compressed the conversation yet.');
  });

  it('the penalty floor holds however many compactions: a frontier model never drops below 28.5% on compactions alone', () => {
    expect(reliabilityOf({ model: model('o3'), compactions: 50 })).toMatchObject({ score: 28.5, factors: { compressionPenalty: COMPRESSION_PENALTY_FLOOR } });
  });

  it('the confidence is clamped to 0–1 and is 1.0 when not given', () => {
    expect(reliabilityOf({ model: model('gpt-5'), compactions: 1, contextConfidence: 7 }).factors.contextConfidence).toBe(1);
    expect(reliabilityOf({ model: model('gpt-5'), compactions: 1, contextConfidence: -1 })).toMatchObject({ score: 0, level: 'critical' });
    expect(reliabilityOf({ model: model('gpt-5'), compactions: 1, contextConfidence: Number.NaN }).factors.contextConfidence).toBe(1);
  });

  it('property: the score stays in 0–95, never rises with more compactions or less confidence, and never falls below the penalty floor', () => {
    const tier = fc.constantFrom('small' as const, 'medium' as const, 'large' as const, 'frontier' as const);
    const size = fc.option(fc.double({ min: 0.1, max: 1000, noNaN: true }), { nil: undefined });
    fc.assert(
      fc.property(tier, size, fc.nat(40), fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }), (sizeTier, parameterCountB, n, c1, c2) => {
        const m = { sizeTier, parameterCountB };
        const r = reliabilityOf({ model: m, compactions: n, contextConfidence: Math.max(c1, c2) });
        expect(r.score).toBeGreaterThanOrEqual(0);
        expect(r.score).toBeLessThanOrEqual(95);
        expect(reliabilityOf({ model: m, compactions: n + 1, contextConfidence: Math.max(c1, c2) }).score).toBeLessThanOrEqual(r.score);
        expect(reliabilityOf({ model: m, compactions: n, contextConfidence: Math.min(c1, c2) }).score).toBeLessThanOrEqual(r.score);
        const floor = modelFactorOf(m) * COMPRESSION_PENALTY_FLOOR * Math.max(c1, c2) * 100;
        expect(r.score).toBeGreaterThanOrEqual(Math.floor(floor * 10) / 10);
        expect(reliabilityLevelOf(r.score).level).toBe(r.level);
      }),
      { numRuns: 300 },
    );
  });
});
