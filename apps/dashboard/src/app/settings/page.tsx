import type { Metadata } from 'next';
import { getDashboardConfig } from '../../config';

export const metadata: Metadata = { title: 'Settings' };

export default function SettingsPage() {
  const { COMPACTOR_API_URL } = getDashboardConfig();
  return (
    <>
      <h1>Settings</h1>
      <p className="lead">API keys, LLM provider status and policy presets will be managed here.</p>
      <section className="panel" aria-labelledby="connection-heading">
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
