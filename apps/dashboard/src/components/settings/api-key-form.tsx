'use client';

import { useActionState, useId } from 'react';
import { useFormStatus } from 'react-dom';
import { saveApiKey, type FormState } from '../../app/settings/actions';
import styles from './settings.module.css';

function SubmitButton({ label }: { label: string }) {
  const { pending } = useFormStatus();
  return (
    <button type="submit" className="button button-primary" disabled={pending} aria-disabled={pending}>
      {pending ? 'Checking…' : label}
    </button>
  );
}

/**
 * Enter the API key once. The value goes to a Server Action in the POST body, which checks it
 * against the API and keeps it in an httpOnly cookie; the field is cleared after each submit
 * and the page never shows the key again.
 */
export function ApiKeyForm({ replacing = false }: { replacing?: boolean }) {
  const [state, action] = useActionState<FormState, FormData>(saveApiKey, { status: 'idle' });
  const id = useId();
  const messageId = `${id}-message`;
  const hintId = `${id}-hint`;
  const invalid = state.status === 'error';
  return (
    <form action={action} className={styles.keyForm} aria-label={replacing ? 'Replace the API key' : 'Enter the API key'}>
      <label htmlFor={`${id}-key`} className={styles.label}>
        {replacing ? 'Another API key' : 'API key'}
      </label>
      <p id={hintId} className={styles.hint}>
        A key of this tenant, e.g. from <code>npm run keys -- create</code>. It is checked against the API, then kept in an httpOnly cookie: the
        browser&apos;s scripts never read it.
      </p>
      <div className={styles.inline}>
        <input
          id={`${id}-key`}
          name="apiKey"
          type="password"
          autoComplete="off"
          spellCheck={false}
          className={styles.input}
          aria-invalid={invalid || undefined}
          aria-describedby={`${hintId}${state.message ? ` ${messageId}` : ''}`}
        />
        <SubmitButton label={replacing ? 'Replace key' : 'Save key'} />
      </div>
      {state.message && (
        <p id={messageId} className={invalid ? styles.errorText : styles.okText} role={invalid ? 'alert' : 'status'}>
          {state.message}
        </p>
      )}
    </form>
  );
}
