import styles from '../../../components/sessions/sessions.module.css';

export default function SessionsLoading() {
  return (
    <div role="status" aria-live="polite">
      <h1>Sessions</h1>
      <p className="lead">Loading sessions…</p>
      <div className={`card ${styles.skeletonTable}`} aria-hidden="true">
        {Array.from({ length: 6 }, (_, i) => (
          <span key={i} className={`skeleton ${styles.skeletonRow}`} />
        ))}
      </div>
    </div>
  );
}
