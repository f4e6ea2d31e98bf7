import { loadReadiness } from '../../api/load-readiness';
import { loadSummary } from '../../components/overview/load-summary';
import { FailuresPanel, KeyFigures, NearBudgetPanel, OverviewCharts, RangePicker } from '../../components/overview/overview-sections';
import styles from '../../components/overview/overview.module.css';
import { ReadinessPanel } from '../../components/readiness-panel';
import { KeyNotice } from '../../components/settings/key-notice';
import { parseRangeDays } from '../../lib/overview-range';

export default async function OverviewPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const days = parseRangeDays((await searchParams).range);
  const readiness = await loadReadiness();
  // When the API does not answer, the layout says so; the page shows only what the readiness check knows.
  const apiAnswers = readiness.state === 'ready' || readiness.state === 'not_ready';
  const summary = apiAnswers ? await loadSummary(days) : null;
  const now = new Date();

  return (
    <>
      <div className={styles.pageHeader}>
        <div>
          <h1>Overview</h1>
          <p className={styles.lead}>Tokens saved, compactions and summarizer cost of this tenant&apos;s sessions, by UTC day.</p>
        </div>
        {summary?.state === 'ok' && <RangePicker days={days} />}
      </div>
      {summary && summary.state !== 'ok' && <KeyNotice problem={summary} what="tokens saved, compactions and costs" />}
      {summary?.state === 'ok' && (
        <>
          <KeyFigures summary={summary.data} days={days} />
          <OverviewCharts summary={summary.data} days={days} />
          <div className={styles.panels}>
            <NearBudgetPanel summary={summary.data} now={now} />
            <FailuresPanel summary={summary.data} days={days} />
          </div>
        </>
      )}
      <ReadinessPanel readiness={readiness} />
    </>
  );
}
