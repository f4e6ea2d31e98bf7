import type { GoalPanelView } from '../../lib/session-goal';
import styles from './session.module.css';

/** Seed 004's goal panel: the goal, its checkpoints ✅ 🔄 ⏳, locked decisions 🔒, constraints, next step. */
export function GoalPanel({ goal }: { goal: GoalPanelView }) {
  return (
    <section className={`card ${styles.panel}`} aria-labelledby="goal-heading" data-testid="goal">
      <header className={styles.panelHeader}>
        <h2 id="goal-heading">Goal</h2>
        {goal.meta.length > 0 ? <span className="muted">{goal.meta.join(' · ')}</span> : null}
      </header>
      {goal.empty ? (
        <p className="empty-note">
          No goal recorded. Agents set one with <code>[GOAL]</code>, <code>[CHECKPOINT]</code>, <code>[DECISION] … - LOCKED</code> and <code>[NEXT]</code> markers, or with{' '}
          <code>PUT /v1/sessions/:id/goal</code>.
        </p>
      ) : (
        <div className={styles.goalBody}>
          <p className={styles.goalText}>{goal.goal ?? <span className="muted">No goal text yet.</span>}</p>
          {goal.checkpoints.length > 0 ? (
            <>
              <h3 className={styles.subheading}>Checkpoints</h3>
              <ul className={styles.plainList}>
                {goal.checkpoints.map((c, i) => (
                  <li key={i}>
                    <span aria-hidden="true">{c.emoji}</span> {c.text} <span className="visually-hidden">({c.status})</span>
                  </li>
                ))}
              </ul>
            </>
          ) : null}
          {goal.decisions.length > 0 ? (
            <>
              <h3 className={styles.subheading}>Decisions</h3>
              <ul className={styles.plainList}>
                {goal.decisions.map((d, i) => (
                  <li key={i}>
                    <span aria-hidden="true">{d.emoji}</span> {d.text} <span className="visually-hidden">({d.locked ? 'locked' : 'unlocked'})</span>
                  </li>
                ))}
              </ul>
            </>
          ) : null}
          {goal.constraints.length > 0 ? (
            <>
              <h3 className={styles.subheading}>Constraints</h3>
              <ul className={styles.plainList}>
                {goal.constraints.map((c, i) => (
                  <li key={i}>{c}</li>
                ))}
              </ul>
            </>
          ) : null}
          {goal.artifacts.length > 0 ? (
            <>
              <h3 className={styles.subheading}>Artifacts</h3>
              <ul className={styles.plainList}>
                {goal.artifacts.map((a, i) => (
                  <li key={i}>{a.text}</li>
                ))}
              </ul>
            </>
          ) : null}
          {goal.nextStep ? (
            <p>
              <strong>Next step:</strong> {goal.nextStep}
            </p>
          ) : null}
        </div>
      )}
      {goal.goalBlock ? <p className={styles.legend}>{goal.goalBlock}</p> : null}
    </section>
  );
}
