import Link from 'next/link';
import {
  compactionDayPoints,
  compactionsSummary,
  hasActivity,
  nearBudgetRows,
  ratioBucketPoints,
  ratioSummary,
  tokensSavedPoints,
  llmCostPoints,
  llmCostSummary,
  tokensSavedSummary,
  type AnalyticsSummary,
} from '../../lib/overview-charts';
import { formatAgo, formatInstant, formatInt, formatPercent, formatUsd } from '../../lib/overview-format';
import { RANGE_OPTIONS, rangeHref, type RangeDays } from '../../lib/overview-range';
import { ChartFigure } from './chart-figure';
import { CompactionsPerDayChart, LlmCostChart, RatioHistogram, TokensSavedChart } from './charts';
import styles from './overview.module.css';

/** The date range as links (`?range=`), so it is bookmarkable and works without JavaScript. */
export function RangePicker({ days }: { days: RangeDays }) {
  return (
    <nav aria-label="Date range" className={styles.rangePicker}>
      <ul>
        {RANGE_OPTIONS.map((option) => (
          <li key={option}>
            <Link href={rangeHref(option)} aria-current={option === days ? 'page' : undefined} scroll={false}>
              {option} days
            </Link>
          </li>
        ))}
      </ul>
    </nav>
  );
}

function Figure({ id, label, value, detail }: { id: string; label: string; value: string; detail: string }) {
  return (
    <div className={`card ${styles.stat}`} data-testid={`stat-${id}`}>
      <dt>{label}</dt>
      <dd className={styles.statValue} data-testid={`stat-${id}-value`}>
        {value}
      </dd>
      <dd className={styles.statDetail}>{detail}</dd>
    </div>
  );
}

/** The headline numbers of the range (and the queue and budgets now). */
export function KeyFigures({ summary, days }: { summary: AnalyticsSummary; days: RangeDays }) {
  const c = summary.compactions;
  const median = summary.compressionRatios.median;
  const q = summary.queueDepth;
  return (
    <section aria-labelledby="figures-heading">
      <h2 id="figures-heading" className="visually-hidden">
        Key figures, last {days} days
      </h2>
      <dl className={styles.stats}>
        <Figure id="tokens-saved" label="Tokens saved" value={formatInt(summary.tokensSaved)} detail={`by ${formatInt(c.succeeded)} succeeded compactions`} />
        <Figure
          id="median-ratio"
          label="Median context kept"
          value={median === null || median === undefined ? '—' : formatPercent(median)}
          detail={median === null || median === undefined ? 'no succeeded compaction yet' : `a compaction saves ${formatPercent(1 - median)} (median)`}
        />
        <Figure id="compactions" label="Compactions" value={formatInt(c.total)} detail={`${formatInt(c.succeeded)} succeeded · ${formatInt(c.skipped)} skipped · ${formatInt(c.failed)} failed`} />
        <Figure
          id="llm-cost"
          label="Summarizer cost"
          value={formatUsd(summary.llm.costUsd)}
          detail={`${formatInt(summary.llm.calls)} LLM calls · ${formatInt(summary.llm.inputTokens)} in / ${formatInt(summary.llm.outputTokens)} out tokens`}
        />
        <Figure id="failures" label="Failures" value={formatInt(summary.failures.total)} detail="failed compactions in the range" />
        <Figure id="queue" label="Queue" value={formatInt(q.waiting)} detail={`waiting now · ${formatInt(q.active)} running · ${formatInt(q.delayed)} retrying`} />
        <Figure
          id="near-budget"
          label="Near their budget"
          value={formatInt(summary.sessionsNearBudget.count)}
          detail={`sessions at ${formatPercent(summary.sessionsNearBudget.threshold)} or more now`}
        />
      </dl>
    </section>
  );
}

