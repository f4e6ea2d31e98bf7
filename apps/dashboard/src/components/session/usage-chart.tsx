'use client';

import { Area, CartesianGrid, ComposedChart, Legend, Line, ReferenceLine, Scatter, Tooltip, XAxis, YAxis } from 'recharts';
import type { UsageChartData, UsageChartPoint, UsageMarker } from '../../lib/session-usage';

/** Colours as literals: SVG presentation attributes do not read CSS variables. */
const COLORS = { tokens: '#2f5bd3', fill: '#dfe7fb', budget: '#1b1f27', trigger: '#c77700', compaction: '#b42318', restore: '#1a7f45', grid: '#e5e8ee', axis: '#5b6472' };
/** Dots on every point only while they stay readable; the markers are always drawn. */
const MAX_DOTS = 150;

const KIND_LABELS: Record<string, string> = { append: 'Append', compaction: 'Compaction', restore: 'Restore', goal_update: 'Goal update' };

const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });
const full = new Intl.NumberFormat('en-US');

interface ShapeProps {
  cx?: number;
  cy?: number;
  payload?: UsageMarker | UsageChartPoint;
}

function CompactionMarker({ cx, cy, payload }: ShapeProps) {
  if (cx === undefined || cy === undefined) return null;
  return (
    <path
      d={`M${cx - 6},${cy - 9} L${cx + 6},${cy - 9} L${cx},${cy - 1} Z`}
      fill={COLORS.compaction}
      stroke="#fff"
      strokeWidth={1}
      data-marker="compaction"
      data-seq={payload?.seq}
    />
  );
}

function RestoreMarker({ cx, cy, payload }: ShapeProps) {
  if (cx === undefined || cy === undefined) return null;
  return <path d={`M${cx},${cy - 7} L${cx + 6},${cy} L${cx},${cy + 7} L${cx - 6},${cy} Z`} fill={COLORS.restore} stroke="#fff" strokeWidth={1} data-marker="restore" data-seq={payload?.seq} />;
}

function PointDot({ cx, cy, payload }: ShapeProps) {
  if (cx === undefined || cy === undefined || !payload) return <g />;
  return <circle cx={cx} cy={cy} r={2.5} fill={COLORS.tokens} data-kind={payload.kind} data-seq={payload.seq} />;
}

interface TooltipProps {
  active?: boolean;
  payload?: { payload?: UsageChartPoint | UsageMarker }[];
}

function UsageTooltip({ active, payload }: TooltipProps) {
  const point = payload?.[0]?.payload;
  if (!active || !point) return null;
  const isPoint = 'budget' in point;
  return (
    <div className="usage-tooltip" style={{ background: '#fff', border: '1px solid #dde1e7', borderRadius: 6, padding: '0.5rem 0.75rem', fontSize: 13, lineHeight: 1.4 }}>
      <strong>
        {KIND_LABELS[point.kind] ?? point.kind} · message {point.seq}
      </strong>
      <div>Context: {full.format(point.tokens)} tokens</div>
      {isPoint ? (
        <>
          <div>Budget: {full.format(point.budget)}</div>
          <div>Trigger line: {full.format(point.threshold)}</div>
        </>
      ) : null}
      {'label' in point && point.tokensBefore != null ? <div>Before: {full.format(point.tokensBefore)} tokens</div> : null}
    </div>
  );
}

/**
 * Token usage over time: the context after each append, compaction and restore, with the
 * budget and trigger lines as they were at each point, and a marker per compaction and restore.
 * Thin on purpose: every number comes shaped from `usageChartData`.
 */
export function UsageChart({ data }: { data: UsageChartData }) {
  const seqAt = new Map(data.points.map((p) => [p.x, p.seq]));
  const dots = data.points.length <= MAX_DOTS;
  const single = data.points.length === 1;
  const only = data.points[0];
  return (
    <ComposedChart
      data={data.points}
      responsive
      style={{ width: '100%', height: '100%' }}
      margin={{ top: 16, right: 16, bottom: 4, left: 4 }}
      accessibilityLayer={false}
    >
      <CartesianGrid stroke={COLORS.grid} vertical={false} />
      <XAxis
        dataKey="x"
        type="number"
        domain={single ? [only.x - 1, only.x + 1] : ['dataMin', 'dataMax']}
        ticks={data.ticks}
        interval={0}
        allowDecimals={false}
        tickFormatter={(x: number) => (seqAt.has(x) ? `#${seqAt.get(x)}` : '')}
        stroke={COLORS.axis}
        fontSize={12}
      />
      <YAxis domain={[0, data.yMax]} tickFormatter={(v: number) => compact.format(v)} stroke={COLORS.axis} fontSize={12} width={44} />
      <Tooltip content={<UsageTooltip />} isAnimationActive={false} />
      <Legend verticalAlign="top" iconSize={12} wrapperStyle={{ fontSize: 13, paddingBottom: 8 }} />
      <Area
        type="linear"
        dataKey="tokens"
        name="Context tokens"
        stroke={COLORS.tokens}
        strokeWidth={2}
        fill={COLORS.fill}
        fillOpacity={0.7}
        isAnimationActive={false}
        dot={dots ? <PointDot /> : false}
        activeDot={{ r: 4 }}
      />
      {single ? (
        // One point draws no line: the budget and trigger lines span the chart instead.
        <>
          <ReferenceLine y={only.budget} stroke={COLORS.budget} strokeWidth={1.5} ifOverflow="extendDomain" label={{ value: 'Budget', position: 'insideTopRight', fontSize: 12, fill: COLORS.budget }} />
          <ReferenceLine
            y={only.threshold}
            stroke={COLORS.trigger}
            strokeWidth={1.5}
            strokeDasharray="6 4"
            ifOverflow="extendDomain"
            label={{ value: 'Trigger line', position: 'insideBottomRight', fontSize: 12, fill: COLORS.trigger }}
          />
        </>
      ) : (
        <>
          <Line type="stepAfter" dataKey="budget" name="Budget" stroke={COLORS.budget} strokeWidth={1.5} dot={false} activeDot={false} isAnimationActive={false} />
          <Line
            type="stepAfter"
            dataKey="threshold"
            name="Trigger line"
            stroke={COLORS.trigger}
            strokeWidth={1.5}
            strokeDasharray="6 4"
            dot={false}
            activeDot={false}
            isAnimationActive={false}
          />
        </>
      )}
      {data.compactions.length > 0 ? (
        <Scatter data={data.compactions} dataKey="tokens" name="Compaction" fill={COLORS.compaction} shape={<CompactionMarker />} isAnimationActive={false} legendType="triangle" />
      ) : null}
      {data.restores.length > 0 ? (
        <Scatter data={data.restores} dataKey="tokens" name="Restore" fill={COLORS.restore} shape={<RestoreMarker />} isAnimationActive={false} legendType="diamond" />
      ) : null}
    </ComposedChart>
  );
}
