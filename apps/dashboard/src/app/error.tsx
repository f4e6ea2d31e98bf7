'use client';

export default function PageError({ error, reset }: { error: Error & { digest?: string }; reset: () => void }) {
  return (
    <div className="notice notice-error" role="alert">
      <strong>This page failed to render.</strong>
      <span>
        {error.digest ? `Error ${error.digest} is in the dashboard's server log.` : error.message}{' '}
        <button type="button" onClick={reset}>
          Try again
        </button>
      </span>
    </div>
  );
}
