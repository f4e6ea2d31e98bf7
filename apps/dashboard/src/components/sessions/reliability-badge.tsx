import type { ReliabilityBadgeView } from '../../lib/session-reliability';
import styles from './sessions.module.css';

/** Seed 004's badge: the emoji and the words carry the level, the colour only repeats it. */
export function ReliabilityBadge({ badge, showWarning = false }: { badge: ReliabilityBadgeView; showWarning?: boolean }) {
  const firstLine = badge.warning?.split('\n')[0]?.trim();
  return (
    <span className={styles.reliability}>
      <span className={styles.reliabilityBadge} data-level={badge.level} data-score={badge.score} data-testid="reliability-badge">
        <span className="visually-hidden">Reliability: </span>
        {badge.text}
      </span>
      {showWarning && firstLine ? <span className={styles.reliabilityWarning}>{firstLine}</span> : null}
    </span>
  );
}
