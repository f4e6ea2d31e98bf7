import Link from 'next/link';
import type { ListPagination } from '../../lib/session-list';
import styles from './sessions.module.css';

/** Keyset paging: forward with the API's cursor, back through the cursors kept in the URL. */
export function SessionsPagination({ pagination, shown }: { pagination: ListPagination; shown: number }) {
  const { page, firstHref, previousHref, nextHref } = pagination;
  if (!firstHref && !previousHref && !nextHref) return null;
  return (
    <nav className={styles.pagination} aria-label="Sessions pages">
      <p className={styles.pageInfo} aria-live="polite">
        Page {page} · {shown} session{shown === 1 ? '' : 's'} on this page
      </p>
      <ul>
        {firstHref && previousHref !== firstHref ? (
          <li>
            <Link href={firstHref}>First page</Link>
          </li>
        ) : null}
        {previousHref ? (
          <li>
            <Link href={previousHref} rel="prev">
              ← Previous
            </Link>
          </li>
        ) : null}
        {nextHref ? (
          <li>
            <Link href={nextHref} rel="next">
              Next →
            </Link>
          </li>
        ) : null}
      </ul>
    </nav>
  );
}
