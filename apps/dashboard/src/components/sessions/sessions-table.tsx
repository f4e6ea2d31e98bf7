import Link from 'next/link';
import type { SessionRow } from '../../lib/session-list';
import { ReliabilityBadge } from './reliability-badge';
import styles from './sessions.module.css';
import { UsageBar } from './usage-bar';

/** One page of sessions. On narrow screens each row becomes a card (see the module's media query). */
export function SessionsTable({ rows }: { rows: SessionRow[] }) {
  return (
    <div className={`card ${styles.tableWrap}`}>
      <table className={`data-table ${styles.table}`} aria-label="Sessions">
        <thead>
          <tr>
            <th scope="col">Session</th>
            <th scope="col">Model</th>
            <th scope="col">Context usage</th>
            <th scope="col">Reliability</th>
            <th scope="col" className={styles.numeric}>
              Compactions
            </th>
            <th scope="col">Last activity</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.id} data-testid="session-row" data-session-id={row.id}>
              <th scope="row" data-label="Session">
                <Link href={row.href} className={styles.sessionLink}>
                  {row.id}
                </Link>
                <span className={styles.subtle}>
                  {row.policy} · {row.messageCount} messages
                </span>
              </th>
              <td data-label="Model">
                <code className={styles.model}>{row.model}</code>
              </td>
              <td data-label="Context usage">
                <UsageBar bar={row.usage} />
              </td>
              <td data-label="Reliability">
                <ReliabilityBadge badge={row.reliability} showWarning />
              </td>
              <td data-label="Compactions" className={styles.numeric} data-testid="compactions">
                {row.compactions}
              </td>
              <td data-label="Last activity">
                <time dateTime={row.lastActivity.iso} title={row.lastActivity.absolute}>
                  {row.lastActivity.relative}
                </time>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
