import { axisTicks, lastCompactionJobId, thinnedCaption, usageChartData, type UsagePoint } from './session-usage';

const at = (n: number) => new Date(Date.UTC(2026, 10, 23, 14, 0, n)).toISOString();
const append = (seq: number, tokens: number): UsagePoint => ({ seq, kind: 'append', contextTokens: tokens, budget: 13_680, threshold: 10_944, at: at(seq) });
const compaction = (seq: number, before: number, after: number, jobId: string): UsagePoint => ({
  seq,
  kind: 'compaction',
  contextTokens: after,
  budget: 13_680,
  threshold: 10_944,
  at: at(seq),
  compaction: { jobId, tokensBefore: before, tokensAfter: after, trigger: 'threshold' },
});
const restore = (seq: number, tokens: number): UsagePoint => ({ seq, kind: 'restore', contextTokens: tokens, budget: 13_680, threshold: 10_944, at: at(seq) });

describe('usageChartData', () => {
  const points = [append(8, 3_108), append(16, 5_261), append(40, 12_676), compaction(40, 12_676, 6_801, 'job-1'), append(48, 8_000), restore(48, 13_000)];

  it('keeps every point in order with budget and trigger lines, and marks compactions and restores', () => {
    const data = usageChartData({ points, budget: 13_680, threshold: 10_944, contextTokens: 13_000 });
    expect(data.points.map((p) => [p.x, p.seq, p.kind, p.tokens])).toEqual([
      [0, 8, 'append', 3_108],
      [1, 16, 'append', 5_261],
      [2, 40, 'append', 12_676],
      [3, 40, 'compaction', 6_801],
      [4, 48, 'append', 8_000],
      [5, 48, 'restore', 13_000],
    ]);
    expect(data.points.every((p) => p.budget === 13_680 && p.threshold === 10_944)).toBe(true);
    expect(data.compactions).toEqual([
      expect.objectContaining({ x: 3, seq: 40, jobId: 'job-1', tokensBefore: 12_676, label: 'Compaction (threshold) at message 40: 12,676 → 6,801 tokens' }),
    ]);
    expect(data.restores.map((r) => [r.x, r.kind, r.label])).toEqual([[5, 'restore', 'Restore at message 48: context 13,000 tokens']]);
    expect(data).toMatchObject({ totalPoints: 6, appends: 4, thinned: false, yMax: 15_000 });
    expect(data.summary).toBe(
      '6 points (4 appends, 1 compaction, 1 restore) up to message 48. Context now 13,000 of 13,680 budget tokens (95%); compaction triggers at 10,944 tokens. ' +
        'Last compaction: Compaction (threshold) at message 40: 12,676 → 6,801 tokens, 2026-11-23 14:00:40 UTC.',
    );
  });

  it('counts goal updates apart from appends', () => {
    const goal: UsagePoint = { seq: 48, kind: 'goal_update', contextTokens: 8_015, budget: 13_680, threshold: 10_944, at: at(49) };
    const data = usageChartData({ points: [...points, goal], budget: 13_680, threshold: 10_944, contextTokens: 8_015 });
    expect(data).toMatchObject({ totalPoints: 7, appends: 4, goalUpdates: 1 });
    expect(data.points.at(-1)).toMatchObject({ kind: 'goal_update', tokens: 8_015 });
    expect(data.summary).toMatch(/^7 points \(4 appends, 1 compaction, 1 restore, 1 goal update\) up to message 48\./);
  });

  it('says so when there is nothing yet', () => {
    const data = usageChartData({ points: [], budget: 13_680, threshold: 10_944, contextTokens: 0 });
    expect(data.points).toEqual([]);
    expect(data.summary).toBe('No usage yet: no messages have been appended.');
  });

  it('draws a series the API downsampled at the positions it gives, and counts the appends it left out', () => {
    // 5,000 points drawn from 7: the API keeps every marker (the points before them too) and each stretch's highest and lowest append.
    const drawn: UsagePoint[] = [
      { ...append(1, 3_000), position: 0 },
      { ...append(999, 12_000), position: 998 },
      { ...compaction(999, 12_000, 4_000, 'job-1'), position: 999 },
      { ...append(2_500, 9_000), position: 2_500 },
      { ...append(4_998, 12_500), position: 4_997 },
      { ...restore(4_998, 6_000), position: 4_998 },
      { ...append(4_999, 6_100), position: 4_999 },
    ];
    const data = usageChartData({ points: drawn, budget: 13_680, threshold: 10_944, contextTokens: 6_100, totalPoints: 5_000, stretches: 2 });
    expect(data.points.map((p) => p.x)).toEqual([0, 998, 999, 2_500, 4_997, 4_998, 4_999]);
    expect(data.compactions.map((m) => [m.x, m.seq])).toEqual([[999, 999]]);
    expect(data.restores.map((m) => [m.x, m.seq])).toEqual([[4_998, 4_998]]);
    expect(data).toMatchObject({ totalPoints: 5_000, appends: 4_998, thinned: true, stretches: 2 });
    expect(data.summary).toMatch(/^5,000 points \(4,998 appends, 1 compaction, 1 restore\) up to message 4999\./);
    expect(data.ticks.at(-1)).toBe(4_999);
    expect(thinnedCaption(data)).toBe(
      '7 of 5,000 points drawn over the whole history: 2 stretches of about 2,500 points, each drawn by its highest and lowest append, with every compaction, restore and goal update and the point before each.',
    );
  });

  it('a whole series is not thinned', () => {
    const data = usageChartData({ points: points.map((p, position) => ({ ...p, position })), budget: 13_680, threshold: 10_944, contextTokens: 13_000, totalPoints: 6 });
    expect(data).toMatchObject({ totalPoints: 6, appends: 4, thinned: false, stretches: null });
  });
});

describe('lastCompactionJobId', () => {
  it('takes the newest compaction marker, else the newest pre-compaction snapshot', () => {
    expect(lastCompactionJobId([compaction(40, 1, 1, 'a'), append(48, 1), compaction(56, 1, 1, 'b'), restore(60, 1)], [])).toBe('b');
    const snapshots = [
      { kind: 'pre-compaction', compactionJobId: 'old', createdAt: at(1) },
      { kind: 'pre-compaction', compactionJobId: 'new', createdAt: at(2) },
      { kind: 'manual', compactionJobId: null, createdAt: at(3) },
    ];
    expect(lastCompactionJobId([append(8, 1)], snapshots)).toBe('new');
    expect(lastCompactionJobId([append(8, 1)], [])).toBeNull();
  });
});

describe('axisTicks', () => {
  it('labels about eight spread points, first and last included, each seq once', () => {
    const points = Array.from({ length: 40 }, (_, x) => ({ x, seq: (x + 1) * 8 }));
    expect(axisTicks(points)).toEqual([0, 5, 10, 15, 20, 25, 30, 35, 39]);
    expect(axisTicks([{ x: 0, seq: 8 }, { x: 1, seq: 72 }, { x: 2, seq: 72 }])).toEqual([0, 1]);
    expect(axisTicks([])).toEqual([]);
  });
});
