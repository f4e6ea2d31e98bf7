import { FieldProblem, ValidationFailed } from '@compactor/compaction';
import type { JobDay } from '@compactor/persistence';
import { z } from 'zod';

const DAY_MS = 24 * 3600 * 1000;
export const DEFAULT_RANGE_DAYS = 30;
export const MAX_RANGE_DAYS = 366;

const DATE_MESSAGE = 'must be an ISO date (2026-11-01) or a date-time with a time zone (2026-11-01T09:30:00Z)';
const isoDateOrDateTime = z.union([z.iso.date(), z.iso.datetime({ offset: true })], { message: DATE_MESSAGE });

export const summaryQuerySchema = z.strictObject({
  from: isoDateOrDateTime.optional(),
  to: isoDateOrDateTime.optional(),
});

export interface TimeRange {
  from: Date;
  /** Exclusive. */
  to: Date;
}

/** A date-only value is midnight UTC of that day, or of the next day when it ends a range (so the day is included). */
function instant(value: string, endOfDay: boolean): Date {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return new Date(value);
  return new Date(Date.parse(`${value}T00:00:00Z`) + (endOfDay ? DAY_MS : 0));
}

/**
 * The half-open range [from, to) of a summary request. A date-only `from` starts at 00:00 UTC;
 * a date-only `to` includes that whole day (UTC). Defaults: `to` now, `from` 30 days before `to`.
 */
export function resolveRange(query: z.infer<typeof summaryQuerySchema>, now = new Date()): TimeRange {
  const to = query.to === undefined ? now : instant(query.to, true);
  const from = query.from === undefined ? new Date(to.getTime() - DEFAULT_RANGE_DAYS * DAY_MS) : instant(query.from, false);
  const problems: FieldProblem[] = [];
  if (from.getTime() >= to.getTime()) problems.push({ field: 'from', message: `must be before to (${to.toISOString()})` });
  else if (to.getTime() - from.getTime() > MAX_RANGE_DAYS * DAY_MS) problems.push({ field: 'to', message: `must be at most ${MAX_RANGE_DAYS} days after from` });
  if (problems.length > 0) throw new ValidationFailed(problems);
  return { from, to };
}

const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

const emptyDay = (day: string): JobDay => ({
  day,
  total: 0,
  succeeded: 0,
  skipped: 0,
  failed: 0,
  queued: 0,
  running: 0,
  tokensSaved: 0,
  llmCalls: 0,
  llmInputTokens: 0,
  llmOutputTokens: 0,
  llmCostUsd: 0,
});

/** Every UTC day the range touches, in order, with the days SQL returned and zeros for the rest. */
export function denseDays(range: TimeRange, days: JobDay[]): JobDay[] {
  const byDay = new Map(days.map((d) => [d.day, d]));
  const out: JobDay[] = [];
  const last = utcDay(range.to.getTime() - 1);
  for (let ms = Date.parse(`${utcDay(range.from.getTime())}T00:00:00Z`); ; ms += DAY_MS) {
    const day = utcDay(ms);
    out.push(byDay.get(day) ?? emptyDay(day));
    if (day >= last) return out;
  }
}

export interface RatioBucket {
  from: number;
  to: number;
  count: number;
}

/** Equal-width buckets of [0, 1] with their bounds, from their counts. */
export function ratioBuckets(counts: number[]): RatioBucket[] {
  const edge = (i: number) => Math.round((i / counts.length) * 1e6) / 1e6;
  return counts.map((count, i) => ({ from: edge(i), to: edge(i + 1), count }));
}
