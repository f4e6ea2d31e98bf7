'use client';

import { useRouter } from 'next/navigation';
import { useCallback, useState, useTransition, type FormEvent } from 'react';
import { createSnapshotAction, restoreSnapshotAction } from '../../app/sessions/[id]/actions';
import type { ActionResult } from '../../lib/session-api';
import type { SnapshotRow } from '../../lib/session-snapshots';
import { ConfirmDialog } from './confirm-dialog';
import { ListPager, type ListPaging } from './live-events';
import styles from './session.module.css';

/** Snapshots: create one with a label, restore one after a confirmation; the page refreshes after either. */
export function SnapshotsPanel({ sessionId, snapshots, paging }: { sessionId: string; snapshots: SnapshotRow[]; paging: ListPaging }) {
  const router = useRouter();
  const [label, setLabel] = useState('');
  const [result, setResult] = useState<ActionResult | null>(null);
  const [restoring, setRestoring] = useState<SnapshotRow | null>(null);
  const [pending, startTransition] = useTransition();

  const create = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    startTransition(async () => {
      const outcome = await createSnapshotAction(sessionId, label);
      setResult(outcome);
      if (outcome.ok) {
        setLabel('');
        router.refresh();
      }
    });
  };

  const restore = () =>
    startTransition(async () => {
      if (!restoring) return;
      const outcome = await restoreSnapshotAction(sessionId, restoring.id);
      setResult(outcome);
      setRestoring(null);
      if (outcome.ok) router.refresh();
    });

  const close = useCallback(() => setRestoring(null), []);

  return (
    <section className={`card ${styles.panel}`} aria-labelledby="snapshots-heading" data-testid="snapshots">
      <header className={styles.panelHeader}>
        <h2 id="snapshots-heading">Snapshots</h2>
        <span className="muted">{snapshots.length === 0 ? (paging.newest ? 'no older ones' : 'none yet') : `${snapshots.length} ${paging.newest ? 'older' : 'newest'} first`}</span>
      </header>
      <form className={styles.inlineForm} onSubmit={create}>
        <label htmlFor="snapshot-label">Label</label>
        <input id="snapshot-label" value={label} onChange={(e) => setLabel(e.target.value)} maxLength={200} placeholder="e.g. before the refactor" autoComplete="off" />
        <button type="submit" className="button button-secondary" disabled={pending}>
          Create snapshot
        </button>
      </form>
      <p className={result && !result.ok ? styles.actionError : styles.actionStatus} role="status" aria-live="polite" data-testid="snapshot-status">
        {result?.message ?? ''}
      </p>
      {snapshots.length === 0 ? (
        <p className="empty-note">No snapshots yet. One is taken automatically before every compaction and at 80% of the budget.</p>
      ) : (
        <ol className={styles.snapshotList}>
          {snapshots.map((s) => (
            <li key={s.id} className={styles.snapshot} data-testid="snapshot" data-snapshot-id={s.id} data-version={s.version}>
              <div className={styles.snapshotText}>
                <strong className={styles.snapshotTitle}>{s.title}</strong>
                <span className={styles.snapshotMeta}>
                  <span className={styles.tag}>{s.kindLabel}</span> {s.details}
                </span>
                <time className={styles.snapshotMeta} dateTime={s.createdAt}>
                  {s.createdText}
                </time>
              </div>
              <button type="button" className="button button-secondary" onClick={() => setRestoring(s)} disabled={pending} aria-label={`Restore snapshot: ${s.title}`}>
                Restore
              </button>
            </li>
          ))}
        </ol>
      )}
      <ListPager paging={paging} noun="snapshots" />
      <ConfirmDialog open={restoring !== null} title="Restore this snapshot?" confirmLabel="Restore snapshot" busy={pending} onConfirm={restore} onClose={close}>
        <p>
          <strong>{restoring?.title}</strong>
        </p>
        <p>
          The context becomes version {restoring?.version} again, as a new head version: checkpoints, masked outputs, watermark and goal block as they were then.
          The full history is untouched, and messages appended since the snapshot stay live.
        </p>
      </ConfirmDialog>
    </section>
  );
}
