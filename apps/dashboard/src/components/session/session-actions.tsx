'use client';

import { useRouter } from 'next/navigation';
import { useCallback, useState, useTransition } from 'react';
import { compactNowAction, undoCompactionAction } from '../../app/sessions/[id]/actions';
import type { ActionResult } from '../../lib/session-api';
import { ConfirmDialog } from './confirm-dialog';
import styles from './session.module.css';

/** "Compact now" and "Undo last compaction", with the outcome in a status line. */
export function SessionActions({ sessionId, undoJobId }: { sessionId: string; undoJobId: string | null }) {
  const router = useRouter();
  const [result, setResult] = useState<ActionResult | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [pending, startTransition] = useTransition();

  const compact = () =>
    startTransition(async () => {
      const outcome = await compactNowAction(sessionId);
      setResult(outcome);
    });

  const undo = () =>
    startTransition(async () => {
      if (!undoJobId) return;
      const outcome = await undoCompactionAction(sessionId, undoJobId);
      setResult(outcome);
      setConfirming(false);
      if (outcome.ok) router.refresh();
    });

  const close = useCallback(() => setConfirming(false), []);

  return (
    <div className={styles.actions}>
      <div className={styles.actionButtons}>
        <button type="button" className={styles.primaryButton} onClick={compact} disabled={pending}>
          Compact now
        </button>
        <button type="button" className={styles.secondaryButton} onClick={() => setConfirming(true)} disabled={pending || !undoJobId} title={undoJobId ? undefined : 'No compaction to undo yet'}>
          Undo last compaction
        </button>
      </div>
      <p className={result && !result.ok ? styles.actionError : styles.actionStatus} role="status" aria-live="polite" data-testid="action-status">
        {result?.message ?? ''}
      </p>
      <ConfirmDialog open={confirming} title="Undo the last compaction?" confirmLabel="Undo compaction" busy={pending} onConfirm={undo} onClose={close}>
        <p>
          The context goes back to the version saved right before the last compaction (job <code>{undoJobId?.slice(0, 8)}</code>). The history is untouched, and
          messages appended since stay live.
        </p>
      </ConfirmDialog>
    </div>
  );
}
