import type { components } from '../api/schema';
import { formatDay, formatInt, formatPercent, formatUsd } from './overview-format';

/**
 * Pure adapters from the API's analytics summary to what the Overview's charts and their text
 * alternatives draw. The recharts components only render these points.
 */
type Schemas = components['schemas'];
export type AnalyticsSummary = Schemas['AnalyticsSummary'];

export interface CompactionDayPoint {
  day: string;
  label: string;
  succeeded: number;
  skipped: number;
  failed: number;
  /** Queued or running (created that day, not finished yet). */
  inProgress: number;
  total: number;
}

export interface TokensSavedPoint {
  day: string;
  label: string;
  tokensSaved: number;
}

export interface LlmCostPoint {
  day: string;
  label: string;
  costUsd: number;
  calls: number;
  tokens: number;
}

export interface RatioBucketPoint {
  /** `30–40%`: the share of the context a compaction kept. */
  label: string;
  from: number;
  to: number;
  count: number;
  /** The bucket the median falls in. */
  hasMedian: boolean;
  /** `count` split in two series, so the median's bucket is drawn in its own colour: one of the two is 0. */
  plain: number;
  median: number;
}

/** Stacked bars of compactions per UTC day: one point per day of the range, zeros included, in order. */
export function compactionDayPoints(days: Schemas['CompactionDay'][]): CompactionDayPoint[] {
  return days.map((d) => ({
    day: d.day,
    label: formatDay(d.day),
    succeeded: d.succeeded,
    skipped: d.skipped,
    failed: d.failed,
    inProgress: Math.max(0, d.count - d.succeeded - d.skipped - d.failed),
    total: d.count,
  }));
}

export function tokensSavedPoints(days: Schemas['CompactionDay'][]): TokensSavedPoint[] {
  return days.map((d) => ({ day: d.day, label: formatDay(d.day), tokensSaved: d.tokensSaved }));
}

/** The summarizer's cost per UTC day (with its calls and tokens for the table and tooltip). */
export function llmCostPoints(days: Schemas['CompactionDay'][]): LlmCostPoint[] {
  return days.map((d) => ({ day: d.day, label: formatDay(d.day), costUsd: d.llmCostUsd, calls: d.llmCalls, tokens: d.llmTokens }));
}

/** Whether `median` lies in [from, to), or in the last bucket when it is its upper bound. */
function inBucket(median: number, from: number, to: number, last: boolean): boolean {
  return median >= from && (median < to || (last && median <= to));
}

/** The histogram of tokensAfter / tokensBefore, labelled as the share of the context kept. */
export function ratioBucketPoints(ratios: Schemas['CompressionRatios']): RatioBucketPoint[] {
  const median = ratios.median ?? null;
  return ratios.buckets.map((b, i) => {
    const hasMedian = median !== null && inBucket(median, b.from, b.to, i === ratios.buckets.length - 1);
    return {
      label: `${Math.round(b.from * 100)}–${Math.round(b.to * 100)}%`,
      from: b.from,
      to: b.to,
      count: b.count,
      hasMedian,
      plain: hasMedian ? 0 : b.count,
      median: hasMedian ? b.count : 0,
    };
  });
}

function busiest<T>(points: T[], value: (p: T) => number): T | undefined {
  let best: T | undefined;
  for (const p of points) if (value(p) > 0 && (best === undefined || value(p) > value(best))) best = p;
  return best;
}

const plural = (n: number, one: string, many = `${one}s`) => `${formatInt(n)} ${n === 1 ? one : many}`;

/** The compactions chart in one sentence, for screen readers and as its caption's detail. */
export function compactionsSummary(points: CompactionDayPoint[]): string {
  const sum = (f: (p: CompactionDayPoint) => number) => points.reduce((s, p) => s + f(p), 0);
  const total = sum((p) => p.total);
  const days = plural(points.length, 'day');
  if (total === 0) return `No compactions in these ${days}.`;
  const parts = [`${formatInt(sum((p) => p.succeeded))} succeeded`, `${formatInt(sum((p) => p.skipped))} skipped`, `${formatInt(sum((p) => p.failed))} failed`];
  const inProgress = sum((p) => p.inProgress);
  if (inProgress > 0) parts.push(`${formatInt(inProgress)} in progress`);
  const top = busiest(points, (p) => p.total)!;
  return `${plural(total, 'compaction')} in ${days}: ${parts.join(', ')}. Busiest day: ${top.label} (${formatInt(top.total)}).`;
}

export function tokensSavedSummary(points: TokensSavedPoint[]): string {
  const total = points.reduce((s, p) => s + p.tokensSaved, 0);
  const days = plural(points.length, 'day');
  if (total === 0) return `No tokens saved in these ${days}.`;
  const top = busiest(points, (p) => p.tokensSaved)!;
  return `${plural(total, 'token')} saved in ${days}; most on ${top.label} (${formatInt(top.tokensSaved)}).`;
}

export function llmCostSummary(points: LlmCostPoint[]): string {
  const calls = points.reduce((s, p) => s + p.calls, 0);
  const cost = points.reduce((s, p) => s + p.costUsd, 0);
  const days = plural(points.length, 'day');
  if (calls === 0) return `No summarizer calls in this range (${days}).`;
  const top = busiest(points, (p) => p.costUsd);
  const most = top ? `; most on ${top.label} (${formatUsd(top.costUsd)})` : ' (the summarizer is free: the local one, or no prices known)';
  return `${formatUsd(cost)} for ${plural(calls, 'summarizer call')} in ${days}${most}.`;
}

export function ratioSummary(points: RatioBucketPoint[], median: number | null | undefined): string {
  const count = points.reduce((s, p) => s + p.count, 0);
  if (count === 0 || median === null || median === undefined) return 'No succeeded compactions in this range.';
  return `${plural(count, 'succeeded compaction')}; the median kept ${formatPercent(median)} of the context (saved ${formatPercent(1 - median)}).`;
}

export interface NearBudgetRow {
  id: string;
  href: string;
  model: string;
  /** 0–100, capped for the bar; `percentText` keeps the real value. */
  barPercent: number;
  percentText: string;
  contextTokens: number;
  lastActivityAt: string;
}

export function nearBudgetRows(near: Schemas['SessionsNearBudget']): NearBudgetRow[] {
  return near.sessions.map((s) => ({
    id: s.id,
    href: `/sessions/${encodeURIComponent(s.id)}`,
    model: s.model,
    barPercent: Math.max(0, Math.min(100, Math.round(s.utilization * 100))),
    percentText: formatPercent(s.utilization),
    contextTokens: s.contextTokens,
    lastActivityAt: s.lastActivityAt,
  }));
}

/** Whether the range holds anything to chart (compactions) — the page shows an empty state otherwise. */
export function hasActivity(summary: AnalyticsSummary): boolean {
  return summary.compactions.total > 0 || summary.llm.calls > 0;
}
