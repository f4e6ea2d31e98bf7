'use client';

import { useActionState, useEffect, useId, useRef } from 'react';
import { useFormStatus } from 'react-dom';
import { revokeApiKey, type FormState } from '../../app/settings/actions';
import styles from './settings.module.css';

function ConfirmButton() {
  const { pending } = useFormStatus();
  return (
    <button type="submit" className="button button-danger" disabled={pending} aria-disabled={pending}>
      {pending ? 'Revoking…' : 'Revoke key'}
    </button>
  );
}

/** Revoke, after a confirmation in a modal dialog (focus stays inside it; Escape or Cancel closes it). */
export function RevokeKeyButton({ keyId, name, prefix, inUse }: { keyId: string; name: string; prefix: string; inUse: boolean }) {
  const dialogRef = useRef<HTMLDialogElement>(null);
  const [state, action] = useActionState<FormState, FormData>(revokeApiKey, { status: 'idle' });
  const id = useId();

  useEffect(() => {
    if (state.status === 'done') dialogRef.current?.close();
  }, [state]);

  return (
    <>
      <button type="button" className="button button-danger-outline" onClick={() => dialogRef.current?.showModal()} aria-label={`Revoke ${name}`}>
        Revoke
      </button>
      <dialog ref={dialogRef} className={`dialog ${styles.dialog}`} aria-labelledby={`${id}-title`} aria-describedby={`${id}-text`}>
        <form action={action}>
          <h3 id={`${id}-title`}>Revoke “{name}”?</h3>
          <p id={`${id}-text`}>
            Requests with the key <code>{prefix}…</code> get 401 from now on. This cannot be undone.
            {inUse && <strong> This is the key this dashboard uses: it will need another one.</strong>}
          </p>
          <input type="hidden" name="keyId" value={keyId} />
          {state.status === 'error' && (
            <p className={styles.errorText} role="alert">
              {state.message}
            </p>
          )}
          <div className="dialog-actions">
            <button type="button" className="button button-plain" onClick={() => dialogRef.current?.close()} autoFocus>
              Cancel
            </button>
            <ConfirmButton />
          </div>
        </form>
      </dialog>
    </>
  );
}
