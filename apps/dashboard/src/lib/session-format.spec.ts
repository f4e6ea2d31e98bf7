import { compactionHoldLine, formatClock, formatPercent, formatRelative, formatTimestamp, formatTokens } from './session-format';

describe('session formatting', () => {
  const now = new Date('2026-11-23T12:00:00.000Z');
  it.each([
    ['2026-11-23T11:59:30.000Z', 'just now'],
    ['2026-11-23T11:57:00.000Z', '3 minutes ago'],
    ['2026-11-23T09:00:00.000Z', '3 hours ago'],
    ['2026-11-22T12:00:00.000Z', 'yesterday'],
    ['2026-10-01T12:00:00.000Z', '2 months ago'],
    ['not a date', 'unknown'],
  ])('%s is "%s"', (iso, text) => {
    expect(formatRelative(iso, now)).toBe(text);
  });

  it('formats tokens, shares and timestamps the same on every machine', () => {
    expect(formatTokens(12675.6)).toBe('12,676');
    expect(formatPercent(1.133)).toBe('113%');
    expect(formatTimestamp('2026-11-23T14:25:03.040Z')).toBe('2026-11-23 14:25:03 UTC');
    expect(formatClock('2026-11-23T14:25:03.040Z')).toBe('14:25:03');
  });
});

describe('compactionHoldLine', () => {
  it('names an LLM-outage hold and when it was set; nothing for another reason or no hold', () => {
    expect(compactionHoldLine({ reason: 'llm-outage', since: '2026-11-23T14:05:09.123Z' })).toBe('automatic compaction held: LLM outage since Nov 23, 14:05 UTC');
    expect(compactionHoldLine({ reason: 'llm-outage', since: null })).toBe('automatic compaction held: LLM outage');
    expect(compactionHoldLine({ reason: 'context-still-over-trigger', since: '2026-11-23T14:05:09.123Z' })).toBeNull();
    expect(compactionHoldLine(null)).toBeNull();
  });
});
