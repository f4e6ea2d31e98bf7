import { axisTicks, lastCompactionJobId, usageChartData, type UsagePoint } from './session-usage';

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

  it('thins a very long series but keeps every marker, the peaks and the last point', () => {
    const long: UsagePoint[] = [];
    for (let i = 1; i <= 5_000; i += 1) long.push(i % 1_000 === 0 ? compaction(i, 12_000, 4_000, `job-${i}`) : append(i, 4_000 + (i % 1_000) * 8));
    const data = usageChartData({ points: long, budget: 13_680, threshold: 10_944, contextTokens: 4_000 }, 200);
    expect(data.thinned).toBe(true);
    expect(data.points.length).toBeLessThanOrEqual(210);
    expect(data.totalPoints).toBe(5_000);
    expect(data.points.filter((p) => p.kind === 'compaction').map((p) => p.seq)).toEqual([1_000, 2_000, 3_000, 4_000, 5_000]);
    expect(data.points.at(-1)?.seq).toBe(5_000);
    expect(Math.max(...data.points.map((p) => p.tokens))).toBe(4_000 + 999 * 8);
  });

  it('keeps every peak and every dip wider than a bucket (min and max per bucket), at any length', () => {
    // 20,000 appends: a slow sawtooth with 40 teeth, each peak and dip a single point.
    const long: UsagePoint[] = [];
    for (let i = 1; i <= 20_000; i += 1) long.push(append(i, i % 500 === 250 ? 15_000 : i % 500 === 0 ? 1_000 : 6_000 + (i % 7)));
    const data = usageChartData({ points: long, budget: 16_000, threshold: 12_800, contextTokens: 1_000 }, 600);
    expect(data.points.length).toBeLessThanOrEqual(600);
    const kept = new Set(data.points.map((p) => p.seq));
    const peaks = long.filter((p) => p.contextTokens === 15_000).map((p) => p.seq);
    const dips = long.filter((p) => p.contextTokens === 1_000).map((p) => p.seq);
    expect(peaks).toHaveLength(40);
    expect(peaks.filter((seq) => !kept.has(seq))).toEqual([]);
    expect(dips.filter((seq) => !kept.has(seq))).toEqual([]);
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
