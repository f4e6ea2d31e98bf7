'use client';

import { useActionState, useEffect, useId, useRef, useState } from 'react';
import { useFormStatus } from 'react-dom';
import { createApiKey, type CreateKeyState } from '../../app/settings/actions';
import { expiryInstant, MAX_KEY_LIFETIME_DAYS, SCOPE_CHOICES } from './settings-view';
import styles from './settings.module.css';

function SubmitButton() {
  const { pending } = useFormStatus();
  return (
    <button type="submit" className="button button-primary" disabled={pending} aria-disabled={pending}>
      {pending ? 'Creating…' : 'Create key'}
    </button>
  );
}

function CopyButton({ text, label }: { text: string; label: string }) {
  const [copied, setCopied] = useState<'idle' | 'copied' | 'failed'>('idle');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied('copied');
    } catch {
      setCopied('failed');
    }
  };
  return (
    <>
      <button type="button" className="button button-plain" onClick={() => void copy()} aria-label={label}>
        {copied === 'copied' ? 'Copied' : 'Copy'}
      </button>
      <span role="status" className="visually-hidden">
        {copied === 'copied' ? 'Key copied to the clipboard.' : copied === 'failed' ? 'Copy failed: select the key and copy it by hand.' : ''}
      </span>
    </>
  );
}

/** Create a key: its secret is shown once, here, with a copy button; the list below refreshes. */
export function CreateKeyForm() {
  const [state, action] = useActionState<CreateKeyState, FormData>(createApiKey, { status: 'idle' });
  const id = useId();
  const secretRef = useRef<HTMLElement>(null);
  const invalid = state.status === 'error';
  const created = state.status === 'done' ? state.created : undefined;

  // Move focus to the new key so a keyboard or screen-reader user lands on it.
  useEffect(() => {
    if (created) secretRef.current?.focus();
  }, [created]);

  return (
    <div className={styles.createKey}>
      <form action={action} className={styles.createForm} aria-label="Create an API key">
        <div className={styles.field}>
          <label htmlFor={`${id}-name`} className={styles.label}>
            Name
          </label>
          <input
            id={`${id}-name`}
            name="name"
            type="text"
            maxLength={100}
            autoComplete="off"
            className={styles.input}
            placeholder="e.g. ingest from agent-fleet"
            aria-invalid={(invalid && state.field === 'name') || undefined}
            aria-describedby={invalid ? `${id}-error` : undefined}
          />
        </div>
        <fieldset className={styles.scopes} aria-invalid={(invalid && state.field === 'scopes') || undefined}>
          <legend className={styles.label}>Scopes</legend>
          {SCOPE_CHOICES.map((scope) => (
            <label key={scope.value} className={styles.checkbox}>
              <input type="checkbox" name="scopes" value={scope.value} defaultChecked={scope.value !== 'admin'} />
              <span>
                <code>{scope.label}</code> <span className={styles.hintInline}>{scope.hint}</span>
              </span>
            </label>
          ))}
        </fieldset>
        <div className={styles.field}>
          <label htmlFor={`${id}-expires`} className={styles.label}>
            Expires after (days)
          </label>
          <input
            id={`${id}-expires`}
            name="expiresInDays"
            type="number"
            inputMode="numeric"
            min={1}
            max={MAX_KEY_LIFETIME_DAYS}
            step={1}
            autoComplete="off"
            className={`${styles.input} ${styles.daysInput}`}
            placeholder="never"
            aria-invalid={(invalid && state.field === 'expiresInDays') || undefined}
            aria-describedby={`${id}-expires-hint${invalid ? ` ${id}-error` : ''}`}
          />
          <span id={`${id}-expires-hint`} className={styles.hintInline}>
            Empty: the key never expires. An expired key is refused like a revoked one.
          </span>
        </div>
        <SubmitButton />
        {invalid && (
          <p id={`${id}-error`} className={styles.errorText} role="alert">
            {state.message}
          </p>
        )}
      </form>
      {created && (
        <section className={styles.newKey} aria-labelledby={`${id}-new`}>
          <h3 id={`${id}-new`}>New key “{created.name}”</h3>
          <p className={styles.hint}>
            Copy it now: it is shown only this once. Compactor keeps only its hash.
            {created.expiresAt && ` It expires ${expiryInstant(created.expiresAt, Date.now())}.`}
          </p>
          <div className={styles.secretRow}>
            <code ref={secretRef} tabIndex={-1} className={styles.secret} data-testid="new-key-secret">
              {created.secret}
            </code>
            <CopyButton text={created.secret} label={`Copy the key “${created.name}”`} />
          </div>
        </section>
      )}
    </div>
  );
}
