import type { components } from '../api/schema';
import { formatPercent, formatTimestamp, formatTokens } from './session-format';

export type UsagePoint = components['schemas']['UsagePoint'];
export type UsageSeries = components['schemas']['UsageSeries'];

/** One point of the chart: x is the point's position in the series (appends and compactions can share a seq). */
export interface UsageChartPoint {
  x: number;
  seq: number;
  kind: UsagePoint['kind'];
  tokens: number;
  budget: number;
  threshold: number;
  at: string;
}

export interface UsageMarker {
  x: number;
  seq: number;
  kind: 'compaction' | 'restore';
  tokens: number;
  at: string;
  jobId: string | null;
  tokensBefore: number | null;
  trigger: string | null;
  /** "Compaction (threshold) at message 40: 12,676 → 6,801 tokens" */
  label: string;
}

export interface UsageChartData {
  /** What the chart draws: the API's series, downsampled by the API on a long session (every marker kept). */
  points: UsageChartPoint[];
  compactions: UsageMarker[];
  restores: UsageMarker[];
  /** Points in the session's whole series. */
  totalPoints: number;
  appends: number;
  /** Points where a goal update changed the goal block (drawn on the line, not as markers). */
  goalUpdates: number;
  /** Fewer points drawn than the series holds. */
  thinned: boolean;
  /** When thinned: the stretches of equal length the API split the series into, each drawn by its highest and lowest append. */
  stretches: number | null;
  /** Top of the y axis: room above the highest of tokens, budget and trigger line. */
  yMax: number;
  /** x positions to label on the axis: spread out, one per seq (a compaction shares its append's seq). */
  ticks: number[];
  /** Text alternative of the chart. */
  summary: string;
}

const plural = (n: number, word: string) => `${n.toLocaleString('en-US')} ${word}${n === 1 ? '' : 's'}`;

function markerLabel(p: UsagePoint): string {
  if (p.kind === 'restore') return `Restore at message ${p.seq}: context ${formatTokens(p.contextTokens)} tokens`;
  const c = p.compaction;
  const trigger = c?.trigger ? ` (${c.trigger})` : '';
  const before = c?.tokensBefore != null ? `${formatTokens(c.tokensBefore)} → ` : '';
  return `Compaction${trigger} at message ${p.seq}: ${before}${formatTokens(p.contextTokens)} tokens`;
}

/** About `max` evenly spread x positions, the first and last included, never two with the same seq. */
export function axisTicks(points: Pick<UsageChartPoint, 'x' | 'seq'>[], max = 8): number[] {
  if (points.length === 0) return [];
  const step = Math.max(1, Math.ceil(points.length / max));
  const picked: Pick<UsageChartPoint, 'x' | 'seq'>[] = [];
  for (let i = 0; i < points.length; i += step) picked.push(points[i]);
  const last = points[points.length - 1];
  // The last point is always labelled; it replaces a neighbour too close to it.
  if (picked[picked.length - 1] !== last) {
    if (picked.length > 1 && points.length - 1 - points.indexOf(picked[picked.length - 1]) < step / 2) picked.pop();
    picked.push(last);
  }
  const seen = new Set<number>();
  return picked.filter((p) => !seen.has(p.seq) && seen.add(p.seq)).map((p) => p.x);
}

/**
 * The chart's data from the API's usage series: the whole series (`maxPoints`), downsampled by the API
 * on a long session, where every compaction, restore and goal update is kept and each point carries its
 * position in the whole series (the x axis); a series without positions is drawn point by point.
 */
