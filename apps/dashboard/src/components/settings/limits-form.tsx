'use client';

import { useActionState, useId } from 'react';
import { useFormStatus } from 'react-dom';
import { saveTenantLimits, type LimitsFormState } from '../../app/settings/limits-actions';
import type { LimitInForce } from './limits-view';
import styles from './settings.module.css';

function SaveButton() {
  const { pending } = useFormStatus();
  return (
    <button type="submit" className="button button-primary" disabled={pending} aria-disabled={pending}>
      {pending ? 'Saving…' : 'Save limits'}
    </button>
  );
}

/**
 * Each limit in force (the tenant's own or the operator's default, labelled), editable: a number, 0 for
 * no limit, or empty for the default. Saved with PATCH /v1/tenant; a refused value shows next to its field.
 */
export function LimitsForm({ limits }: { limits: LimitInForce[] }) {
  const [state, action] = useActionState<LimitsFormState, FormData>(saveTenantLimits, { status: 'idle' });
  const id = useId();
  const problems = state.status === 'error' ? (state.problems ?? {}) : {};
  return (
    <form action={action} className={styles.tenantForm} aria-label="Tenant limits">
      {limits.map((limit) => {
        const fieldId = `${id}-${limit.name}`;
        const problem = problems[`limits.${limit.name}`];
        return (
          <div key={limit.name} className={styles.field} data-field={`limits.${limit.name}`} data-testid="limit-row">
            <label htmlFor={fieldId} className={styles.label}>
              {limit.label}
            </label>
            <p className={styles.limitInForce} data-testid="limit-in-force" data-source={limit.source}>
              <strong>{limit.text}</strong> <span className={limit.source === 'tenant' ? styles.ownBadge : styles.defaultSource}>{limit.source === 'tenant' ? "tenant's own" : 'operator default'}</span>
              {limit.usedToday !== undefined && <span className={styles.sub}>Used today: {limit.usedToday}</span>}
            </p>
            <input type="hidden" name={`current-${limit.name}`} value={limit.own} />
            <input
              id={fieldId}
              name={`limit-${limit.name}`}
              type="text"
              inputMode={limit.name === 'summarizerCostPerDayUsd' ? 'decimal' : 'numeric'}
              className={styles.input}
              defaultValue={limit.own}
              placeholder={`default: ${limit.defaultText}`}
              autoComplete="off"
              aria-invalid={problem ? true : undefined}
              aria-describedby={`${fieldId}-hint${problem ? ` ${fieldId}-error` : ''}`}
            />
            <span id={`${fieldId}-hint`} className={styles.hintInline}>
              {limit.range}, 0 = no limit. Empty: the operator default ({limit.defaultText}).
            </span>
            {problem && (
              <span id={`${fieldId}-error`} className={styles.errorText} data-testid={`error-limits.${limit.name}`}>
                {problem}
              </span>
            )}
          </div>
        );
      })}
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
    </form>
  );
}