/** Compactions per day, tokens saved per day and the compression-ratio histogram; an empty state when the range has none. */
export function OverviewCharts({ summary, days }: { summary: AnalyticsSummary; days: RangeDays }) {
  if (!hasActivity(summary)) {
    return (
      <section className={`card empty-state ${styles.empty}`} aria-labelledby="no-activity" data-testid="overview-empty">
        <h2 id="no-activity">No compactions in the last {days} days</h2>
        <p>
          Charts appear once sessions are compacted: append messages with <code>POST /v1/sessions/:id/messages</code>, and a worker compacts a
          session when its context crosses its policy&apos;s threshold (or on <code>POST /v1/sessions/:id/compact</code>).
        </p>
      </section>
    );
  }
  const perDay = compactionDayPoints(summary.compactionsPerDay);
  const saved = tokensSavedPoints(summary.compactionsPerDay);
  const ratios = ratioBucketPoints(summary.compressionRatios);
  const cost = llmCostPoints(summary.compactionsPerDay);
  return (
    <div className={styles.charts}>
      <ChartFigure
        id="chart-compactions"
        title="Compactions per day"
        summary={compactionsSummary(perDay)}
        wide
        columns={[
          { key: 'label', label: 'Day (UTC)' },
          { key: 'succeeded', label: 'Succeeded', numeric: true },
          { key: 'skipped', label: 'Skipped', numeric: true },
          { key: 'failed', label: 'Failed', numeric: true },
          { key: 'inProgress', label: 'In progress', numeric: true },
        ]}
        rows={perDay.map((p) => ({ ...p }))}
      >
        <CompactionsPerDayChart points={perDay} title="Compactions per day, by outcome" />
      </ChartFigure>
      <ChartFigure
        id="chart-tokens-saved"
        title="Tokens saved per day"
        summary={tokensSavedSummary(saved)}
        columns={[
          { key: 'label', label: 'Day (UTC)' },
          { key: 'tokensSaved', label: 'Tokens saved', numeric: true },
        ]}
        rows={saved.map((p) => ({ ...p }))}
      >
        <TokensSavedChart points={saved} title="Tokens saved per day" />
      </ChartFigure>
      <ChartFigure
        id="chart-ratio"
        title="Context kept per compaction"
        summary={ratioSummary(ratios, summary.compressionRatios.median)}
        columns={[
          { key: 'label', label: 'Context kept' },
          { key: 'count', label: 'Compactions', numeric: true },
        ]}
        rows={ratios.map((p) => ({ label: p.hasMedian ? `${p.label} (median)` : p.label, count: p.count }))}
      >
        <RatioHistogram points={ratios} title="Compression ratio histogram: share of the context kept" />
      </ChartFigure>
      <ChartFigure
        id="chart-llm-cost"
        title="Summarizer cost per day"
        summary={llmCostSummary(cost)}
        wide
        columns={[
          { key: 'label', label: 'Day (UTC)' },
          { key: 'cost', label: 'Cost (USD)', numeric: true },
          { key: 'calls', label: 'Calls', numeric: true },
          { key: 'tokens', label: 'Tokens', numeric: true },
        ]}
        rows={cost.map((p) => ({ label: p.label, cost: formatUsd(p.costUsd), calls: p.calls, tokens: p.tokens }))}
      >
        <LlmCostChart points={cost} title="Summarizer cost per day, in US dollars" />
      </ChartFigure>
    </div>
  );
}

export function NearBudgetPanel({ summary, now }: { summary: AnalyticsSummary; now: Date }) {
  const rows = nearBudgetRows(summary.sessionsNearBudget);
  const threshold = formatPercent(summary.sessionsNearBudget.threshold);
  return (
    <section className={`card ${styles.panel}`} aria-labelledby="near-budget-heading">
      <h2 id="near-budget-heading">Sessions near their budget</h2>
      {rows.length === 0 ? (
        <p className="muted">No session is at {threshold} of its budget or more.</p>
      ) : (
        <>
          <p className="muted">
            {formatInt(summary.sessionsNearBudget.count)} at {threshold} of their budget or more; the fullest first.
          </p>
          <div className="table-wrap">
            <table className={`data-table stacked-table ${styles.table}`} aria-label="Sessions near their budget">
              <thead>
                <tr>
                  <th scope="col">Session</th>
                  <th scope="col">Model</th>
                  <th scope="col">Budget used</th>
                  <th scope="col" className={styles.num}>
                    Context tokens
                  </th>
                  <th scope="col">Last activity</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => (
                  <tr key={r.id} data-testid="near-budget-row">
                    <th scope="row" data-label="Session" className="wrap-anywhere">
                      <Link href={r.href}>{r.id}</Link>
                    </th>
                    <td data-label="Model">{r.model}</td>
                    <td data-label="Budget used">
                      <span className={styles.usage}>
                        <span className={styles.usageBar} aria-hidden="true">
                          <span style={{ width: `${r.barPercent}%` }} data-level={r.barPercent >= 95 ? 'bad' : 'warn'} />
                        </span>
                        {r.percentText}
                      </span>
                    </td>
                    <td data-label="Context tokens" className={styles.num}>
                      {formatInt(r.contextTokens)}
                    </td>
                    <td data-label="Last activity" title={formatInstant(r.lastActivityAt)}>
                      {formatAgo(r.lastActivityAt, now)}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </section>
  );
}

export function FailuresPanel({ summary, days }: { summary: AnalyticsSummary; days: RangeDays }) {
  const { total, recent } = summary.failures;
  return (
    <section className={`card ${styles.panel}`} aria-labelledby="failures-heading">
      <h2 id="failures-heading">Failures</h2>
      {total === 0 ? (
        <p className="muted">No compaction failed in the last {days} days.</p>
      ) : (
        <>
          <p className="muted">
            {formatInt(total)} failed compaction{total === 1 ? '' : 's'} in the last {days} days; the latest {recent.length}:
          </p>
          <ul className={styles.failures}>
            {recent.map((f) => (
              <li key={f.jobId} data-testid="failure-row">
                <span className={styles.failureWhen}>{formatInstant(f.at)}</span>
                <Link href={`/sessions/${encodeURIComponent(f.sessionId)}`} className="wrap-anywhere">
                  {f.sessionId}
                </Link>
                <span className="muted">({f.trigger})</span>
                <span className={styles.failureError}>{f.error ?? 'no error recorded'}</span>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
