import Link from 'next/link';
import type { ApiAccessProblem } from './api-access';
import styles from './settings.module.css';

/**
 * What a page shows instead of its data when it cannot read it with the saved key. Not an
 * alert: the layout already announces an unreachable API, and these are states, not errors
 * of the moment.
 */
export function KeyNotice({ problem, what, onSettings = false }: { problem: ApiAccessProblem; what: string; onSettings?: boolean }) {
  const settingsLink = onSettings ? null : (
    <Link href="/settings" className={styles.noticeLink}>
      Go to Settings
    </Link>
  );
  switch (problem.state) {
    case 'no-key':
      // On Settings the form is right above: one quiet line per section instead of a notice each.
      if (onSettings) {
        return (
          <p className={styles.quietNotice} data-testid="key-notice" data-state="no-key">
            Shown once an API key is saved above.
          </p>
        );
      }
      return (
        <section className={`notice notice-info ${styles.notice}`} data-testid="key-notice" data-state="no-key" aria-label="API key needed">
          <strong>No API key entered yet</strong>
          <span>
            Enter an API key {onSettings ? 'above' : 'in Settings'} to see {what}. The key stays on the dashboard&apos;s server, in an httpOnly cookie.
          </span>
          {settingsLink}
        </section>
      );
    case 'rejected':
      return (
        <section className={`notice notice-warn ${styles.notice}`} data-testid="key-notice" data-state={`rejected-${problem.status}`} aria-label="API key rejected">
          <strong>{problem.status === 401 ? 'The API rejected the saved key' : 'The saved key lacks a scope'}</strong>
          <span>
            The API answered {problem.status}: “{problem.message}”.{' '}
            {problem.status === 401
              ? `Enter another key ${onSettings ? 'above' : 'in Settings'} to see ${what}.`
              : `Use a key with the needed scope to see ${what}.`}
          </span>
          {settingsLink}
        </section>
      );
    case 'unavailable':
      return (
        <section className={`notice notice-warn ${styles.notice}`} data-testid="key-notice" data-state="unavailable" aria-label="Data unavailable">
          <strong>Could not load {what}</strong>
          <span>{problem.reason}.</span>
        </section>
      );
  }
}
