import type { Metadata } from 'next';
import Link from 'next/link';
import { notFound } from 'next/navigation';
import { Suspense } from 'react';
import { connection } from 'next/server';
import { CheckpointTimeline } from '../../../components/session/checkpoint-timeline';
import { ContextHistory } from '../../../components/session/context-history';
import { GoalPanel } from '../../../components/session/goal-panel';
import { LiveEvents } from '../../../components/session/live-events';
import { ReliabilityPanel } from '../../../components/session/reliability-panel';
import { SessionActions } from '../../../components/session/session-actions';
import styles from '../../../components/session/session.module.css';
import { SnapshotsPanel } from '../../../components/session/snapshots-panel';
import { UsagePanel } from '../../../components/session/usage-panel';
import { ApiFailureNotice, NoKeyNotice } from '../../../components/sessions/access-notice';
import { checkpointTimeline, currentCheckpointId } from '../../../lib/session-checkpoints';
import { compactionHoldLine, formatTokens } from '../../../lib/session-format';
import { goalPanel } from '../../../lib/session-goal';
import { contextRows, historyRows, sentSeqs, treatmentsFromDiff } from '../../../lib/session-history';
import { sessionHref } from '../../../lib/session-list';
import { reliabilityBadge } from '../../../lib/session-reliability';
import { snapshotRows } from '../../../lib/session-snapshots';
import { lastCompactionJobId, usageChartData } from '../../../lib/session-usage';
import { authedClient } from '../../../server/api-key';
import type { CompactorClient } from '../../../api/client';
import type { components } from '../../../api/schema';
import { loadSessionDetail, loadSessionSections, type SessionPagePosition } from './load-session';

type SessionDetail = components['schemas']['SessionDetail'];

type Params = Promise<{ id: string }>;
type SearchParams = Promise<Record<string, string | string[] | undefined>>;

/** The session id from the path, or null when it cannot be one (ids are 1–128 of [A-Za-z0-9._:-]). */
function sessionIdOf(segment: string): string | null {
  let id: string;
  try {
    id = decodeURIComponent(segment);
  } catch {
    return null;
  }
  return /^[A-Za-z0-9._:-]{1,128}$/.test(id) ? id : null;
}

export async function generateMetadata({ params }: { params: Params }): Promise<Metadata> {
  const id = sessionIdOf((await params).id);
  return { title: id ? `Session ${id}` : 'Session not found' };
}

function SectionError({ title, message }: { title: string; message: string }) {
  return (
    <section className={`card ${styles.panel}`} aria-label={title}>
      <h2>{title}</h2>
      <p className={styles.warning} role="alert">
        {message}
      </p>
    </section>
  );
}

export default async function SessionPage({ params, searchParams }: { params: Params; searchParams: SearchParams }) {
  await connection();
  const id = sessionIdOf((await params).id);
  if (!id) notFound();
  const query = await searchParams;
  const param = (name: string) => (typeof query[name] === 'string' ? (query[name] as string) : undefined);
  const position: SessionPagePosition = { historyAfter: param('after'), eventsBefore: param('events'), snapshotsBefore: param('snapshots') };
  const heading = (
    <>
      <p className={styles.breadcrumb}>
        <Link href="/sessions">← Sessions</Link>
      </p>
      <h1 className={styles.title}>
        Session <span className={styles.titleId}>{id}</span>
      </h1>
    </>
  );

  const client = await authedClient();
  if (!client) {
    return (
      <>
        {heading}
        <NoKeyNotice />
      </>
    );
  }
  const detail = await loadSessionDetail(client, id);
  if (detail.kind === 'not-found') notFound();
  if (detail.kind === 'failure') {
    return (
      <>
        {heading}
        <ApiFailureNotice failure={detail.failure} />
      </>
    );
  }
  // The page streams from here: the heading at once, the sections once their reads are in.
  return (
    <>
      {heading}
      <Suspense fallback={<SessionSkeleton />}>
        <SessionSections client={client} session={detail.session} position={position} />
      </Suspense>
    </>
  );
}

