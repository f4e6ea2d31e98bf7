import type { UsageBarView } from '../../lib/session-list';
import styles from './sessions.module.css';

/** Context tokens against the budget, with the trigger line where the policy compacts. */
export function UsageBar({ bar }: { bar: UsageBarView }) {
  return (
    <span className={styles.usage} data-testid="usage-bar" data-context-tokens={bar.contextTokens} data-budget={bar.budget} data-threshold={bar.threshold} data-state={bar.state}>
      <span className={styles.usageTrack} role="img" aria-label={bar.description}>
        <span className={styles.usageFill} style={{ width: `${bar.fill}%` }} />
        <span className={styles.usageTrigger} style={{ left: `${bar.trigger}%` }} />
      </span>
      <span className={styles.usageText}>{bar.text}</span>
    </span>
  );
}
