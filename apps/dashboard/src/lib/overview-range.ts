/** The Overview's date ranges, in days; the choice travels in the `range` search parameter. */
export const RANGE_OPTIONS = [7, 30, 90] as const;
export type RangeDays = (typeof RANGE_OPTIONS)[number];
export const DEFAULT_RANGE: RangeDays = 30;

const DAY_MS = 24 * 3600 * 1000;

/** The range a `?range=` value asks for; anything else (missing, repeated, unknown) is the default. */
export function parseRangeDays(value: string | string[] | undefined): RangeDays {
  const n = typeof value === 'string' && /^\d{1,3}$/.test(value) ? Number(value) : NaN;
  return (RANGE_OPTIONS as readonly number[]).includes(n) ? (n as RangeDays) : DEFAULT_RANGE;
}

/**
 * The summary query for the last `days` UTC days, today included: date-only `from` and `to`
 * (the API includes the whole `to` day), so the API answers exactly `days` days.
 */
export function rangeQuery(days: RangeDays, now: Date): { from: string; to: string } {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  return { from: day(today - (days - 1) * DAY_MS), to: day(today) };
}

/** The link of a range option (the default keeps the plain address). */
export function rangeHref(days: RangeDays): string {
  return days === DEFAULT_RANGE ? '/' : `/?range=${days}`;
}
