import { ValidationFailed } from '../errors';
import { recalibrated, assertBudgetAboveFloor, budgetFloor, budgetUse, compactionDue, compactionHold, computeBudget, defaultOutputReserve, safetyMargin, sessionBudget, thresholdTokens } from './budget';

describe('budget (SPEC.md "Budget")', () => {
  it('subtracts reserve, tool schemas and the safety margin from the window', () => {
    const b = computeBudget({ contextWindow: 200_000, outputReserve: 8_192, toolSchemaTokens: 1_000 });
    expect(b).toEqual({ window: 200_000, reserve: 8_192, toolSchemaTokens: 1_000, safetyMargin: 4_000, calibrationTokens: 0, budget: 186_808, available: 186_808 });
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

  it('places the threshold by preset: 90% of budget (balanced), 50% (factor3), 80% of available (checkpoint-aging)', () => {
    const b = computeBudget({ contextWindow: 100_000, outputReserve: 0, systemTokens: 10_000 });
    expect(b.budget).toBe(98_000);
    expect(thresholdTokens(b, { preset: 'balanced', overrides: {} })).toBe(88_200);
    expect(thresholdTokens(b, { preset: 'factor3', overrides: {} })).toBe(49_000);
    expect(thresholdTokens(b, { preset: 'checkpoint-aging', overrides: {} })).toBe(70_400);
    expect(thresholdTokens(b, { preset: 'balanced', overrides: { triggerFraction: 0.6 } })).toBe(58_800);
  });

  describe('sessionBudget: the one budget', () => {
    const session = { contextWindow: 200_000, outputReserve: 16_384, requestMaxTokens: 32_000, toolSchemaTokens: 18_600, systemTokens: 3_000, calibration: 1 };

    it("uses what the session remembers of its requests, so the worker compacts to the proxy's budget", () => {
      const remembered = sessionBudget(session);
      expect(remembered.reserve).toBe(32_000);
      expect(remembered.budget).toBe(200_000 - 32_000 - 18_600 - 4_000);
      expect(remembered.available).toBe(remembered.budget - 3_000);
      // The proxy passes the request's own limits; the same request gives the same budget.
      expect(sessionBudget(session, { maxTokens: 32_000, toolSchemaTokens: 18_600 })).toEqual(remembered);
      // A request's own limits win over the remembered ones.
      expect(sessionBudget(session, { maxTokens: 64_000, toolSchemaTokens: 0 }).budget).toBe(200_000 - 64_000 - 4_000);
    });

    it('without remembered limits it is the window less the reserve and margin', () => {
      expect(sessionBudget({ contextWindow: 32_000, outputReserve: 8_000 }).budget).toBe(32_000 - 8_000 - 640);
    });

    it('shrinks when the upstream reports more input tokens than we estimated, and grows within bounds when fewer', () => {
      const base = sessionBudget({ contextWindow: 100_000, outputReserve: 10_000 }).budget;
      const high = sessionBudget({ contextWindow: 100_000, outputReserve: 10_000, calibration: 1.25 });
      expect(high.budget).toBe(Math.floor((100_000 - 10_000 - 2_000) / 1.25));
      expect(high.calibrationTokens).toBe(base - high.budget);
      expect(sessionBudget({ contextWindow: 100_000, outputReserve: 10_000, calibration: 0.5 }).budget).toBe(Math.floor(88_000 / 0.8));
      expect(sessionBudget({ contextWindow: 100_000, outputReserve: 10_000, calibration: Number.NaN }).budget).toBe(base);
    });

    it('says where the budget went', () => {
      expect(budgetUse(sessionBudget(session))).toBe('window 200,000 − output reserve/max_tokens 32,000 − tool schemas 18,600 − safety margin 4,000 = 145,400');
    });
  });

  describe('default reserve and floor', () => {
    it("caps the model's maximum output at 25% of the window", () => {
      expect(defaultOutputReserve(32_768, 1_047_576)).toBe(32_768);
      expect(defaultOutputReserve(32_768, 32_000)).toBe(8_000);
    });

    it('floors the budget at 10% of the window or 2,048 tokens', () => {
      expect(budgetFloor(200_000)).toBe(20_000);
      expect(budgetFloor(8_192)).toBe(2_048);
      expect(budgetFloor(1_024)).toBe(512);
    });

    it('refuses a configuration under the floor, naming both fields with the numbers', () => {
      expect(() => assertBudgetAboveFloor({ contextWindow: 32_000, outputReserve: 8_000 })).not.toThrow();
      let error: unknown;
      try {
        assertBudgetAboveFloor({ contextWindow: 32_000, outputReserve: 32_768 });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ValidationFailed);
      const problems = (error as ValidationFailed).problems;
      expect(problems.map((p) => p.field)).toEqual(['contextWindow', 'outputReserve']);
      expect(problems[0].message).toContain('budget of 0 tokens');
      expect(problems[0].message).toContain('floor of 3,200');
      expect(problems[1].message).toBe(`must be at most ${(32_000 - 640 - 3_200).toLocaleString('en-US')} for this window (it ${problems[0].message.slice('32,000 with this output reserve '.length)})`);
    });
  });

  describe('no compaction loops', () => {
    it('holds the next automatic compaction until the context grows by a tenth of the budget', () => {
      const b = computeBudget({ contextWindow: 32_000, outputReserve: 8_000 });
      const hold = compactionHold(b, 20_000);
      expect(hold).toBe(20_000 + Math.ceil(b.budget * 0.1));
      expect(compactionDue(20_500, 18_000, hold)).toBe(false);
      expect(compactionDue(hold, 18_000, hold)).toBe(true);
      expect(compactionDue(17_999, 18_000, null)).toBe(false);
      expect(compactionDue(18_000, 18_000, null)).toBe(true);
      expect(compactionHold(computeBudget({ contextWindow: 4_096, outputReserve: 1_024 }), 100)).toBe(1_100);
    });
  });

  describe('recalibration from the upstream usage', () => {
    it('moves half way to the reported ratio, within bounds, and not at all for small drifts', () => {
      expect(recalibrated(1, 10_000, 12_000)).toBe(1.1);
      expect(recalibrated(1.1, 10_000, 12_000)).toBe(1.15);
      expect(recalibrated(1, 10_000, 10_100)).toBeUndefined();
      expect(recalibrated(1, 1_000, 100_000)).toBe(1.25);
      expect(recalibrated(1, 10_000, 1)).toBe(0.9);
      expect(recalibrated(1, 0, 100)).toBeUndefined();
      // Exact counts (the model's own tokenizer) only ever shrink the budget.
      expect(recalibrated(1, 10_000, 1, true)).toBeUndefined();
      expect(recalibrated(1.2, 10_000, 1, true)).toBe(1.1);
      expect(recalibrated(1, 10_000, 12_000, true)).toBe(1.1);
      // Converges on a steady ratio, then stops writing.
      let c = 1;
      for (let i = 0; i < 20; i++) c = recalibrated(c, 10_000, 13_000) ?? c;
      expect(c).toBeGreaterThan(1.26);
      expect(recalibrated(c, 10_000, 13_000)).toBeUndefined();
    });
  });
});
