import type { Metadata } from 'next';
import { loadReadiness } from '../../api/load-readiness';
import { readWithSavedKey, type ApiAccess } from '../../components/settings/api-access';
import { LimitsSection } from '../../components/settings/limits-section';
import { ApiKeySection, AuditSection, KeysSection, PresetsSection, ProviderSection, TenantSection } from '../../components/settings/settings-sections';
import {
  apiKeyListSchema,
  auditPageSchema,
  callerSchema,
  statusSchema,
  tenantSettingsSchema,
  type ApiKeyView,
  type AuditEntry,
  type CallerView,
  type StatusResponse,
  type TenantSettings,
} from '../../components/settings/settings-schema';
import { getDashboardConfig } from '../../config';
import { readApiKey } from '../../server/api-key';
import { removeApiKey } from './actions';

export const metadata: Metadata = { title: 'Settings' };

export default async function SettingsPage() {
  const { COMPACTOR_API_URL } = getDashboardConfig();
  const readiness = await loadReadiness();
  const apiAnswers = readiness.state === 'ready' || readiness.state === 'not_ready';
  const hasKey = (await readApiKey()) !== null;

  let caller: ApiAccess<CallerView>;
  if (!hasKey) caller = { state: 'no-key' };
  // The layout already says the API is down; no need to wait for a second timeout.
  else if (!apiAnswers) caller = { state: 'unavailable', reason: 'the API is unreachable' };
  else caller = await readWithSavedKey((client, signal) => client.GET('/v1/status/caller', { signal, cache: 'no-store' }), callerSchema);
  const admin = caller.state === 'ok' && caller.data.scopes.includes('admin');

  // The workers' hosts and endpoints are for admins (GET /v1/status needs the admin scope).
  let status: ApiAccess<StatusResponse>;
  if (caller.state !== 'ok') status = caller;
  else if (!admin) status = { state: 'rejected', status: 403, message: `this needs a key with the admin scope; the saved key has ${caller.data.scopes.join(', ')}` };
  else status = await readWithSavedKey((client, signal) => client.GET('/v1/status', { signal, cache: 'no-store' }), statusSchema);

  let keys: ApiAccess<{ keys: ApiKeyView[] }> | null = null;
  let tenant: ApiAccess<TenantSettings> | null = null;
  let audit: ApiAccess<{ entries: AuditEntry[] }> | null = null;
  if (admin) {
    [keys, tenant, audit] = await Promise.all([
      readWithSavedKey((client, signal) => client.GET('/v1/keys', { signal, cache: 'no-store' }), apiKeyListSchema),
      readWithSavedKey((client, signal) => client.GET('/v1/tenant', { signal, cache: 'no-store' }), tenantSettingsSchema),
      readWithSavedKey((client, signal) => client.GET('/v1/audit', { params: { query: { limit: 20 } }, signal, cache: 'no-store' }), auditPageSchema),
    ]);
  }
  const now = new Date();

  return (
    <>
      <h1>Settings</h1>
      <p className="lead">The API key this dashboard uses, the tenant&apos;s keys, settings and limits, the audit log, the summarizer the workers run, and the policy presets.</p>
      <ApiKeySection caller={caller} keys={keys} removeAction={removeApiKey} />
      <ProviderSection status={status} now={now} />
      <KeysSection caller={caller} keys={keys} />
      <TenantSection caller={caller} tenant={tenant} />
      <LimitsSection caller={caller} tenant={tenant} />
      <AuditSection caller={caller} audit={audit} />
      <PresetsSection status={status} />
      <section className="card panel" aria-labelledby="connection-heading">
        <h2 id="connection-heading">Connection</h2>
        <dl className="facts">
          <dt>API base URL</dt>
          <dd>
            <code>{COMPACTOR_API_URL}</code>
          </dd>
        </dl>
        <p className="muted">
          Set <code>COMPACTOR_API_URL</code> before starting the dashboard to use another API.
        </p>
      </section>
    </>
  );
}
