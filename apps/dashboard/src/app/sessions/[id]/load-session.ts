import 'server-only';
import type { CompactorClient } from '../../../api/client';
import type { components } from '../../../api/schema';
import { apiCall, type ApiFailure, type ApiResult } from '../../../lib/session-api';
import type { EventView } from '../../../lib/session-events';
import { HISTORY_PAGE_SIZE, historyWindow, type HistoryWindow } from '../../../lib/session-history';

type Schemas = components['schemas'];

/** Points the chart draws at most: the API downsamples a longer series over its whole length (every marker and each stretch's peak and dip kept). */
export const USAGE_CHART_POINTS = 600;
export const EVENTS_SHOWN = 50;
export const SNAPSHOTS_SHOWN = 20;

export interface SessionPageData {
  session: Schemas['SessionDetail'];
  usage: ApiResult<Schemas['UsageSeries']>;
  checkpoints: ApiResult<Schemas['CheckpointList']>;
  goal: ApiResult<Schemas['GoalView']>;
  context: ApiResult<Schemas['ContextResponse']>;
  diff: ApiResult<Schemas['VersionDiff']> | null;
  history: ApiResult<Schemas['HistoryPage']>;
  historyWindow: HistoryWindow;
  snapshots: ApiResult<Schemas['SnapshotList']>;
  events: ApiResult<EventView[]>;
  /** Where the events and snapshots lists start (undefined: the newest) and where their next, older page starts. */
  paging: { eventsBefore?: string; olderEvents: string | null; snapshotsBefore?: string; olderSnapshots: string | null };
}

/** Which pages of the lists the page shows: `?events=<id>` and `?snapshots=<id>` page back through all of a session's history. */
export interface SessionPagePosition {
  historyAfter?: string;
  eventsBefore?: string;
  snapshotsBefore?: string;
}

export type SessionDetailResult = { kind: 'ok'; session: Schemas['SessionDetail'] } | { kind: 'not-found' } | { kind: 'failure'; failure: ApiFailure };

/** The whole usage series in one read, downsampled by the API when it is longer than the chart draws. */
function loadUsage(client: CompactorClient, id: string): Promise<ApiResult<Schemas['UsageSeries']>> {
  return apiCall(() => client.GET('/v1/sessions/{id}/usage', { params: { path: { id }, query: { maxPoints: USAGE_CHART_POINTS } }, cache: 'no-store' }));
}

/**
 * The session itself: read before the page starts streaming, so an unknown session answers 404 (a
 * status can no longer change once the first bytes went out) and an unusable key fails the page.
 */
export async function loadSessionDetail(client: CompactorClient, id: string): Promise<SessionDetailResult> {
  const session = await apiCall(() => client.GET('/v1/sessions/{id}', { params: { path: { id } }, cache: 'no-store' }));
  if (!session.ok) return session.failure.kind === 'not-found' ? { kind: 'not-found' } : { kind: 'failure', failure: session.failure };
  return { kind: 'ok', session: session.data };
}

/**
 * Everything else the Session page shows, read in parallel once the session is known. A section whose
 * read fails (a context that cannot fit its budget answers 422) shows its own error.
 */
export async function loadSessionSections(client: CompactorClient, session: Schemas['SessionDetail'], position: SessionPagePosition): Promise<SessionPageData> {
  const { historyAfter, eventsBefore, snapshotsBefore } = position;
  const id = session.id;
  const path = { id };
  const window = historyWindow(historyAfter, session.messageCount);
  const [usage, checkpoints, goal, context, history, snapshots, events] = await Promise.all([
    loadUsage(client, id),
    apiCall(() => client.GET('/v1/sessions/{id}/checkpoints', { params: { path }, cache: 'no-store' })),
    apiCall(() => client.GET('/v1/sessions/{id}/goal', { params: { path }, cache: 'no-store' })),
    apiCall(() => client.GET('/v1/sessions/{id}/context', { params: { path, query: { format: 'canonical' } }, cache: 'no-store' })),
    apiCall(() => client.GET('/v1/sessions/{id}/messages', { params: { path, query: { after: window.after, limit: HISTORY_PAGE_SIZE } }, cache: 'no-store' })),
    apiCall(() => client.GET('/v1/sessions/{id}/snapshots', { params: { path, query: { limit: SNAPSHOTS_SHOWN, ...(snapshotsBefore ? { before: snapshotsBefore } : {}) } }, cache: 'no-store' })),
    apiCall(() =>
      client.GET('/v1/sessions/{id}/events', { params: { path, query: { order: 'desc', limit: EVENTS_SHOWN, ...(eventsBefore ? { before: eventsBefore } : {}) } }, cache: 'no-store' }),
    ),
  ]);

  // What the head version did to each message: the diff from the uncompacted history (version 0) to the head.
  const head = context.ok ? (context.data.contextVersion ?? null) : null;
  const diff =
    head !== null && head > 0
      ? await apiCall(() => client.GET('/v1/sessions/{id}/versions/{a}/diff/{b}', { params: { path: { id, a: '0', b: String(head) } }, cache: 'no-store' }))
      : null;

  return {
    session,
    usage,
    checkpoints,
    goal,
    context,
    diff,
    history,
    historyWindow: window,
    snapshots,
    events: events.ok ? { ok: true, data: events.data.events } : events,
    paging: {
      eventsBefore,
      olderEvents: events.ok ? (events.data.nextCursor ?? null) : null,
      snapshotsBefore,
      olderSnapshots: snapshots.ok ? (snapshots.data.nextCursor ?? null) : null,
    },
  };
}
