'use client';

import Link from 'next/link';

export default function SessionError({ error, reset }: { error: Error & { digest?: string }; reset: () => void }) {
  return (
    <>
      <h1>Session</h1>
      <div className="notice notice-error" role="alert">
        <strong>This session could not be shown.</strong>
        <span>
          {error.digest ? `Error ${error.digest} is in the dashboard's server log.` : error.message}{' '}
          <button type="button" onClick={reset}>
            Try again
          </button>
        </span>
      </div>
      <p>
        <Link href="/sessions">Back to Sessions</Link>
      </p>
    </>
  );
}
