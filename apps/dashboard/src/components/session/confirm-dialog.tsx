'use client';

import { useEffect, useId, useRef, type ReactNode } from 'react';
import styles from './session.module.css';

const FOCUSABLE = 'button:not([disabled]), [href], input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

/**
 * A modal confirmation on the native <dialog>: showModal() makes the rest of the page inert,
 * Esc closes it (the "cancel" event), Tab and Shift+Tab cycle inside it, and focus goes back to
 * the control that opened it. Cancel has the initial focus, so Enter never confirms by accident.
 */
export function ConfirmDialog({
  open,
  title,
  children,
  confirmLabel,
  busy,
  confirmDisabled,
  tone = 'danger',
  wide,
  onConfirm,
  onClose,
}: {
  open: boolean;
  title: string;
  children: ReactNode;
  /** null: nothing to confirm, only Cancel (e.g. a preview that found nothing to do). */
  confirmLabel: string | null;
  busy?: boolean;
  /** The confirm button waits (e.g. for a preview) while Cancel stays usable. */
  confirmDisabled?: boolean;
  tone?: 'danger' | 'primary';
  /** A wider dialog whose body scrolls, for long content such as a preview. */
  wide?: boolean;
  onConfirm: () => void;
  onClose: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const cancelRef = useRef<HTMLButtonElement>(null);
  const opener = useRef<Element | null>(null);
  const titleId = useId();
  const bodyId = useId();

  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) {
      opener.current = document.activeElement;
      dialog.showModal();
      cancelRef.current?.focus();
    } else if (!open && dialog.open) {
      dialog.close();
    }
  }, [open]);

  // The dialog's own "close" fires for Esc and for close(); focus returns to where it was.
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    const onNativeClose = () => {
      const back = opener.current;
      opener.current = null;
      if (back instanceof HTMLElement && back.isConnected) back.focus();
      onClose();
    };
    dialog.addEventListener('close', onNativeClose);
    return () => dialog.removeEventListener('close', onNativeClose);
  }, [onClose]);

  const trapTab = (event: React.KeyboardEvent<HTMLDialogElement>) => {
    if (event.key !== 'Tab') return;
    const items = Array.from(ref.current?.querySelectorAll<HTMLElement>(FOCUSABLE) ?? []);
    if (items.length === 0) return;
    const first = items[0];
    const last = items[items.length - 1];
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  };

  return (
    <dialog ref={ref} className={wide ? `dialog ${styles.dialogWide}` : 'dialog'} aria-labelledby={titleId} aria-describedby={wide ? undefined : bodyId} onKeyDown={trapTab}>
      <h2 id={titleId} className={styles.dialogTitle}>
        {title}
      </h2>
      <div id={bodyId} className={styles.dialogBody}>
        {children}
      </div>
      <div className="dialog-actions">
        <button ref={cancelRef} type="button" className="button button-secondary" onClick={() => ref.current?.close()} disabled={busy}>
          Cancel
        </button>
        {confirmLabel !== null ? (
          <button type="button" className={tone === 'danger' ? 'button button-danger' : 'button button-primary'} onClick={onConfirm} disabled={busy || confirmDisabled} aria-busy={busy}>
            {busy ? 'Working…' : confirmLabel}
          </button>
        ) : null}
      </div>
    </dialog>
  );
}
