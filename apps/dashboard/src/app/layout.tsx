import type { Metadata, Viewport } from 'next';
import type { ReactNode } from 'react';
import { loadReadiness } from '../api/load-readiness';
import { ApiProblem } from '../components/api-problem';
import { ApiStatus } from '../components/api-status';
import { MainNav } from '../components/main-nav';
import './globals.css';

export const metadata: Metadata = {
  title: { default: 'Compactor', template: '%s · Compactor' },
  description: 'Token usage, compactions and snapshots of your agent sessions.',
};

export const viewport: Viewport = { width: 'device-width', initialScale: 1 };

export default async function RootLayout({ children }: { children: ReactNode }) {
  const readiness = await loadReadiness();
  return (
    <html lang="en">
      <body>
        <a className="skip-link" href="#main">
          Skip to content
        </a>
        <header className="app-header">
          <div className="app-header-inner">
            <p className="brand">
              <span className="brand-mark" aria-hidden="true" />
              Compactor
            </p>
            <MainNav />
            <ApiStatus readiness={readiness} />
          </div>
        </header>
        <main id="main" className="content">
          <ApiProblem readiness={readiness} />
          {children}
        </main>
      </body>
    </html>
  );
}
