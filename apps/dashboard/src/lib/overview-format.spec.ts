import { formatAgo, formatCompact, formatDay, formatInstant, formatInt, formatPercent, formatUsd } from './overview-format';

describe('overview formatting', () => {
  it('formats integers and axis ticks', () => {
    expect(formatInt(1234567)).toBe('1,234,567');
    expect([0, 950, 1200, 15_400, 250_000, 3_400_000].map(formatCompact)).toEqual(['0', '950', '1.2k', '15.4k', '250k', '3.4M']);
  });

  it('formats dollars with cents, and small amounts with four decimals', () => {
    expect([0, 0.000123, 0.0042, 0.01, 12.5, 1234.567].map(formatUsd)).toEqual(['$0.00', '$0.0001', '$0.0042', '$0.01', '$12.50', '$1,234.57']);
  });

  it('formats shares, days and instants in UTC', () => {
    expect(formatPercent(0.3449)).toBe('34%');
    expect(formatDay('2026-11-03')).toBe('Nov 3');
    expect(formatInstant('2026-11-23T09:05:00Z')).toBe('Nov 23, 09:05 UTC');
    expect(formatInstant('not a date')).toBe('not a date');
  });

  it('says how long ago, coarsely', () => {
    const now = new Date('2026-11-23T12:00:00Z');
    expect(['2026-11-23T12:00:00Z', '2026-11-23T11:59:30Z', '2026-11-23T11:45:00Z', '2026-11-23T09:00:00Z', '2026-11-20T12:00:00Z'].map((t) => formatAgo(t, now))).toEqual([
      'just now',
      '30 s ago',
      '15 min ago',
      '3 h ago',
      '3 d ago',
    ]);
  });
});
