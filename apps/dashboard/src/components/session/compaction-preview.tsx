import type { CompactionPreview } from '../../lib/compaction-preview';
import { formatTokens } from '../../lib/session-format';
import { LedgerEntries, LedgerGroups } from './ledger-entries';
import styles from './session.module.css';

/** The body of the "Compact now" dialog: what a dry run says the compaction would do. */
export function CompactionPreviewBody({ preview }: { preview: CompactionPreview | 'loading' }) {
  if (preview === 'loading') {
    return (
      <p className={styles.progress} role="status" aria-live="polite" data-testid="compaction-preview" data-state="loading">
        <span className={styles.spinner} aria-hidden="true" />
        Working out what a compaction would do. Nothing changes yet.
      </p>
    );
  }
  if (preview.kind === 'unavailable') {
    return (
      <div data-testid="compaction-preview" data-state={preview.reason}>
        <p className={preview.reason === 'skipped' ? 'empty-note' : styles.warning} role="alert">
          {preview.message}
        </p>
      </div>
    );
  }
  const { context, ledger } = preview;
  return (
    <div data-testid="compaction-preview" data-state="ready" data-job-id={preview.jobId}>
      <dl className={styles.auditFigures}>
        <div>
          <dt>Tokens</dt>
          <dd data-testid="preview-tokens">{preview.tokens}</dd>
        </div>
        <div>
          <dt>Cost of the preview</dt>
          <dd>{preview.cost}</dd>
        </div>
        {ledger ? (
          <div>
            <dt>Facts</dt>
            <dd data-testid="preview-ledger">{ledger.text}</dd>
          </div>
        ) : null}
      </dl>

      <h3 className={styles.previewHeading}>
        Facts it would drop ({preview.drops.length}){preview.truncated ? <span className="muted"> · the first ones only</span> : null}
      </h3>
      {preview.dropsText ? <p className="muted">{preview.dropsText}.</p> : null}
      <LedgerEntries entries={preview.drops} testId="preview-drops" empty="None: the context would still hold every fact of the part it compacts." />

      <details className={styles.details} data-testid="preview-context">
        <summary>
          New context: {formatTokens(context.messages)} messages, {formatTokens(context.tokens)} tokens
          {context.checkpoints.length > 0 ? `, ${context.checkpoints.length} ${context.checkpoints.length === 1 ? 'checkpoint' : 'checkpoints'}` : ''}
        </summary>
        {context.checkpoints.length === 0 ? <p className="empty-note">No checkpoints: nothing would be summarized.</p> : null}
        {context.checkpoints.map((c, i) => (
          <div key={i} data-testid="preview-checkpoint">
            <h4 className={styles.ledgerHeading}>{c.title}</h4>
            <pre className={styles.pre}>
              <code>{c.text}</code>
            </pre>
          </div>
        ))}
      </details>

      {ledger ? (
        <details className={styles.details}>
          <summary>Facts ledger entries</summary>
          <LedgerGroups ledger={ledger} />
        </details>
      ) : null}
      <p className={styles.previewNote}>Apply runs the compaction for real. Messages appended meanwhile can change the result.</p>
    </div>
  );
}
