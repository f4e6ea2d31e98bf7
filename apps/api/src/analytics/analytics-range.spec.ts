import { ValidationFailed } from '@compactor/compaction';
import type { JobDay } from '@compactor/persistence';
import { denseDays, ratioBuckets, resolveRange, summaryQuerySchema } from './analytics-range';

const NOW = new Date('2026-11-23T15:30:00.000Z');
const range = (query: Record<string, string>) => resolveRange(summaryQuerySchema.parse(query), NOW);
const problems = (query: Record<string, string>) => {
  try {
    range(query);
  } catch (error) {
    if (error instanceof ValidationFailed) return error.problems.map((p) => p.field);
    throw error;
  }
  return [];
};
const day = (d: string, total: number): JobDay => ({
  day: d,
  total,
  succeeded: total,
  skipped: 0,
  failed: 0,
  queued: 0,
  running: 0,
  tokensSaved: 100 * total,
  llmCalls: 0,
  llmInputTokens: 0,
  llmOutputTokens: 0,
  llmCostUsd: 0,
});

describe('resolveRange', () => {
  it('defaults to the 30 days before now', () => {
    expect(range({})).toEqual({ from: new Date('2026-10-24T15:30:00.000Z'), to: NOW });
    expect(range({ to: '2026-11-01T00:00:00Z' })).toEqual({ from: new Date('2026-10-02T00:00:00.000Z'), to: new Date('2026-11-01T00:00:00.000Z') });
  });

  it('starts a date-only `from` at 00:00 UTC and includes the whole day of a date-only `to`', () => {
    expect(range({ from: '2026-03-01', to: '2026-03-01' })).toEqual({ from: new Date('2026-03-01T00:00:00Z'), to: new Date('2026-03-02T00:00:00Z') });
  });

  it('takes date-times with their offset as instants', () => {
    expect(range({ from: '2026-03-01T02:00:00+02:00', to: '2026-03-01T01:00:00Z' })).toEqual({
      from: new Date('2026-03-01T00:00:00Z'),
      to: new Date('2026-03-01T01:00:00Z'),
    });
  });

  it('refuses `from` not before `to` and ranges over 366 days, naming the field', () => {
    expect(problems({ from: '2026-03-02', to: '2026-03-01' })).toEqual(['from']);
    expect(problems({ from: '2026-03-01T00:00:00Z', to: '2026-03-01T00:00:00Z' })).toEqual(['from']);
    expect(problems({ from: '2026-11-24' })).toEqual(['from']);
    expect(problems({ from: '2024-01-01', to: '2024-12-31' })).toEqual([]);
    expect(problems({ from: '2024-01-01', to: '2025-01-01' })).toEqual(['to']);
  });

  it('accepts only ISO dates and date-times with a time zone', () => {
    for (const bad of ['yesterday', '2026-13-01', '2026-02-30', '2026-03-01T10:00:00', '1700000000']) {
      expect([bad, summaryQuerySchema.safeParse({ from: bad }).success]).toEqual([bad, false]);
    }
    expect(summaryQuerySchema.safeParse({ since: '2026-01-01' }).success).toBe(false);
  });
});

describe('denseDays', () => {
  it('lists every UTC day the range touches, with zeros where SQL had no row', () => {
    const days = denseDays({ from: new Date('2026-02-27T18:00:00Z'), to: new Date('2026-03-02T00:00:00Z') }, [day('2026-02-28', 3)]);
    expect(days.map((d) => [d.day, d.total, d.tokensSaved])).toEqual([
      ['2026-02-27', 0, 0],
      ['2026-02-28', 3, 300],
      ['2026-03-01', 0, 0],
    ]);
  });

  it('has one day for a range inside a day', () => {
    expect(denseDays({ from: new Date('2026-03-01T01:00:00Z'), to: new Date('2026-03-01T02:00:00Z') }, []).map((d) => d.day)).toEqual(['2026-03-01']);
  });
});

describe('ratioBuckets', () => {
  it('gives each count its bounds', () => {
    const buckets = ratioBuckets([1, 0, 2, 0, 0, 0, 0, 0, 0, 5]);
    expect(buckets[0]).toEqual({ from: 0, to: 0.1, count: 1 });
    expect(buckets[2]).toEqual({ from: 0.2, to: 0.3, count: 2 });
    expect(buckets[9]).toEqual({ from: 0.9, to: 1, count: 5 });
  });
});
