import type { ReactNode } from 'react';
import { formatAgo, formatInstant, formatInt } from '../../lib/overview-format';
import type { ApiAccess } from './api-access';
import { ApiKeyForm } from './api-key-form';
import { CreateKeyForm } from './create-key-form';
import { KeyNotice } from './key-notice';
import { RevokeKeyButton } from './revoke-key-button';
import type { ApiKeyView, AuditEntry, CallerView, PresetView, StatusResponse, TenantSettings, WorkerStatus } from './settings-schema';
import { describeAuditEntry, keyState, keyStatusText, PRESET_DESCRIPTIONS, providerSummary, triggerText } from './settings-view';
import { TenantForm } from './tenant-form';
import styles from './settings.module.css';

/** The saved key: who it is and what it may do, or the form to enter one. */
export function ApiKeySection({
  caller,
  keys,
  removeAction,
}: {
  caller: ApiAccess<CallerView>;
  keys: ApiAccess<{ keys: ApiKeyView[] }> | null;
  removeAction: () => Promise<void>;
}) {
  const removeForm = (
    <form action={removeAction}>
      <button type="submit" className="button button-plain">
        Remove key
      </button>
    </form>
  );
  return (
    <section className={`card ${styles.section}`} aria-labelledby="api-key-heading">
      <h2 id="api-key-heading">API key</h2>
      {caller.state === 'no-key' && <ApiKeyForm />}
      {caller.state === 'rejected' && (
        <>
          <KeyNotice problem={caller} what="this tenant's data" onSettings />
          <div className={styles.actions}>{removeForm}</div>
          <ApiKeyForm replacing />
        </>
      )}
      {caller.state === 'unavailable' && (
        <>
          <p className={styles.hint}>A key is saved, but the API could not check it now ({caller.reason}).</p>
          <div className={styles.actions}>{removeForm}</div>
        </>
      )}
      {caller.state === 'ok' && <SavedKey caller={caller.data} keys={keys} removeForm={removeForm} />}
    </section>
  );
}

function SavedKey({ caller, keys, removeForm }: { caller: CallerView; keys: ApiAccess<{ keys: ApiKeyView[] }> | null; removeForm: ReactNode }) {
  const own = keys?.state === 'ok' ? keys.data.keys.find((k) => k.id === caller.keyId) : undefined;
  return (
    <>
      <p className={styles.okLine} data-testid="key-saved">
        <span className={styles.dot} data-state="healthy" aria-hidden="true" />A key is saved and the API accepts it.
      </p>
      <dl className={`facts ${styles.facts}`}>
        {own && (
          <>
            <dt>Key</dt>
            <dd>
              {own.name} <code>{own.prefix}…</code>
            </dd>
          </>
        )}
        <dt>Scopes</dt>
        <dd data-testid="key-scopes">
          {caller.scopes.map((s) => (
            <code key={s} className={styles.scope}>
              {s}
            </code>
          ))}
        </dd>
        <dt>Tenant</dt>
        <dd>
          <code>{caller.tenantId}</code>
        </dd>
      </dl>
      <div className={styles.actions}>{removeForm}</div>
    </>
  );
}

const HEALTH_TEXT: Record<string, string> = { healthy: 'Healthy', failing: 'Failing', unknown: 'Not called yet', 'no-workers': 'No workers' };

function HealthBadge({ state }: { state: string }) {
  return (
    <span className={styles.health} data-state={state}>
      <span className={styles.dot} data-state={state} aria-hidden="true" />
      {HEALTH_TEXT[state] ?? state}
    </span>
  );
}

/** Which summarizer the workers use and whether it answers, the workers themselves, and the queue. */
export function ProviderSection({ status, now }: { status: ApiAccess<StatusResponse>; now: Date }) {
  return (
    <section className={`card ${styles.section}`} aria-labelledby="provider-heading">
      <h2 id="provider-heading">Provider status</h2>
      {status.state !== 'ok' ? (
        <KeyNotice problem={status} what="the workers and their summarizer" onSettings />
      ) : (
        <ProviderStatus status={status.data} now={now} />
      )}
    </section>
  );
}

