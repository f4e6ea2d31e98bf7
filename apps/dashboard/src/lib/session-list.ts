import type { components } from '../api/schema';
import { formatPercent, formatRelative, formatTimestamp, formatTokens } from './session-format';
import { reliabilityBadge, type ReliabilityBadgeView } from './session-reliability';

export type SessionView = components['schemas']['SessionView'];
export type UsageView = components['schemas']['UsageView'];

/** Rows per page of the Sessions table. */
export const SESSIONS_PAGE_SIZE = 25;
/** How many earlier pages "Previous" can step back through (their cursors ride in the URL). */
export const MAX_TRAIL = 40;
/** The API's limit on `search` (a substring of the session id). */
const MAX_SEARCH = 128;

/** `usage` filter: every session, those at or over their trigger line's neighbourhood, those over budget. */
export const USAGE_FILTERS = {
  near: { label: 'At 80% of budget or more', minUtilization: 0.8 },
  over: { label: 'Over budget', minUtilization: 1 },
} as const;
export type UsageFilter = keyof typeof USAGE_FILTERS;

export interface SessionListParams {
  search?: string;
  model?: string;
  usage?: UsageFilter;
  /** Keyset cursor of this page (absent: the first page). */
  cursor?: string;
  /** Cursors of the pages before this one, oldest first ('' is the first page). */
  trail: string[];
}

type SearchParams = Record<string, string | string[] | undefined>;

const first = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);
/** The API's cursors are base64url; anything else in the URL is ignored rather than sent. */
const isCursor = (value: string) => /^[A-Za-z0-9_-]{1,200}$/.test(value);

export function parseListParams(searchParams: SearchParams): SessionListParams {
  const search = first(searchParams.q)?.trim().slice(0, MAX_SEARCH);
  const model = first(searchParams.model)?.trim().slice(0, 200);
  const usage = first(searchParams.usage);
  const cursor = first(searchParams.cursor);
  const validCursor = cursor && isCursor(cursor) ? cursor : undefined;
  const rawTrail = first(searchParams.trail);
  // Page 2's trail is [''] (the first page); a cursor that came without a trail is treated the same.
  const trail = !validCursor ? [] : rawTrail === undefined ? [''] : rawTrail.split(',').filter((c) => c === '' || isCursor(c)).slice(-MAX_TRAIL);
  return {
    ...(search ? { search } : {}),
    ...(model ? { model } : {}),
    ...(usage === 'near' || usage === 'over' ? { usage } : {}),
    ...(validCursor ? { cursor: validCursor } : {}),
    trail,
  };
}

/** The query for GET /v1/sessions: one page plus nothing else (keyset pagination; nothing is counted). */
export function listApiQuery(params: SessionListParams): { limit: number; search?: string; model?: string; minUtilization?: number; cursor?: string } {
  return {
    limit: SESSIONS_PAGE_SIZE,
    ...(params.search ? { search: params.search } : {}),
    ...(params.model ? { model: params.model } : {}),
    ...(params.usage ? { minUtilization: USAGE_FILTERS[params.usage].minUtilization } : {}),
    ...(params.cursor ? { cursor: params.cursor } : {}),
  };
}

function href(params: Omit<SessionListParams, 'trail'> & { trail?: string[] }): string {
  const query = new URLSearchParams();
  if (params.search) query.set('q', params.search);
  if (params.model) query.set('model', params.model);
  if (params.usage) query.set('usage', params.usage);
  if (params.cursor) {
    query.set('cursor', params.cursor);
    if (params.trail && params.trail.length > 0) query.set('trail', params.trail.join(','));
  }
  const qs = query.toString();
  return qs ? `/sessions?${qs}` : '/sessions';
}

export interface ListPagination {
  /** 1-based page number (as far as the trail remembers). */
  page: number;
  firstHref: string | null;
  previousHref: string | null;
  nextHref: string | null;
}

export function listPagination(params: SessionListParams, nextCursor: string | null | undefined): ListPagination {
  const filters = { search: params.search, model: params.model, usage: params.usage };
  const onFirst = !params.cursor;
  const previousCursor = params.trail.at(-1);
  return {
    page: onFirst ? 1 : params.trail.length + 1,
    firstHref: onFirst ? null : href(filters),
    previousHref: onFirst ? null : href({ ...filters, cursor: previousCursor || undefined, trail: params.trail.slice(0, -1) }),
    nextHref: nextCursor ? href({ ...filters, cursor: nextCursor, trail: [...params.trail, params.cursor ?? ''].slice(-MAX_TRAIL) }) : null,
  };
}

/** The same filters without paging: where the search form and "clear" lead. */
export function filtersHref(params: Pick<SessionListParams, 'search' | 'model' | 'usage'>): string {
  return href(params);
}

export interface UsageBarView {
  contextTokens: number;
  budget: number;
  threshold: number;
  /** Width of the fill, 0–100 (% of the budget, capped). */
  fill: number;
  /** Where the trigger line sits, 0–100 (% of the budget). */
  trigger: number;
  state: 'ok' | 'near' | 'over';
  /** "7,584 / 13,680 tokens (55%)" */
  text: string;
  /** The sentence a screen reader hears. */
  description: string;
}

const clampPercent = (n: number) => Math.max(0, Math.min(100, n));

export function usageBar(usage: Pick<UsageView, 'contextTokens' | 'budget' | 'threshold'>): UsageBarView {
  const budget = Math.max(usage.budget, 1);
  const ratio = usage.contextTokens / budget;
  const state = usage.contextTokens > usage.budget ? 'over' : usage.contextTokens >= usage.threshold ? 'near' : 'ok';
  return {
    contextTokens: usage.contextTokens,
    budget: usage.budget,
    threshold: usage.threshold,
    fill: clampPercent(ratio * 100),
    trigger: clampPercent((usage.threshold / budget) * 100),
    state,
    text: `${formatTokens(usage.contextTokens)} / ${formatTokens(usage.budget)} tokens (${formatPercent(ratio)})`,
    description:
      `${formatTokens(usage.contextTokens)} of ${formatTokens(usage.budget)} budget tokens in context (${formatPercent(ratio)}); ` +
      `compaction triggers at ${formatTokens(usage.threshold)}` +
      (state === 'over' ? '; over budget' : state === 'near' ? '; past the trigger line' : ''),
  };
}

export interface SessionRow {
  id: string;
  href: string;
  model: string;
  policy: string;
  messageCount: number;
  usage: UsageBarView;
  reliability: ReliabilityBadgeView;
  compactions: number;
  lastActivity: { iso: string; relative: string; absolute: string };
}

export function sessionHref(id: string): string {
  return `/sessions/${encodeURIComponent(id)}`;
}

export function sessionRow(session: SessionView, now: Date): SessionRow {
  return {
    id: session.id,
    href: sessionHref(session.id),
    model: session.model,
    policy: session.policy.preset,
    messageCount: session.messageCount,
    usage: usageBar(session.usage),
    reliability: reliabilityBadge(session.reliability),
    compactions: session.compactions,
    lastActivity: { iso: session.lastActivityAt, relative: formatRelative(session.lastActivityAt, now), absolute: formatTimestamp(session.lastActivityAt) },
  };
}
