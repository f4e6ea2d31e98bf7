import { formatTimestamp, formatTokens } from '../../lib/session-format';
import { thinnedCaption, type UsageChartData } from '../../lib/session-usage';
import styles from './session.module.css';
import { UsageChart } from './usage-chart';

/**
 * The chart with its accessible name and text alternative: the drawing is one image with a
 * summary for screen readers, and the same data is a table one click away. The data attributes
 * say what the chart was fed, so tests compare them with the API.
 */
export function UsagePanel({ data }: { data: UsageChartData }) {
  const markers = [...data.compactions, ...data.restores].sort((a, b) => a.x - b.x);
  return (
    <section className={`card ${styles.panel} ${styles.usagePanel}`} aria-labelledby="usage-heading">
      <header className={styles.panelHeader}>
        <h2 id="usage-heading">Token usage over time</h2>
      </header>
      <figure
        className={styles.figure}
        data-testid="usage-chart"
        data-points={data.totalPoints}
        data-drawn={data.points.length}
        data-appends={data.appends}
        data-goal-updates={data.goalUpdates}
        data-compactions={data.compactions.length}
        data-restores={data.restores.length}
        aria-labelledby="usage-heading"
        aria-describedby="usage-summary"
      >
        {data.totalPoints === 0 ? (
          <p className="empty-note">No messages yet: the chart starts with the first append.</p>
        ) : (
          <div className={styles.chartBox} role="img" aria-label={`Chart: token usage over time. ${data.summary}`}>
            <UsageChart data={data} />
          </div>
        )}
        <figcaption id="usage-summary" className={styles.figcaption}>
          {data.summary}
          {data.thinned ? ` ${thinnedCaption(data)}` : ''}
          {data.totalPoints > 0 && data.compactions.length === 0 ? ' No compactions yet: the context is still the whole history.' : ''}
        </figcaption>
      </figure>
      {markers.length > 0 ? (
        <details className={styles.details}>
          <summary>Compactions and restores as a table ({markers.length})</summary>
          <div className="table-wrap">
            <table className={`data-table ${styles.dataTable}`} data-testid="usage-markers">
              <thead>
                <tr>
                  <th scope="col">Kind</th>
                  <th scope="col">At message</th>
                  <th scope="col">Tokens before</th>
                  <th scope="col">Tokens after</th>
                  <th scope="col">When</th>
                </tr>
              </thead>
              <tbody>
                {markers.map((m) => (
                  <tr key={`${m.kind}-${m.x}`} data-kind={m.kind}>
                    <td>{m.kind === 'compaction' ? `Compaction${m.trigger ? ` (${m.trigger})` : ''}` : 'Restore'}</td>
                    <td>{m.seq}</td>
                    <td>{m.tokensBefore != null ? formatTokens(m.tokensBefore) : '—'}</td>
                    <td>{formatTokens(m.tokens)}</td>
                    <td>{formatTimestamp(m.at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </details>
      ) : null}
    </section>
  );
}
