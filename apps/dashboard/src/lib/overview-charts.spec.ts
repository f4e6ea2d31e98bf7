import {
  compactionDayPoints,
  compactionsSummary,
  hasActivity,
  llmCostPoints,
  llmCostSummary,
  nearBudgetRows,
  ratioBucketPoints,
  ratioSummary,
  tokensSavedPoints,
  tokensSavedSummary,
  type AnalyticsSummary,
} from './overview-charts';
import { analyticsSummarySchema } from './overview-schema';

const day = (d: string, counts: Partial<AnalyticsSummary['compactionsPerDay'][number]> = {}) => ({ day: d, count: 0, succeeded: 0, skipped: 0, failed: 0, tokensSaved: 0, llmCalls: 0, llmTokens: 0, llmCostUsd: 0, ...counts });

const buckets = (counts: number[]) => counts.map((count, i) => ({ from: i / 10, to: (i + 1) / 10, count }));

function summary(overrides: Partial<AnalyticsSummary> = {}): AnalyticsSummary {
  return {
    from: '2026-11-17T00:00:00.000Z',
    to: '2026-11-24T00:00:00.000Z',
    tokensSaved: 0,
    compactions: { total: 0, succeeded: 0, skipped: 0, failed: 0, queued: 0, running: 0 },
    compressionRatios: { buckets: buckets(Array(10).fill(0)), median: null },
    compactionsPerDay: [day('2026-11-17'), day('2026-11-18')],
    llm: { calls: 0, inputTokens: 0, outputTokens: 0, costUsd: 0 },
    failures: { total: 0, perDay: [], recent: [] },
    queueDepth: { waiting: 0, active: 0, delayed: 0, failed: 0 },
    sessionsNearBudget: { threshold: 0.8, count: 0, sessions: [] },
    ...overrides,
  };
}

describe('compactions per day', () => {
  const days = [
    day('2026-11-22', { count: 5, succeeded: 3, skipped: 1, failed: 1, tokensSaved: 9000 }),
    day('2026-11-23', { count: 4, succeeded: 2, skipped: 0, failed: 0, tokensSaved: 1500 }),
    day('2026-11-24'),
  ];

  it('has one point per day, in order, with the jobs not finished yet as in progress', () => {
    expect(compactionDayPoints(days)).toEqual([
      { day: '2026-11-22', label: 'Nov 22', succeeded: 3, skipped: 1, failed: 1, inProgress: 0, total: 5 },
      { day: '2026-11-23', label: 'Nov 23', succeeded: 2, skipped: 0, failed: 0, inProgress: 2, total: 4 },
      { day: '2026-11-24', label: 'Nov 24', succeeded: 0, skipped: 0, failed: 0, inProgress: 0, total: 0 },
    ]);
  });

  it('sums it up in a sentence, naming the busiest day', () => {
    expect(compactionsSummary(compactionDayPoints(days))).toBe('9 compactions in 3 days: 5 succeeded, 1 skipped, 1 failed, 2 in progress. Busiest day: Nov 22 (5).');
    expect(compactionsSummary(compactionDayPoints([day('2026-11-24')]))).toBe('No compactions in these 1 day.');
  });

  it('gives tokens saved per day and their total', () => {
    const points = tokensSavedPoints(days);
    expect(points.map((p) => p.tokensSaved)).toEqual([9000, 1500, 0]);
    expect(tokensSavedSummary(points)).toBe('10,500 tokens saved in 3 days; most on Nov 22 (9,000).');
    expect(tokensSavedSummary(tokensSavedPoints([day('2026-11-24')]))).toBe('No tokens saved in these 1 day.');
  });
});

