import { RELIABILITY_BANDS, reliabilityBadge } from './session-reliability';

describe('reliabilityBadge', () => {
  it("shows seed 004's badge with the score and each factor", () => {
    const badge = reliabilityBadge({
      score: 59.5,
      level: 'low',
      emoji: '🟠',
      label: 'Low',
      warning: '⚠️ Context Compression Warning',
      factors: { modelFactor: 0.85, compressionPenalty: 0.7, contextConfidence: 1 },
    });
    expect(badge.text).toBe('🟠 Low · 60');
    expect(badge.accessibleName).toBe('Reliability 60 of 100, low');
    expect(badge.warning).toBe('⚠️ Context Compression Warning');
    expect(badge.factors.map((f) => [f.label, f.text])).toEqual([
      ['Model factor', '0.85'],
      ['Compression penalty', '0.70'],
      ['Context confidence', '1.00'],
    ]);
  });

  it('has no warning above 60 and keeps the bands in the seed order', () => {
    const badge = reliabilityBadge({ score: 95, level: 'high', emoji: '🟢', label: 'High', factors: { modelFactor: 0.95, compressionPenalty: 1, contextConfidence: 1 } });
    expect(badge.warning).toBeNull();
    expect(RELIABILITY_BANDS.map((b) => `${b.emoji} ${b.range}`)).toEqual(['🟢 ≥ 85', '🟡 60–84', '🟠 40–59', '🔴 < 40']);
  });
});
