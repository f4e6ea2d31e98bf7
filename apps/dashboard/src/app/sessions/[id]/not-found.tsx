import Link from 'next/link';

export default function SessionNotFound() {
  return (
    <>
      <h1>Session not found</h1>
      <p className="lead">
        No session with this id belongs to your API key&apos;s tenant. It may have been deleted, or the id may be mistyped.
      </p>
      <p>
        <Link href="/sessions">Back to Sessions</Link>
      </p>
    </>
  );
}
