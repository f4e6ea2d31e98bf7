'use client';

import { useRouter } from 'next/navigation';
import { useCallback, useEffect, useRef, useState, useTransition } from 'react';
import { compactNowAction, undoCompactionAction } from '../../app/sessions/[id]/actions';
import { parsePreviewAnswer, type CompactionPreview } from '../../lib/compaction-preview';
import type { ActionResult } from '../../lib/session-api';
import { CompactionPreviewBody } from './compaction-preview';
import { ConfirmDialog } from './confirm-dialog';
import styles from './session.module.css';

type Dialog = null | 'undo' | { preview: CompactionPreview | 'loading' };

/**
 * "Compact now" (a dry run first, shown in a dialog with Apply and Cancel) and "Undo last
 * compaction", with the outcome in a status line.
 */
export function SessionActions({ sessionId, undoJobId }: { sessionId: string; undoJobId: string | null }) {
  const router = useRouter();
  const [result, setResult] = useState<ActionResult | null>(null);
  const [dialog, setDialog] = useState<Dialog>(null);
  const [pending, startTransition] = useTransition();
  // The dry run in flight: closing the dialog aborts it, and a late answer of an aborted one is ignored.
  const previewRequest = useRef<AbortController | null>(null);

  useEffect(() => () => previewRequest.current?.abort(), []);

  const preview = () => {
    previewRequest.current?.abort();
    const request = new AbortController();
    previewRequest.current = request;
    setDialog({ preview: 'loading' });
    void (async () => {
      let answer: CompactionPreview;
      try {
        const response = await fetch(`/api/sessions/${encodeURIComponent(sessionId)}/compaction-preview`, { method: 'POST', signal: request.signal, cache: 'no-store' });
        const body: unknown = await response.json().catch(() => null);
        answer = parsePreviewAnswer(response.status, body);
      } catch {
        if (request.signal.aborted) return;
        answer = { kind: 'unavailable', reason: 'error', message: 'The dashboard did not answer. Try again, or compact without a preview.', canApply: true };
      }
      if (request.signal.aborted || previewRequest.current !== request) return;
      previewRequest.current = null;
      setDialog({ preview: answer });
    })();
  };

  const apply = () =>
    startTransition(async () => {
      const outcome = await compactNowAction(sessionId);
      setResult(outcome);
      setDialog(null);
    });

  const undo = () =>
    startTransition(async () => {
      if (!undoJobId) return;
      const outcome = await undoCompactionAction(sessionId, undoJobId);
      setResult(outcome);
      setDialog(null);
      if (outcome.ok) router.refresh();
    });

  const close = useCallback(() => {
    previewRequest.current?.abort();
    previewRequest.current = null;
    setDialog(null);
  }, []);

  const shown = dialog !== null && dialog !== 'undo' ? dialog.preview : null;
  const applyLabel = shown === null || shown === 'loading' || shown.kind === 'ready' ? 'Apply' : shown.canApply ? 'Compact anyway' : null;

  return (
    <div className={styles.actions}>
      <div className={styles.actionButtons}>
        <button type="button" className="button button-primary" onClick={preview} disabled={pending}>
          Compact now
        </button>
        <button
          type="button"
          className="button button-secondary"
          onClick={() => setDialog('undo')}
          disabled={pending || !undoJobId}
          title={undoJobId ? undefined : 'No compaction to undo yet'}
        >
          Undo last compaction
        </button>
      </div>
      <p className={result && !result.ok ? styles.actionError : styles.actionStatus} role="status" aria-live="polite" data-testid="action-status">
        {result?.message ?? ''}
      </p>
      <ConfirmDialog
        open={shown !== null}
        title="Preview compaction"
        confirmLabel={applyLabel}
        tone="primary"
        wide
        busy={pending}
        confirmDisabled={shown === 'loading'}
        onConfirm={apply}
        onClose={close}
      >
        {shown !== null ? <CompactionPreviewBody preview={shown} /> : null}
      </ConfirmDialog>
      <ConfirmDialog open={dialog === 'undo'} title="Undo the last compaction?" confirmLabel="Undo compaction" busy={pending} onConfirm={undo} onClose={close}>
        <p>
          The context goes back to the version saved right before the last compaction (job <code>{undoJobId?.slice(0, 8)}</code>). The history is untouched, and
          messages appended since stay live.
        </p>
      </ConfirmDialog>
    </div>
  );
}
