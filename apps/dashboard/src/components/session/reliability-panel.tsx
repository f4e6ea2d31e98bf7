import { RELIABILITY_BANDS, type ReliabilityBadgeView } from '../../lib/session-reliability';
import { ReliabilityBadge } from '../sessions/reliability-badge';
import styles from './session.module.css';

/** Seed 004's reliability score: the badge, its warning, and the three factors it multiplies. */
export function ReliabilityPanel({ badge, compactions }: { badge: ReliabilityBadgeView; compactions: number }) {
  return (
    <section className={`card ${styles.panel} ${styles.reliabilityPanel}`} aria-labelledby="reliability-heading" data-testid="reliability">
      <header className={styles.panelHeader}>
        <h2 id="reliability-heading">Reliability</h2>
        <ReliabilityBadge badge={badge} />
      </header>
      <p className={styles.score}>
        <span className={styles.scoreNumber}>{badge.score}</span>
        <span className="muted"> / 100 after {compactions === 1 ? '1 compaction' : `${compactions} compactions`}</span>
      </p>
      {badge.warning ? (
        <div className={styles.warning} role="note" data-testid="reliability-warning">
          {badge.warning}
        </div>
      ) : null}
      <dl className={styles.factors}>
        {badge.factors.map((f) => (
          <div key={f.key} className={styles.factor}>
            <dt>{f.label}</dt>
            <dd>
              <span className={styles.factorValue} data-testid={`factor-${f.key}`}>
                {f.text}
              </span>
              <span className={styles.factorHelp}>{f.explanation}</span>
            </dd>
          </div>
        ))}
      </dl>
      <p className={styles.legend}>
        score = 100 × model factor × compression penalty × context confidence ·{' '}
        {RELIABILITY_BANDS.map((b) => `${b.emoji} ${b.range}`).join(' · ')}
      </p>
    </section>
  );
}
