'use client';

import { Area, AreaChart, Bar, BarChart, CartesianGrid, Legend, Tooltip, XAxis, YAxis } from 'recharts';
import type { CompactionDayPoint, LlmCostPoint, RatioBucketPoint, TokensSavedPoint } from '../../lib/overview-charts';
import { formatCompact, formatInt, formatUsd } from '../../lib/overview-format';

/**
 * The Overview's recharts charts: thin wrappers that draw points shaped by lib/overview-charts.ts.
 * Client components (recharts measures and draws in the browser); their figure, caption and text
 * alternative are rendered by the server around them.
 */

export const CHART_COLORS = {
  succeeded: '#1a7f45',
  skipped: '#8a94a6',
  failed: '#b42318',
  inProgress: '#2f5bd3',
  saved: '#2f5bd3',
  ratio: '#7b93d9',
  median: '#2f5bd3',
  cost: '#8a4b08',
} as const;

const HEIGHT = 240;
const axisTick = { fontSize: 12, fill: '#5b6472' };
const chartStyle = { width: '100%', height: HEIGHT } as const;
const margin = { top: 8, right: 8, bottom: 0, left: 0 };
/** Legend entries in the order of the stack (recharts sorts them by name otherwise). */
const LEGEND_ORDER = ['succeeded', 'skipped', 'failed', 'inProgress', 'plain', 'median'];
const legendOrder = (item: { dataKey?: unknown }) => LEGEND_ORDER.indexOf(String(item.dataKey));

export function CompactionsPerDayChart({ points, title }: { points: CompactionDayPoint[]; title: string }) {
  const showInProgress = points.some((p) => p.inProgress > 0);
  return (
    <BarChart responsive style={chartStyle} data={points} margin={margin} title={title} barCategoryGap="15%">
      <CartesianGrid vertical={false} stroke="#e6e9ee" />
      <XAxis dataKey="label" tick={axisTick} tickLine={false} interval="preserveStartEnd" minTickGap={12} />
      <YAxis allowDecimals={false} tick={axisTick} tickLine={false} axisLine={false} width={36} tickFormatter={formatCompact} />
      <Tooltip cursor={{ fill: 'rgba(47, 91, 211, 0.08)' }} formatter={(value) => formatInt(Number(value))} />
      <Legend iconType="square" wrapperStyle={{ fontSize: 13 }} itemSorter={legendOrder} />
      <Bar dataKey="succeeded" name="Succeeded" stackId="jobs" fill={CHART_COLORS.succeeded} isAnimationActive={false} />
      <Bar dataKey="skipped" name="Skipped" stackId="jobs" fill={CHART_COLORS.skipped} isAnimationActive={false} />
      <Bar dataKey="failed" name="Failed" stackId="jobs" fill={CHART_COLORS.failed} isAnimationActive={false} />
      {showInProgress && <Bar dataKey="inProgress" name="In progress" stackId="jobs" fill={CHART_COLORS.inProgress} isAnimationActive={false} />}
    </BarChart>
  );
}

export function TokensSavedChart({ points, title }: { points: TokensSavedPoint[]; title: string }) {
  // A line with a dot per day: every day of the range is a visible point, zeros included.
  return (
    <AreaChart responsive style={chartStyle} data={points} margin={margin} title={title}>
      <CartesianGrid vertical={false} stroke="#e6e9ee" />
      <XAxis dataKey="label" tick={axisTick} tickLine={false} interval="preserveStartEnd" minTickGap={12} />
      <YAxis allowDecimals={false} tick={axisTick} tickLine={false} axisLine={false} width={44} tickFormatter={formatCompact} />
      <Tooltip formatter={(value) => formatInt(Number(value))} />
      <Area
        type="linear"
        dataKey="tokensSaved"
        name="Tokens saved"
        stroke={CHART_COLORS.saved}
        strokeWidth={2}
        fill={CHART_COLORS.saved}
        fillOpacity={0.12}
        dot={{ r: points.length > 31 ? 1.5 : 3, fill: CHART_COLORS.saved, strokeWidth: 0 }}
        isAnimationActive={false}
      />
    </AreaChart>
  );
}

export function LlmCostChart({ points, title }: { points: LlmCostPoint[]; title: string }) {
  return (
    <BarChart responsive style={chartStyle} data={points} margin={margin} title={title}>
      <CartesianGrid vertical={false} stroke="#e6e9ee" />
      <XAxis dataKey="label" tick={axisTick} tickLine={false} interval="preserveStartEnd" minTickGap={12} />
      <YAxis tick={axisTick} tickLine={false} axisLine={false} width={56} tickFormatter={(v) => formatUsd(Number(v))} />
      <Tooltip formatter={(value) => formatUsd(Number(value))} />
      <Bar dataKey="costUsd" name="Summarizer cost (USD)" fill={CHART_COLORS.cost} isAnimationActive={false} />
    </BarChart>
  );
}

export function RatioHistogram({ points, title }: { points: RatioBucketPoint[]; title: string }) {
  return (
    <BarChart responsive style={chartStyle} data={points} margin={margin} title={title} barCategoryGap="8%">
      <CartesianGrid vertical={false} stroke="#e6e9ee" />
      <XAxis dataKey="label" tick={axisTick} tickLine={false} interval="preserveStartEnd" minTickGap={8} />
      <YAxis allowDecimals={false} tick={axisTick} tickLine={false} axisLine={false} width={36} tickFormatter={formatCompact} />
      <Tooltip cursor={{ fill: 'rgba(47, 91, 211, 0.08)' }} formatter={(value) => formatInt(Number(value))} />
      <Legend iconType="square" wrapperStyle={{ fontSize: 13 }} itemSorter={legendOrder} />
      <Bar dataKey="plain" name="Compactions" stackId="ratio" fill={CHART_COLORS.ratio} isAnimationActive={false} />
      <Bar dataKey="median" name="The median's bucket" stackId="ratio" fill={CHART_COLORS.median} isAnimationActive={false} />
    </BarChart>
  );
}
