import type { components } from '../api/schema';

export type EventView = components['schemas']['EventView'];

/** Events the list keeps in memory; older ones stay one page away in the API. */
export const MAX_EVENTS = 200;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An event from the stream, checked field by field (the browser gets it as text). */
export function parseEventView(value: unknown): EventView | null {
  if (!isRecord(value)) return null;
  const { id, type, line, data, createdAt } = value;
  if (typeof id !== 'string' || !/^\d+$/.test(id)) return null;
  if (typeof type !== 'string' || typeof line !== 'string' || typeof createdAt !== 'string') return null;
  return { id, type, line, data: isRecord(data) ? data : {}, createdAt };
}

/** Ids are decimal bigints: compare by length first, then as text. */
export function compareEventIds(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

/** Newest first, each id once, at most `cap`. */
export function mergeEvents(current: EventView[], incoming: EventView[], cap = MAX_EVENTS): EventView[] {
  const byId = new Map<string, EventView>();
  for (const e of current) byId.set(e.id, e);
  for (const e of incoming) byId.set(e.id, e);
  return [...byId.values()].sort((a, b) => compareEventIds(b.id, a.id)).slice(0, cap);
}

/** The highest id, for `after` / Last-Event-ID. */
export function latestEventId(events: EventView[]): string | null {
  return events.reduce<string | null>((max, e) => (max === null || compareEventIds(e.id, max) > 0 ? e.id : max), null);
}

/** Events after which the page's data (graph, context, checkpoints, snapshots) has changed. */
export const REFRESHING_EVENT_TYPES: ReadonlySet<string> = new Set([
  'compressed',
  'compression-skipped',
  'compression-error',
  'snapshot-restored',
  'snapshot-created',
  'goal-updated',
  'watermark-advanced',
]);

const FINISHING = new Set(['compressed', 'compression-skipped', 'compression-error']);

export type EventTone = 'progress' | 'ok' | 'warn' | 'bad' | 'info';

export function eventTone(type: string): EventTone {
  if (type === 'compaction-started' || type === 'compaction-progress') return 'progress';
  if (type === 'compressed' || type === 'checkpoint-created' || type === 'snapshot-restored') return 'ok';
  if (type === 'compression-skipped' || type === 'checkpoint-aged' || type === 'offloaded') return 'warn';
  if (type === 'compression-error' || type === 'budget-too-small') return 'bad';
  return 'info';
}

const jobOf = (e: EventView): string | null => (typeof e.data.jobId === 'string' ? e.data.jobId : null);

export interface CompactionProgress {
  jobId: string | null;
  /** The latest human line of the running job ("Summarizing 27 messages…"). */
  line: string;
  startedAt: string;
}

/**
 * The compaction running now, as far as the events tell: the newest compaction-started whose job
 * has no compressed, skipped or error event after it. `events` newest first.
 */
export function runningCompaction(events: EventView[]): CompactionProgress | null {
  const finished = new Set<string>();
  for (const e of events) {
    const jobId = jobOf(e);
    if (FINISHING.has(e.type)) {
      if (jobId) finished.add(jobId);
      else return null;
      continue;
    }
    if (e.type === 'compaction-started') {
      if (jobId && finished.has(jobId)) return null;
      const progress = events.find((p) => p.type === 'compaction-progress' && jobOf(p) === jobId && compareEventIds(p.id, e.id) > 0);
      return { jobId, line: progress?.line ?? e.line, startedAt: e.createdAt };
    }
  }
  return null;
}
