import styles from '../../../components/sessions/sessions.module.css';

export default function SessionsLoading() {
  return (
    <div className={styles.loading} role="status" aria-live="polite">
      <h1>Sessions</h1>
      <p className="lead">Loading sessions…</p>
      <div className={styles.skeletonTable} aria-hidden="true">
        {Array.from({ length: 6 }, (_, i) => (
          <span key={i} className={styles.skeletonRow} />
        ))}
      </div>
    </div>
  );
}
