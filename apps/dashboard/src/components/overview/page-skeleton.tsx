import styles from './overview.module.css';

/** A page's shape while its data loads (loading.tsx): grey blocks, and the words for screen readers. */
export function PageSkeleton({ label, blocks = 3 }: { label: string; blocks?: number }) {
  return (
    <div className={styles.skeletonPage} aria-busy="true">
      <p role="status" className={styles.skeletonLabel}>
        {label}
      </p>
      <div className={`skeleton ${styles.skeletonTitle}`} />
      <div className={styles.skeletonCards}>
        {Array.from({ length: 4 }, (_, i) => (
          <div key={i} className={`skeleton ${styles.skeletonCard}`} />
        ))}
      </div>
      {Array.from({ length: blocks }, (_, i) => (
        <div key={i} className={`skeleton ${styles.skeletonBlock}`} />
      ))}
    </div>
  );
}