function ProviderStatus({ status, now }: { status: StatusResponse; now: Date }) {
  const summary = providerSummary(status.workers);
  const q = status.queueDepth;
  return (
    <>
      <div className={styles.providerHeadline} data-testid="provider-summary">
        <p className={styles.providerName}>
          <span className="muted">Summarizer</span> <strong data-testid="provider-name">{summary.providers}</strong>
        </p>
        <HealthBadge state={summary.state} />
      </div>
      <p className={styles.hint}>{summary.text}</p>
      {status.workers.length > 0 && (
        <div className="table-wrap">
          <table className={`data-table stacked-table ${styles.table}`} aria-label="Workers">
            <thead>
              <tr>
                <th scope="col">Worker</th>
                <th scope="col">Summarizer</th>
                <th scope="col">Health</th>
                <th scope="col">Last job</th>
                <th scope="col">LLM calls</th>
                <th scope="col">Seen</th>
              </tr>
            </thead>
            <tbody>
              {status.workers.map((w) => (
                <WorkerRow key={w.id} worker={w} now={now} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      <dl className={styles.queue} aria-label="Compaction queue">
        <div>
          <dt>Waiting</dt>
          <dd>{formatInt(q.waiting)}</dd>
        </div>
        <div>
          <dt>Running</dt>
          <dd>{formatInt(q.active)}</dd>
        </div>
        <div>
          <dt>Retrying</dt>
          <dd>{formatInt(q.delayed)}</dd>
        </div>
        <div>
          <dt>Failed</dt>
          <dd>{formatInt(q.failed)}</dd>
        </div>
      </dl>
    </>
  );
}

function WorkerRow({ worker: w, now }: { worker: WorkerStatus; now: Date }) {
  const last = w.jobs.last;
  return (
    <tr data-testid="worker-row">
      <td data-label="Worker">
        <span className="wrap-anywhere">{w.hostname}</span>
        <span className="muted"> · pid {w.pid}</span>
        <span className={styles.sub}>started {formatInstant(w.startedAt)}</span>
      </td>
      <td data-label="Summarizer">
        <code data-testid="worker-provider">{w.summarizer.provider}</code> <span className="wrap-anywhere">{w.summarizer.model}</span>
        {w.summarizer.endpoint && <span className={`${styles.sub} wrap-anywhere`}>{w.summarizer.endpoint}</span>}
      </td>
      <td data-label="Health">
        <HealthBadge state={w.summarizer.health} />
        <span className={styles.sub}>{w.summarizer.healthDetail}</span>
      </td>
      <td data-label="Last job">
        {last ? (
          <>
            {last.outcome} <span className={styles.sub}>{formatAgo(last.at, now)}</span>
          </>
        ) : (
          <span className="muted">none yet</span>
        )}
      </td>
      <td data-label="LLM calls">
        {formatInt(w.llm.calls)}
        {w.llm.errors > 0 && <span className={styles.sub}>{formatInt(w.llm.errors)} failed</span>}
      </td>
      <td data-label="Seen">{formatAgo(w.lastSeenAt, now)}</td>
    </tr>
  );
}

/** The tenant's keys (admin scope): create, and revoke with a confirmation. */
export function KeysSection({ caller, keys }: { caller: ApiAccess<CallerView>; keys: ApiAccess<{ keys: ApiKeyView[] }> | null }) {
  let body: ReactNode;
  if (caller.state !== 'ok') body = <KeyNotice problem={caller} what="the tenant's API keys" onSettings />;
  else if (!caller.data.scopes.includes('admin') || keys === null)
    body = (
      <p className={styles.hint}>
        Managing keys needs the <code>admin</code> scope; the saved key has {caller.data.scopes.join(', ')}.
      </p>
    );
  else if (keys.state !== 'ok') body = <KeyNotice problem={keys} what="the tenant's API keys" onSettings />;
  else body = <KeysTable keys={keys.data.keys} ownKeyId={caller.data.keyId} />;
  return (
    <section className={`card ${styles.section}`} aria-labelledby="keys-heading">
      <h2 id="keys-heading">API keys</h2>
      {body}
    </section>
  );
}

function KeyRow({ k, ownKeyId, withActions, now }: { k: ApiKeyView; ownKeyId: string; withActions: boolean; now: number }) {
  const state = keyState(k, now);
  return (
    <tr data-testid="key-row" data-key-id={k.id}>
      <th scope="row" data-label="Name" className="wrap-anywhere">
        {k.name}
        {k.id === ownKeyId && <span className={styles.sub}>used by this dashboard</span>}
      </th>
      <td data-label="Key">
        <code>{k.prefix}…</code>
      </td>
      <td data-label="Scopes">
        {k.scopes.map((s) => (
          <code key={s} className={styles.scope}>
            {s}
          </code>
        ))}
      </td>
      <td data-label="Created">{formatInstant(k.createdAt)}</td>
      <td data-label="Status">
        <span className={state === 'active' ? styles.active : styles.revoked}>{keyStatusText(k, now)}</span>
      </td>
      {withActions && (
        <td className={styles.actionCell}>
          <RevokeKeyButton keyId={k.id} name={k.name} prefix={k.prefix} inUse={k.id === ownKeyId} />
        </td>
      )}
    </tr>
  );
}

function KeyTable({ keys, ownKeyId, label, withActions, now }: { keys: ApiKeyView[]; ownKeyId: string; label: string; withActions: boolean; now: number }) {
  return (
    <div className="table-wrap">
      <table className={`data-table stacked-table ${styles.table}`} aria-label={label}>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Key</th>
            <th scope="col">Scopes</th>
            <th scope="col">Created</th>
            <th scope="col">Status</th>
            {withActions && (
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {keys.map((k) => (
            <KeyRow key={k.id} k={k} ownKeyId={ownKeyId} withActions={withActions} now={now} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Active keys first, with Revoke; revoked and expired ones (both refused) folded away below, listed for the record. */
function KeysTable({ keys, ownKeyId }: { keys: ApiKeyView[]; ownKeyId: string }) {
  const now = Date.now();
  const active = keys.filter((k) => keyState(k, now) === 'active');
  const inactive = keys.filter((k) => keyState(k, now) !== 'active');
  const expired = inactive.filter((k) => keyState(k, now) === 'expired').length;
  const kinds = expired === 0 ? 'revoked' : expired === inactive.length ? 'expired' : 'revoked or expired';
  return (
    <>
      {active.length > 0 ? (
        <KeyTable keys={active} ownKeyId={ownKeyId} label="Active API keys" withActions now={now} />
      ) : (
        <p className={styles.hint}>No active key.</p>
      )}
      {inactive.length > 0 && (
        <details className={styles.revokedKeys} data-testid="revoked-keys">
          <summary>
            {inactive.length} {kinds} key{inactive.length === 1 ? '' : 's'}
          </summary>
          <KeyTable keys={inactive} ownKeyId={ownKeyId} label="Revoked and expired API keys" withActions={false} now={now} />
        </details>
      )}
      <h3 className={styles.subheading}>Create a key</h3>
      <CreateKeyForm />
    </>
  );
}

/** The policy presets, with the trigger each one uses (from the API) and what it does. */
export function PresetsSection({ status }: { status: ApiAccess<StatusResponse> }) {
  return (
    <section className={`card ${styles.section}`} aria-labelledby="presets-heading">
      <h2 id="presets-heading">Policy presets</h2>
      <p className={styles.hint}>
        A session names its preset when it is created (<code>policy</code>), and can override any of its parameters.
      </p>
      {status.state !== 'ok' ? <KeyNotice problem={status} what="the presets and their triggers" onSettings /> : <PresetsTable presets={status.data.presets} />}
    </section>
  );
}

function PresetsTable({ presets }: { presets: PresetView[] }) {
  return (
    <div className="table-wrap">
      <table className={`data-table stacked-table ${styles.table}`} aria-label="Policy presets">
        <thead>
          <tr>
            <th scope="col">Preset</th>
            <th scope="col">Compacts at</th>
            <th scope="col">What it does</th>
          </tr>
        </thead>
        <tbody>
          {presets.map((p) => (
            <tr key={p.name} data-testid="preset-row">
              <th scope="row" data-label="Preset">
                <code className={styles.nowrap}>{p.name}</code>
                {p.isDefault && <span className={styles.defaultBadge}>default</span>}
                <span className={styles.sub}>{PRESET_DESCRIPTIONS[p.name].source}</span>
              </th>
              <td data-label="Compacts at">{triggerText(p.trigger)}</td>
              <td data-label="What it does">{PRESET_DESCRIPTIONS[p.name].summary}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Why a non-admin key sees no tenant settings, limits or audit log, or the API's problem reading them. */
export function adminOnly(caller: ApiAccess<CallerView>, access: ApiAccess<unknown> | null, what: string): ReactNode | null {
  if (caller.state !== 'ok') return <KeyNotice problem={caller} what={what} onSettings />;
  if (!caller.data.scopes.includes('admin') || access === null)
    return (
      <p className={styles.hint} data-testid="admin-only">
        Reading {what} needs the <code>admin</code> scope; the saved key has {caller.data.scopes.join(', ')}.
      </p>
    );
  if (access.state !== 'ok') return <KeyNotice problem={access} what={what} onSettings />;
  return null;
}

export function TenantSection({ caller, tenant }: { caller: ApiAccess<CallerView>; tenant: ApiAccess<TenantSettings> | null }) {
  const problem = adminOnly(caller, tenant, "the tenant's settings");
  return (
    <section className={`card ${styles.section}`} aria-labelledby="tenant-heading">
      <h2 id="tenant-heading">Tenant</h2>
      {problem ?? (tenant?.state === 'ok' && (
        <>
          <p className={styles.hint}>
            Where the proxy sends <strong>{tenant.data.name}</strong>&apos;s requests, and the policy of sessions created without one. Every change is in the audit log.
          </p>
          <TenantForm tenant={tenant.data} />
        </>
      ))}
    </section>
  );
}

export function AuditSection({ caller, audit }: { caller: ApiAccess<CallerView>; audit: ApiAccess<{ entries: AuditEntry[] }> | null }) {
  const problem = adminOnly(caller, audit, 'the audit log');
  let body: ReactNode = problem;
  if (!problem && audit?.state === 'ok') {
    body =
      audit.data.entries.length === 0 ? (
        <p className={styles.hint}>No admin actions yet.</p>
      ) : (
        <ol className={styles.auditList} aria-label="Latest admin actions">
          {audit.data.entries.map((e) => {
            const line = describeAuditEntry(e);
            return (
              <li key={e.id} data-testid="audit-entry" data-action={e.action}>
                <time dateTime={e.createdAt}>{formatInstant(e.createdAt)}</time>
                <span>
                  <strong>{line.action}</strong> <code>{line.target}</code>
                  {line.detail && <span className={styles.sub}> {line.detail}</span>}
                </span>
              </li>
            );
          })}
        </ol>
      );
  }
  return (
    <section className={`card ${styles.section}`} aria-labelledby="audit-heading">
      <h2 id="audit-heading">Audit log</h2>
      <p className={styles.hint}>The latest 20 admin actions of this tenant (GET /v1/audit).</p>
      {body}
    </section>
  );
}
