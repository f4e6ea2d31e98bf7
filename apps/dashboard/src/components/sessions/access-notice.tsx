import Link from 'next/link';
import type { ApiFailure } from '../../lib/session-api';

/** No key entered yet: the pages that read sessions point to Settings, where the key is entered. */
export function NoKeyNotice() {
  return (
    <div className="notice notice-info" role="status" data-testid="no-key-notice">
      <strong>Enter an API key to see sessions</strong>
      <span>
        The dashboard reads sessions with your Compactor API key, kept on the dashboard&apos;s server only. Add it in{' '}
        <Link href="/settings">Settings</Link>.
      </span>
    </div>
  );
}

const TITLES: Record<ApiFailure['kind'], string> = {
  rejected: 'The API rejected the key',
  forbidden: 'The key may not read sessions',
  'not-found': 'Not found',
  invalid: 'The API refused the request',
  unreachable: 'Sessions cannot be loaded',
  failed: 'Sessions cannot be loaded',
};

/** An API answer that is not data, in words, with the way out (Settings for key problems). */
export function ApiFailureNotice({ failure }: { failure: ApiFailure }) {
  const keyProblem = failure.kind === 'rejected' || failure.kind === 'forbidden';
  return (
    // The layout already raises an alert when the API is unreachable; this one only explains the empty page.
    <div className="notice notice-error" role={failure.kind === 'unreachable' ? 'status' : 'alert'} data-testid="api-failure" data-kind={failure.kind}>
      <strong>{TITLES[failure.kind]}</strong>
      <span>
        {failure.message}{' '}
        {keyProblem ? (
          <>
            Check or replace the key in <Link href="/settings">Settings</Link>
            {failure.kind === 'forbidden' ? ' (it needs the read scope).' : '.'}
          </>
        ) : null}
      </span>
    </div>
  );
}
