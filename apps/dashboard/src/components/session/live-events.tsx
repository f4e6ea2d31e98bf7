'use client';

import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useEffect, useRef, useState } from 'react';
import { auditedEvents, type CompactionAudit } from '../../lib/compaction-audit';
import { formatClock, formatTimestamp } from '../../lib/session-format';
import { eventTone, latestEventId, mergeEvents, parseEventView, REFRESHING_EVENT_TYPES, runningCompaction, type EventView } from '../../lib/session-events';
import { LedgerGroups } from './ledger-entries';
import styles from './session.module.css';

type StreamState = 'connecting' | 'live' | 'reconnecting' | 'unavailable' | 'paged';

const STATE_TEXT: Record<StreamState, string> = {
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Reconnecting…',
  unavailable: 'Live updates unavailable',
  paged: 'Older events',
};

/** Links to the list's other pages: `older` continues back in time, `newest` returns to the live list (null: none). */
export interface ListPaging {
  older: string | null;
  newest: string | null;
}

/** Wait this long after a finishing event before re-reading the page, so a burst of events refreshes once. */
const REFRESH_DELAY_MS = 400;

/**
 * The session's events, newest first, updated live: an EventSource on the dashboard's own
 * relay (same origin; the key stays on the server), resumed by the browser with Last-Event-ID
 * after a drop. When a compaction finishes or a snapshot is restored, the server-rendered parts
 * of the page (chart, context, checkpoints) are re-read with router.refresh().
 */
export function LiveEvents({ sessionId, initial, paging = { older: null, newest: null } }: { sessionId: string; initial: EventView[]; paging?: ListPaging }) {
  const router = useRouter();
  const [events, setEvents] = useState(initial);
  // An older page is a fixed slice of the past: nothing to follow live.
  const paged = paging.newest !== null;
  const [state, setState] = useState<StreamState>(paged ? 'paged' : 'connecting');
  // The stream starts after the newest event the server rendered; later renders only merge.
  const startAfter = useRef(latestEventId(initial) ?? '0');

  useEffect(() => {
    setEvents((current) => mergeEvents(current, initial));
  }, [initial]);

  useEffect(() => {
    if (paged) return;
    let refresh: ReturnType<typeof setTimeout> | undefined;
    const source = new EventSource(`/api/sessions/${encodeURIComponent(sessionId)}/events?after=${startAfter.current}`);
    source.onopen = () => setState('live');
    source.onerror = () => setState(source.readyState === EventSource.CLOSED ? 'unavailable' : 'reconnecting');
    source.onmessage = (message: MessageEvent<string>) => {
      let event: EventView | null = null;
      try {
        event = parseEventView(JSON.parse(message.data));
      } catch {
        return;
      }
      if (!event) return;
      const received = event;
      setEvents((current) => mergeEvents(current, [received]));
      if (REFRESHING_EVENT_TYPES.has(received.type)) {
        clearTimeout(refresh);
        refresh = setTimeout(() => router.refresh(), REFRESH_DELAY_MS);
      }
    };
    return () => {
      clearTimeout(refresh);
      source.close();
    };
  }, [sessionId, router, paged]);

  const running = runningCompaction(events);

  return (
    <section className={`card ${styles.panel}`} aria-labelledby="events-heading" data-testid="events">
      <header className={styles.panelHeader}>
        <h2 id="events-heading">Events</h2>
        <span className={styles.liveState} data-state={state} data-testid="live-state">
          <span className={styles.liveDot} aria-hidden="true" />
          {STATE_TEXT[state]}
        </span>
      </header>
      <p className={styles.progress} role="status" aria-live="polite" data-testid="compaction-progress">
        {running ? (
          <>
            <span className={styles.spinner} aria-hidden="true" />
            Compaction running: {running.line}
          </>
        ) : null}
      </p>
      {events.length === 0 ? (
        <p className="empty-note" data-testid="events-empty">
          No events yet. Compactions, checkpoints and snapshots will show up here as they happen.
        </p>
      ) : (
        <ol className={styles.eventList} data-testid="events-list">
          {auditedEvents(events).map(({ event: e, audit }) => (
            <li key={e.id} className={styles.event} data-event-id={e.id} data-event-type={e.type} data-tone={eventTone(e.type)}>
              <time dateTime={e.createdAt} title={formatTimestamp(e.createdAt)} className={styles.eventTime}>
                {formatClock(e.createdAt)}
              </time>
              <span className={styles.eventType}>{e.type}</span>
              <span className={styles.eventLine}>{e.line}</span>
              {audit ? <AuditDetails audit={audit} /> : null}
            </li>
          ))}
        </ol>
      )}
      <ListPager paging={paging} noun="events" />
    </section>
  );
}

/** What one compaction did: tokens, cost, prompt prefix, and its facts ledger (the entries behind a disclosure). */
function AuditDetails({ audit }: { audit: CompactionAudit }) {
  return (
    <div className={styles.audit} data-testid="compaction-audit" data-job-id={audit.jobId}>
      <dl className={styles.auditFigures}>
        {audit.tokens ? (
          <div>
            <dt>Tokens</dt>
            <dd data-testid="audit-tokens">{audit.tokens}</dd>
          </div>
        ) : null}
        {audit.cost ? (
          <div>
            <dt>Cost</dt>
            <dd data-testid="audit-cost">{audit.cost}</dd>
          </div>
        ) : null}
        {audit.prefix ? (
          <div>
            <dt title="The messages at the start of the context that stay the same, so a provider's prompt cache still matches them">Prompt prefix</dt>
            <dd data-testid="audit-prefix" data-changed={audit.prefix.changed}>
              {audit.prefix.text}
            </dd>
          </div>
        ) : null}
        {audit.ledger ? (
          <div>
            <dt>Facts</dt>
            <dd data-testid="audit-ledger">{audit.ledger.text}</dd>
          </div>
        ) : null}
      </dl>
      {audit.ledger ? (
        <details className={styles.details}>
          <summary>Facts ledger entries</summary>
          <LedgerGroups ledger={audit.ledger} />
        </details>
      ) : null}
    </div>
  );
}

/** "Newest" and "Older" links under a paged list. */
export function ListPager({ paging, noun }: { paging: ListPaging; noun: string }) {
  if (!paging.older && !paging.newest) return null;
  return (
    <nav className={styles.pager} aria-label={`Pages of ${noun}`} data-testid={`${noun}-pager`}>
      {paging.newest ? <Link href={paging.newest}>Newest {noun}</Link> : null}
      {paging.older ? <Link href={paging.older}>Older {noun}</Link> : null}
    </nav>
  );
}
