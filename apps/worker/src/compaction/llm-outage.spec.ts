import { isLlmOutage, llmHoldRetryMs, LLM_RETRY_MAX_DELAY_MS, llmRetryDelayMs } from './llm-outage';

describe('LLM outages', () => {
  it('retries transport failures only', () => {
    for (const reason of ['llm-network', 'llm-server', 'llm-rate-limited', 'llm-timeout']) expect(isLlmOutage(reason)).toBe(true);
    for (const reason of ['llm-auth', 'llm-bad-request', 'llm-malformed', 'llm-aborted', 'empty-summary', undefined]) expect(isLlmOutage(reason)).toBe(false);
  });

  it('doubles the delay per run up to the cap, jittered over its upper half', () => {
    expect([1, 2, 3, 4].map((run) => llmRetryDelayMs(run, 5_000, () => 1))).toEqual([5_000, 10_000, 20_000, 40_000]);
    expect(llmRetryDelayMs(5, 5_000, () => 1)).toBe(LLM_RETRY_MAX_DELAY_MS);
    expect(llmRetryDelayMs(500, 5_000, () => 1)).toBe(LLM_RETRY_MAX_DELAY_MS);
    expect(llmRetryDelayMs(1, 5_000, () => 0)).toBe(2_500);
  });
});

describe('llmHoldRetryMs (an llm-outage hold the summarizer probe cannot confirm)', () => {
  it('waits the base after the first hold, doubled per hold in a row, capped at 6 h', () => {
    expect([1, 2, 3, 4].map((n) => llmHoldRetryMs(n, 300_000))).toEqual([300_000, 600_000, 1_200_000, 2_400_000]);
    expect(llmHoldRetryMs(8, 300_000)).toBe(6 * 3600 * 1000);
    expect(llmHoldRetryMs(1_000, 300_000)).toBe(6 * 3600 * 1000);
    expect(llmHoldRetryMs(0, 300_000)).toBe(300_000);
  });
});