export function usageChartData(series: Pick<UsageSeries, 'points' | 'budget' | 'threshold' | 'contextTokens' | 'totalPoints' | 'stretches'>): UsageChartData {
  const points: UsageChartPoint[] = series.points.map((p, i) => ({
    x: p.position ?? i,
    seq: p.seq,
    kind: p.kind,
    tokens: p.contextTokens,
    budget: p.budget,
    threshold: p.threshold,
    at: p.at,
  }));
  const marker = (p: UsagePoint, x: number): UsageMarker => ({
    x,
    seq: p.seq,
    kind: p.kind === 'restore' ? 'restore' : 'compaction',
    tokens: p.contextTokens,
    at: p.at,
    jobId: p.compaction?.jobId ?? null,
    tokensBefore: p.compaction?.tokensBefore ?? null,
    trigger: p.compaction?.trigger ?? null,
    label: markerLabel(p),
  });
  const compactions = series.points.flatMap((p, i) => (p.kind === 'compaction' ? [marker(p, points[i].x)] : []));
  const restores = series.points.flatMap((p, i) => (p.kind === 'restore' ? [marker(p, points[i].x)] : []));
  const goalUpdates = series.points.filter((p) => p.kind === 'goal_update').length;
  const totalPoints = Math.max(series.totalPoints ?? 0, series.points.length);
  // Downsampling drops appends only: every other point of the series is here.
  const appends = totalPoints - (series.points.length - series.points.filter((p) => p.kind === 'append').length);
  const highest = Math.max(series.budget, series.threshold, ...points.map((p) => Math.max(p.tokens, p.budget, p.threshold)));
  const yMax = Math.ceil((highest * 1.08) / 1000) * 1000;

  const last = series.points.at(-1);
  const summary =
    series.points.length === 0
      ? 'No usage yet: no messages have been appended.'
      : `${plural(totalPoints, 'point')} (${plural(appends, 'append')}, ${plural(compactions.length, 'compaction')}, ${plural(restores.length, 'restore')}` +
        (goalUpdates > 0 ? `, ${plural(goalUpdates, 'goal update')}` : '') +
        `) up to message ${last?.seq ?? 0}. ` +
        `Context now ${formatTokens(series.contextTokens)} of ${formatTokens(series.budget)} budget tokens (${formatPercent(series.contextTokens / Math.max(series.budget, 1))}); ` +
        `compaction triggers at ${formatTokens(series.threshold)} tokens.` +
        (compactions.length > 0 ? ` Last compaction: ${compactions.at(-1)?.label}, ${formatTimestamp(compactions.at(-1)?.at ?? '')}.` : '');

  return {
    points,
    compactions,
    restores,
    totalPoints,
    appends,
    goalUpdates,
    thinned: points.length < totalPoints,
    stretches: points.length < totalPoints ? (series.stretches ?? null) : null,
    yMax: Math.max(yMax, 1000),
    ticks: axisTicks(points),
    summary,
  };
}

/** How a downsampled chart was drawn, over the whole history. */
export function thinnedCaption(data: Pick<UsageChartData, 'points' | 'totalPoints' | 'stretches'>): string {
  const n = (x: number) => x.toLocaleString('en-US');
  const stretches = data.stretches ? `${n(data.stretches)} stretches of about ${n(Math.round(data.totalPoints / data.stretches))} points, each drawn by its highest and lowest append` : 'stretches, each drawn by its highest and lowest append';
  return `${n(data.points.length)} of ${n(data.totalPoints)} points drawn over the whole history: ${stretches}, with every compaction, restore and goal update and the point before each.`;
}

/** The job "Undo last compaction" undoes: the latest compaction marker, else the newest pre-compaction snapshot's job. */
export function lastCompactionJobId(
  points: Pick<UsagePoint, 'kind' | 'compaction'>[],
  snapshots: { kind: string; compactionJobId?: string | null; createdAt: string }[],
): string | null {
  for (let i = points.length - 1; i >= 0; i -= 1) {
    const jobId = points[i].kind === 'compaction' ? points[i].compaction?.jobId : undefined;
    if (jobId) return jobId;
  }
  const pre = snapshots
    .filter((s) => s.kind === 'pre-compaction' && s.compactionJobId)
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  return pre[0]?.compactionJobId ?? null;
}
