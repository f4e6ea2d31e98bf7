import Link from 'next/link';
import { USAGE_FILTERS, type SessionListParams } from '../../lib/session-list';
import styles from './sessions.module.css';

/** A plain GET form: the filters live in the URL, the server renders the page, no client fetching. */
export function SessionsFilters({ params }: { params: SessionListParams }) {
  const filtered = Boolean(params.search || params.model || params.usage);
  return (
    <form className={`card ${styles.filters}`} action="/sessions" method="get" role="search" aria-label="Sessions">
      <div className={styles.field}>
        <label htmlFor="sessions-q">Session id contains</label>
        <input id="sessions-q" name="q" type="search" defaultValue={params.search ?? ''} maxLength={128} autoComplete="off" spellCheck={false} />
      </div>
      <div className={styles.field}>
        <label htmlFor="sessions-model">Model</label>
        <input id="sessions-model" name="model" type="text" defaultValue={params.model ?? ''} maxLength={200} placeholder="any" autoComplete="off" spellCheck={false} />
      </div>
      <div className={styles.field}>
        <label htmlFor="sessions-usage">Context usage</label>
        <select id="sessions-usage" name="usage" defaultValue={params.usage ?? ''}>
          <option value="">Any</option>
          {Object.entries(USAGE_FILTERS).map(([value, { label }]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </div>
      <div className={styles.filterActions}>
        <button type="submit" className="button button-primary">
          Search
        </button>
        {filtered ? (
          <Link href="/sessions" className={styles.textLink}>
            Clear
          </Link>
        ) : null}
      </div>
    </form>
  );
}
