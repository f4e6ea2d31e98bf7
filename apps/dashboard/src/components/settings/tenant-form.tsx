'use client';

import { useActionState, useId } from 'react';
import { useFormStatus } from 'react-dom';
import { saveTenantSettings, type TenantFormState } from '../../app/settings/actions';
import { PRESET_CHOICES, type TenantSettings } from './settings-schema';
import type { TenantFormProblems } from './settings-view';
import styles from './settings.module.css';

function SaveButton() {
  const { pending } = useFormStatus();
  return (
    <button type="submit" className="button button-primary" disabled={pending} aria-disabled={pending}>
      {pending ? 'Saving…' : 'Save tenant settings'}
    </button>
  );
}

function Field({
  id,
  name,
  label,
  hint,
  problem,
  children,
}: {
  id: string;
  name: keyof TenantFormProblems;
  label: string;
  hint: string;
  problem: string | undefined;
  children: (props: { id: string; 'aria-invalid'?: true; 'aria-describedby': string }) => React.ReactNode;
}) {
  const fieldId = `${id}-${name.replace('.', '-')}`;
  return (
    <div className={styles.field} data-field={name}>
      <label htmlFor={fieldId} className={styles.label}>
        {label}
      </label>
      {children({ id: fieldId, 'aria-invalid': problem ? true : undefined, 'aria-describedby': `${fieldId}-hint${problem ? ` ${fieldId}-error` : ''}` })}
      <span id={`${fieldId}-hint`} className={styles.hintInline}>
        {hint}
      </span>
      {problem && (
        <span id={`${fieldId}-error`} className={styles.errorText} data-testid={`error-${name}`}>
          {problem}
        </span>
      )}
    </div>
  );
}

/** The tenant's proxy upstreams, timeout and default policy, saved with PATCH /v1/tenant; problems show next to their field. */
export function TenantForm({ tenant }: { tenant: TenantSettings }) {
  const [state, action] = useActionState<TenantFormState, FormData>(saveTenantSettings, { status: 'idle' });
  const id = useId();
  const problems = state.status === 'error' ? (state.problems ?? {}) : {};
  const current = tenant.defaultPolicy?.preset ?? '';
  const overrides = Object.keys(tenant.defaultPolicy?.overrides ?? {});
  return (
    <form action={action} className={styles.tenantForm} aria-label="Tenant settings">
      <input type="hidden" name="currentPolicy" value={current} />
      <Field id={id} name="proxy.anthropicBaseUrl" label="Anthropic upstream" hint={`Empty: ${tenant.proxyDefaults.anthropicBaseUrl}`} problem={problems['proxy.anthropicBaseUrl']}>
        {(p) => <input {...p} name="anthropicBaseUrl" type="url" className={styles.input} defaultValue={tenant.proxy.anthropicBaseUrl ?? ''} placeholder={tenant.proxyDefaults.anthropicBaseUrl} autoComplete="off" />}
      </Field>
      <Field id={id} name="proxy.openaiBaseUrl" label="OpenAI upstream" hint={`Without /v1. Empty: ${tenant.proxyDefaults.openaiBaseUrl}`} problem={problems['proxy.openaiBaseUrl']}>
        {(p) => <input {...p} name="openaiBaseUrl" type="url" className={styles.input} defaultValue={tenant.proxy.openaiBaseUrl ?? ''} placeholder={tenant.proxyDefaults.openaiBaseUrl} autoComplete="off" />}
      </Field>
      <Field id={id} name="proxy.timeoutMs" label="Upstream timeout (ms)" hint={`1000–3600000. Empty: ${tenant.proxyDefaults.timeoutMs}`} problem={problems['proxy.timeoutMs']}>
        {(p) => <input {...p} name="timeoutMs" type="text" inputMode="numeric" className={styles.input} defaultValue={tenant.proxy.timeoutMs ?? ''} placeholder={String(tenant.proxyDefaults.timeoutMs)} autoComplete="off" />}
      </Field>
      <Field
        id={id}
        name="defaultPolicy"
        label="Default policy"
        hint={overrides.length > 0 ? `For sessions created without one. Current overrides (kept unless the preset changes): ${overrides.join(', ')}` : 'For sessions created without one.'}
        problem={problems.defaultPolicy}
      >
        {(p) => (
          <select {...p} name="defaultPolicy" className={styles.input} defaultValue={current}>
            <option value="">balanced (built-in default)</option>
            {PRESET_CHOICES.map((preset) => (
              <option key={preset} value={preset}>
                {preset}
              </option>
            ))}
          </select>
        )}
      </Field>
      <div className={styles.actions}>
        <SaveButton />
        {state.status === 'error' && (
          <p className={styles.errorText} role="alert">
            {state.message}
          </p>
        )}
        {state.status === 'done' && (
          <p className={styles.okText} role="status">
            {state.message}
          </p>
        )}
      </div>
      {!tenant.allowPrivateUpstreams && <p className={styles.hint}>Upstreams on loopback, link-local or private addresses are refused (the operator allows them with COMPACTOR_PROXY_ALLOW_PRIVATE_UPSTREAMS=true).</p>}
    </form>
  );
}
