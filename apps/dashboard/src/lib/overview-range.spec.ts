import { DEFAULT_RANGE, parseRangeDays, rangeHref, rangeQuery } from './overview-range';

describe('parseRangeDays', () => {
  it.each([
    ['7', 7],
    ['30', 30],
    ['90', 90],
  ])('accepts %s', (value, days) => expect(parseRangeDays(value)).toBe(days));

  it.each([[undefined], [''], ['14'], ['7d'], ['-7'], ['1e1'], [['7', '90']]])('falls back to the default for %p', (value) => {
    expect(parseRangeDays(value as string | string[] | undefined)).toBe(DEFAULT_RANGE);
  });
});

describe('rangeQuery', () => {
  it('asks for exactly that many UTC days, today included', () => {
    const now = new Date('2026-03-02T23:59:00Z');
    expect(rangeQuery(7, now)).toEqual({ from: '2026-02-24', to: '2026-03-02' });
    expect(rangeQuery(30, now)).toEqual({ from: '2026-02-01', to: '2026-03-02' });
    expect(rangeQuery(90, new Date('2026-01-01T00:00:00Z'))).toEqual({ from: '2025-10-04', to: '2026-01-01' });
  });

  it('uses the UTC day whatever the clock zone says', () => {
    // 01:30 in UTC+2 is still the previous UTC day.
    expect(rangeQuery(7, new Date('2026-03-03T01:30:00+02:00')).to).toBe('2026-03-02');
  });
});

describe('rangeHref', () => {
  it('keeps the default range on the plain address', () => {
    expect(rangeHref(30)).toBe('/');
    expect(rangeHref(7)).toBe('/?range=7');
    expect(rangeHref(90)).toBe('/?range=90');
  });
});
