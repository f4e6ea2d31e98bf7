import type { ReactNode } from 'react';
import styles from './overview.module.css';

export interface DataColumn {
  key: string;
  label: string;
  numeric?: boolean;
}

/**
 * A chart with its accessible name (the caption), a one-sentence summary, and its data as a
 * table behind a disclosure: the text alternative for people who cannot see the chart.
 */
export function ChartFigure({
  id,
  title,
  summary,
  columns,
  rows,
  wide = false,
  children,
}: {
  id: string;
  title: string;
  summary: string;
  columns: DataColumn[];
  rows: Array<Record<string, string | number>>;
  wide?: boolean;
  children: ReactNode;
}) {
  return (
    <figure className={`card ${styles.figure} ${wide ? styles.wide : ''}`} aria-labelledby={`${id}-title`} aria-describedby={`${id}-summary`} data-testid={id}>
      <figcaption className={styles.caption}>
        <h2 id={`${id}-title`} className={styles.figureTitle}>
          {title}
        </h2>
        <p id={`${id}-summary`} className={styles.figureSummary} data-testid={`${id}-summary`}>
          {summary}
        </p>
      </figcaption>
      <div className={styles.chart}>{children}</div>
      <details className={styles.dataDetails}>
        <summary>Data table</summary>
        <div className={styles.dataTableWrap}>
          <table className={`data-table ${styles.dataTable}`} aria-label={`${title}: data`}>
            <thead>
              <tr>
                {columns.map((c) => (
                  <th key={c.key} scope="col" className={c.numeric ? styles.num : undefined}>
                    {c.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {rows.map((row, i) => (
                <tr key={i}>
                  {columns.map((c, j) =>
                    j === 0 ? (
                      <th key={c.key} scope="row">
                        {row[c.key]}
                      </th>
                    ) : (
                      <td key={c.key} className={c.numeric ? styles.num : undefined}>
                        {typeof row[c.key] === 'number' ? (row[c.key] as number).toLocaleString('en-US') : row[c.key]}
                      </td>
                    ),
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
