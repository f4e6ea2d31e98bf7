import type { CheckpointTimeline as Timeline } from '../../lib/session-checkpoints';
import styles from './session.module.css';

/**
 * Checkpoints by level: one lane per level (recent → ultra) on the history's seq axis, then each
 * checkpoint as a card with its range, size against the original, whether the context uses it,
 * and where it was aged from. The lanes are a picture of the cards below, which carry the data.
 */
export function CheckpointTimeline({ timeline, messageCount }: { timeline: Timeline; messageCount: number }) {
  return (
    <section className={`card ${styles.panel}`} aria-labelledby="checkpoints-heading" data-testid="checkpoints" data-total={timeline.total} data-in-context={timeline.inContext}>
      <header className={styles.panelHeader}>
        <h2 id="checkpoints-heading">Checkpoints by level</h2>
        <span className="muted">
          {timeline.total} total · {timeline.inContext} in context
        </span>
      </header>
      {timeline.total === 0 ? (
        <p className="empty-note">No checkpoints yet: nothing has been summarized. A compaction that summarizes writes the first one.</p>
      ) : (
        <>
          <div className={styles.lanes} role="img" aria-label={`Checkpoint timeline over messages 1–${messageCount}. ${timeline.summary}`}>
            {timeline.lanes.map((lane) => (
              <div key={lane.level} className={styles.lane} data-level={lane.level}>
                <span className={styles.laneLabel}>{lane.label}</span>
                <span className={styles.laneTrack}>
                  {lane.checkpoints.map((c) => (
                    <span
                      key={c.id}
                      className={styles.laneBar}
                      data-in-context={c.inContext}
                      style={{ left: `${c.bar.left}%`, width: `${c.bar.width}%` }}
                      title={`${c.id}: ${c.range}, ${c.sizeText}`}
                    />
                  ))}
                </span>
              </div>
            ))}
            <div className={styles.laneAxis} aria-hidden="true">
              <span>message 1</span>
              <span>message {messageCount}</span>
            </div>
          </div>
          <p className="visually-hidden">{timeline.summary}</p>
          {timeline.lanes
            .filter((lane) => lane.checkpoints.length > 0)
            .map((lane) => (
              <div key={lane.level} className={styles.levelGroup}>
                <h3 className={styles.levelHeading}>
                  <span className={styles.levelDot} data-level={lane.level} aria-hidden="true" />
                  {lane.label} <span className="muted">· {lane.description}</span>
                </h3>
                <ol className={styles.checkpointList}>
                  {lane.checkpoints.map((c) => (
                    <li key={c.id} id={c.anchor} className={styles.checkpoint} data-testid="checkpoint" data-level={c.level} data-in-context={c.inContext} tabIndex={-1}>
                      <div className={styles.checkpointHead}>
                        <strong>{c.range}</strong>
                        <span className={c.inContext ? styles.tagOk : styles.tagMuted}>{c.inContext ? 'In context' : 'Superseded'}</span>
                      </div>
                      <p className={styles.checkpointMeta}>
                        <code>{c.id}</code> · {c.sizeText}
                        {c.factsSurvived ? ` · facts kept ${c.factsSurvived}` : ''} · {c.createdText}
                      </p>
                      {c.agedFrom || c.agedInto ? (
                        <p className={styles.checkpointMeta}>
                          {c.agedFrom ? (
                            <>
                              Aged from <a href={`#${c.agedFrom.anchor}`}>{c.agedFrom.id}</a>
                            </>
                          ) : null}
                          {c.agedFrom && c.agedInto ? ' · ' : null}
                          {c.agedInto ? (
                            <>
                              Aged into <a href={`#${c.agedInto.anchor}`}>{c.agedInto.id}</a>
                            </>
                          ) : null}
                        </p>
                      ) : null}
                      <details className={styles.details}>
                        <summary>Summary text</summary>
                        <pre className={styles.pre}>
                          <code>{c.text}</code>
                        </pre>
                        {c.keyDecisions.length + c.filesModified.length + c.nextSteps.length > 0 ? (
                          <dl className={styles.miniFacts}>
                            {c.keyDecisions.length > 0 ? (
                              <>
                                <dt>Key decisions</dt>
                                <dd>{c.keyDecisions.join(' · ')}</dd>
                              </>
                            ) : null}
                            {c.filesModified.length > 0 ? (
                              <>
                                <dt>Files modified</dt>
                                <dd>{c.filesModified.join(', ')}</dd>
                              </>
                            ) : null}
                            {c.nextSteps.length > 0 ? (
                              <>
                                <dt>Next steps</dt>
                                <dd>{c.nextSteps.join(' · ')}</dd>
                              </>
                            ) : null}
                          </dl>
                        ) : null}
                      </details>
                      {c.facts ? (
                        <details className={styles.details} data-testid="checkpoint-facts">
                          <summary>Facts section</summary>
                          <p className={styles.checkpointMeta}>Facts the summary lacked, appended to it as they were written.</p>
                          <pre className={styles.pre}>
                            <code>{c.facts}</code>
                          </pre>
                        </details>
                      ) : null}
                    </li>
                  ))}
                </ol>
              </div>
            ))}
        </>
      )}
    </section>
  );
}
