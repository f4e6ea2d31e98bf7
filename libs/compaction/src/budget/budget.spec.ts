import { computeBudget, safetyMargin, thresholdTokens } from './budget';

describe('budget (SPEC.md "Budget")', () => {
  it('subtracts reserve, tool schemas and the safety margin from the window', () => {
    const b = computeBudget({ contextWindow: 200_000, outputReserve: 8_192, toolSchemaTokens: 1_000 });
    expect(b).toEqual({ window: 200_000, reserve: 8_192, safetyMargin: 4_000, budget: 186_808, available: 186_808 });
  });

  it("uses the request's max_tokens when it is larger than the reserve", () => {
    expect(computeBudget({ contextWindow: 128_000, outputReserve: 4_096, maxTokens: 16_000 }).reserve).toBe(16_000);
    expect(computeBudget({ contextWindow: 128_000, outputReserve: 4_096, maxTokens: 100 }).reserve).toBe(4_096);
  });

  it('available excludes system prompt, goal block and checkpoints (seed 004 dynamic budget)', () => {
    const b = computeBudget({ contextWindow: 32_000, outputReserve: 2_000, systemTokens: 500, goalTokens: 200, checkpointTokens: 1_200 });
    expect(b.available).toBe(b.budget - 1_900);
  });

  it('never goes negative', () => {
    expect(computeBudget({ contextWindow: 1_000, outputReserve: 4_096 }).budget).toBe(0);
    expect(safetyMargin(1_000)).toBe(256);
  });

  it('places the threshold by preset: 80% of budget (balanced), 50% (factor3), 80% of available (checkpoint-aging)', () => {
    const b = computeBudget({ contextWindow: 100_000, outputReserve: 0, systemTokens: 10_000 });
    expect(b.budget).toBe(98_000);
    expect(thresholdTokens(b, { preset: 'balanced', overrides: {} })).toBe(78_400);
    expect(thresholdTokens(b, { preset: 'factor3', overrides: {} })).toBe(49_000);
    expect(thresholdTokens(b, { preset: 'checkpoint-aging', overrides: {} })).toBe(70_400);
    expect(thresholdTokens(b, { preset: 'balanced', overrides: { triggerFraction: 0.6 } })).toBe(58_800);
  });
});