function SessionSkeleton() {
  return (
    <div role="status" aria-live="polite">
      <p className="lead">Loading the session: usage, checkpoints, snapshots, context and history…</p>
      <div className={styles.grid} aria-hidden="true">
        <span className="skeleton" style={{ height: 320 }} />
        <span className="skeleton" style={{ height: 320 }} />
      </div>
      <span className="skeleton" style={{ height: 200, marginTop: '1rem' }} aria-hidden="true" />
    </div>
  );
}

/** The page's URL with one list moved to another page (undefined: back to its newest), the other lists where they are. */
function pageHref(base: string, position: SessionPagePosition, change: Partial<SessionPagePosition>): string {
  const next = { ...position, ...change };
  const params = new URLSearchParams();
  if (next.historyAfter) params.set('after', next.historyAfter);
  if (next.eventsBefore) params.set('events', next.eventsBefore);
  if (next.snapshotsBefore) params.set('snapshots', next.snapshotsBefore);
  const search = params.toString();
  return search ? `${base}?${search}` : base;
}

async function SessionSections({ client, session: detail, position }: { client: CompactorClient; session: SessionDetail; position: SessionPagePosition }) {
  const { session, usage, checkpoints, goal, context, diff, history, historyWindow, snapshots, events, paging } = await loadSessionSections(client, detail, position);
  const href = sessionHref(session.id);
  const chart = usage.ok ? usageChartData(usage.data) : null;
  const checkpointList = checkpoints.ok ? checkpoints.data.checkpoints : [];
  const treatments = treatmentsFromDiff(diff?.ok ? diff.data : null);
  const ctxRows = context.ok ? contextRows(context.data, treatments) : [];
  const undoJobId = lastCompactionJobId(usage.ok ? usage.data.points : [], snapshots.ok ? snapshots.data.snapshots : []);
  const historyList = history.ok
    ? historyRows(history.data.messages, {
        treatments,
        sentSeqs: sentSeqs(ctxRows, Boolean(context.ok && context.data.seqs)),
        leftOut: context.ok ? context.data.leftOut : [],
        protection: context.ok ? context.data.protection : undefined,
        fallback: context.ok ? (context.data.fallback ?? null) : null,
        currentCheckpoint: (checkpointId) => currentCheckpointId(checkpointId, checkpointList),
      })
    : [];

  return (
    <>
      <div className={styles.summaryRow}>
        <dl className={styles.sessionFacts}>
          <div>
            <dt>Model</dt>
            <dd>
              <code>{session.model}</code> <span className="muted">({session.tokenCounting} counts)</span>
            </dd>
          </div>
          <div>
            <dt>Policy</dt>
            <dd>{session.policy.preset}</dd>
          </div>
          <div>
            <dt>Window</dt>
            <dd>
              {formatTokens(session.contextWindow)}{' '}
              <span className="muted" data-testid="budget-parts">
                − {formatTokens(session.budget.reserve)} {session.budget.requestMaxTokens !== null && session.budget.requestMaxTokens >= session.outputReserve ? 'max_tokens' : 'reserve'}
                {session.budget.toolSchemaTokens > 0 ? ` − ${formatTokens(session.budget.toolSchemaTokens)} tool schemas` : ''} − {formatTokens(session.budget.safetyMargin)} margin
                {session.budget.calibrationTokens !== 0 ? ` − ${formatTokens(session.budget.calibrationTokens)} calibration (×${session.budget.calibration})` : ''} = {formatTokens(session.budget.budget)} budget
              </span>
            </dd>
          </div>
          {compactionHoldLine(session.compactionHold) !== null ? (
            <div>
              <dt>Compaction</dt>
              <dd data-testid="compaction-hold">{compactionHoldLine(session.compactionHold)}</dd>
            </div>
          ) : null}
          {session.forkedFrom !== null || session.forks.length > 0 ? (
            <div>
              <dt>Forks</dt>
              <dd data-testid="fork-links">
                {session.forkedFrom !== null ? (
                  <>
                    forked from <Link href={sessionHref(session.forkedFrom)}>{session.forkedFrom}</Link>
                  </>
                ) : null}
                {session.forkedFrom !== null && session.forks.length > 0 ? ' · ' : null}
                {session.forks.map((fork, i) => (
                  <span key={fork}>
                    {i > 0 ? ', ' : ''}
                    <Link href={sessionHref(fork)}>{fork}</Link>
                  </span>
                ))}
              </dd>
            </div>
          ) : null}
          <div>
            <dt>History</dt>
            <dd>
              {session.messageCount} messages · {formatTokens(session.historyTokens)} tokens
            </dd>
          </div>
          <div>
            <dt>Context</dt>
            <dd data-testid="context-usage">
              {formatTokens(session.usage.contextTokens)} / {formatTokens(session.usage.budget)} <span className="muted">(trigger {formatTokens(session.usage.threshold)})</span>
            </dd>
          </div>
          <div>
            <dt>Compactions</dt>
            <dd data-testid="compaction-count">{session.compactions}</dd>
          </div>
        </dl>
        <SessionActions sessionId={session.id} undoJobId={undoJobId} />
      </div>

      <div className={styles.grid}>
        {chart && usage.ok ? <UsagePanel data={chart} /> : <SectionError title="Token usage over time" message={usage.ok ? '' : usage.failure.message} />}
        <ReliabilityPanel badge={reliabilityBadge(session.reliability)} compactions={session.compactions} />
      </div>

      <div className={styles.grid}>
        {events.ok ? (
          <LiveEvents
            // Another page of the list is another component: a live list and a fixed older slice share no state.
            key={position.eventsBefore ?? 'newest'}
            sessionId={session.id}
            initial={events.data}
            paging={{
              older: paging.olderEvents ? pageHref(href, position, { eventsBefore: paging.olderEvents }) : null,
              newest: paging.eventsBefore ? pageHref(href, position, { eventsBefore: undefined }) : null,
            }}
          />
        ) : (
          <SectionError title="Events" message={events.failure.message} />
        )}
        {snapshots.ok ? (
          <SnapshotsPanel
            sessionId={session.id}
            snapshots={snapshotRows(snapshots.data.snapshots, context.ok ? (context.data.contextVersion ?? null) : null)}
            paging={{
              older: paging.olderSnapshots ? pageHref(href, position, { snapshotsBefore: paging.olderSnapshots }) : null,
              newest: paging.snapshotsBefore ? pageHref(href, position, { snapshotsBefore: undefined }) : null,
            }}
          />
        ) : (
          <SectionError title="Snapshots" message={snapshots.failure.message} />
        )}
      </div>

      <div className={styles.gridEven}>
        {checkpoints.ok ? (
          <CheckpointTimeline timeline={checkpointTimeline(checkpointList, session.messageCount)} messageCount={session.messageCount} />
        ) : (
          <SectionError title="Checkpoints by level" message={checkpoints.failure.message} />
        )}
        {goal.ok ? <GoalPanel goal={goalPanel(goal.data)} /> : <SectionError title="Goal" message={goal.failure.message} />}
      </div>

      <ContextHistory
        sessionId={session.id}
        sessionHref={href}
        context={
          context.ok
            ? {
                rows: ctxRows,
                summary: {
                  version: context.data.contextVersion ?? null,
                  tokens: context.data.tokens,
                  budget: context.data.usage.budget,
                  messages: context.data.messages.length,
                  fallback: context.data.fallback ?? null,
                },
              }
            : null
        }
        contextError={context.ok ? null : `The context cannot be read: ${context.failure.message}`}
        history={historyList}
        historyError={history.ok ? null : history.failure.message}
        window={historyWindow}
        messageCount={session.messageCount}
      />
    </>
  );
}