describe('summarizer cost per day', () => {
  it('has one point per day with its cost, calls and tokens, and names the costliest day', () => {
    const days = [day('2026-11-21'), day('2026-11-22', { llmCalls: 3, llmTokens: 9000, llmCostUsd: 0.0123 }), day('2026-11-23', { llmCalls: 1, llmTokens: 2000, llmCostUsd: 0.004 })];
    const points = llmCostPoints(days);
    expect(points.map((p) => [p.day, p.costUsd, p.calls, p.tokens])).toEqual([
      ['2026-11-21', 0, 0, 0],
      ['2026-11-22', 0.0123, 3, 9000],
      ['2026-11-23', 0.004, 1, 2000],
    ]);
    expect(llmCostSummary(points)).toBe('$0.02 for 4 summarizer calls in 3 days; most on Nov 22 ($0.01).');
  });

  it('says when the summarizer was free or not called', () => {
    expect(llmCostSummary(llmCostPoints([day('2026-11-22')]))).toBe('No summarizer calls in this range (1 day).');
    expect(llmCostSummary(llmCostPoints([day('2026-11-22', { llmCalls: 5, llmTokens: 800 })]))).toBe(
      '$0.00 for 5 summarizer calls in 1 day (the summarizer is free: the local one, or no prices known).',
    );
  });
});

describe('compression ratio histogram', () => {
  it('labels buckets as the share kept and marks the one holding the median', () => {
    const points = ratioBucketPoints({ buckets: buckets([0, 0, 1, 4, 2, 0, 0, 0, 0, 0]), median: 0.34 });
    expect(points).toHaveLength(10);
    expect(points[3]).toEqual({ label: '30–40%', from: 0.3, to: 0.4, count: 4, hasMedian: true, plain: 0, median: 4 });
    expect(points[2]).toMatchObject({ label: '20–30%', hasMedian: false, plain: 1, median: 0 });
    expect(points.filter((p) => p.hasMedian)).toHaveLength(1);
    expect(ratioSummary(points, 0.34)).toBe('7 succeeded compactions; the median kept 34% of the context (saved 66%).');
  });

  it('puts a median of exactly 1 in the last bucket, and a bucket edge in the upper bucket', () => {
    expect(ratioBucketPoints({ buckets: buckets([0, 0, 0, 0, 0, 0, 0, 0, 0, 1]), median: 1 })[9].hasMedian).toBe(true);
    const edge = ratioBucketPoints({ buckets: buckets([0, 0, 0, 0, 0, 2, 0, 0, 0, 0]), median: 0.5 });
    expect(edge.findIndex((p) => p.hasMedian)).toBe(5);
  });

  it('marks nothing without a median', () => {
    const points = ratioBucketPoints({ buckets: buckets(Array(10).fill(0)), median: null });
    expect(points.some((p) => p.hasMedian)).toBe(false);
    expect(ratioSummary(points, null)).toBe('No succeeded compactions in this range.');
  });
});

describe('sessions near their budget', () => {
  it('links each session to its page and caps the bar at 100%', () => {
    const rows = nearBudgetRows({
      threshold: 0.8,
      count: 2,
      sessions: [
        { id: 'run:42/x', model: 'gpt-4o', utilization: 1.07, contextTokens: 4300, lastActivityAt: '2026-11-23T10:00:00Z' },
        { id: 'agent-1', model: 'claude-sonnet-4-5', utilization: 0.815, contextTokens: 3300, lastActivityAt: '2026-11-23T09:00:00Z' },
      ],
    });
    expect(rows.map((r) => [r.href, r.barPercent, r.percentText])).toEqual([
      ['/sessions/run%3A42%2Fx', 100, '107%'],
      ['/sessions/agent-1', 82, '82%'],
    ]);
  });
});

describe('activity and the runtime check', () => {
  it('has activity once anything was compacted or the summarizer was called', () => {
    expect(hasActivity(summary())).toBe(false);
    expect(hasActivity(summary({ compactions: { total: 1, succeeded: 0, skipped: 0, failed: 0, queued: 1, running: 0 } }))).toBe(true);
  });

  it('accepts an API summary and rejects one that breaks the contract', () => {
    expect(analyticsSummarySchema.safeParse(summary()).success).toBe(true);
    expect(analyticsSummarySchema.safeParse({ ...summary(), tokensSaved: '12' }).success).toBe(false);
    expect(analyticsSummarySchema.safeParse({ ...summary(), compactionsPerDay: [{ day: 'Nov 3', count: 1 }] }).success).toBe(false);
  });
});
