import type { Metadata } from 'next';

export const metadata: Metadata = { title: 'Sessions' };

export default function SessionsPage() {
  return (
    <>
      <h1>Sessions</h1>
      <p className="lead">Each session will be listed here with its model, context usage, reliability and compactions.</p>
      <section className="panel empty-state" aria-label="Sessions list">
        <p>
          No sessions yet — append messages with <code>POST /v1/sessions/:id/messages</code>.
        </p>
      </section>
    </>
  );
}
