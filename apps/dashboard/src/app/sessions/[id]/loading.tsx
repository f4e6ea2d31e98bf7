import styles from '../../../components/session/session.module.css';

export default function SessionLoading() {
  return (
    <div role="status" aria-live="polite">
      <p className={styles.breadcrumb}>Sessions</p>
      <h1 className={styles.title}>Session</h1>
      <p className="lead">Loading the session: usage, checkpoints, snapshots, context and history…</p>
      <div className={styles.grid} aria-hidden="true">
        <span className={styles.skeleton} style={{ height: 320 }} />
        <span className={styles.skeleton} style={{ height: 320 }} />
      </div>
      <span className={styles.skeleton} style={{ height: 200, marginTop: '1rem' }} aria-hidden="true" />
    </div>
  );
}
