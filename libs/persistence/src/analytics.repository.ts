import { Injectable } from '@nestjs/common';
import { ReadReplica } from './read-replica.service';

/** One point of a session's token usage series (usage_points joined with its compaction job). */
export interface UsagePointRecord {
  /** usage_points.id: the keyset cursor of the series. */
  id: string;
  kind: string;
  seq: number;
  contextTokens: number;
  budget: number;
  threshold: number;
  createdAt: Date;
  compactionJobId: string | null;
  tokensBefore: number | null;
  tokensAfter: number | null;
  trigger: string | null;
}

/**
 * A tenant's compaction jobs created on one UTC day. Counts and tokens saved leave dry runs out
 * (they change nothing); the LLM sums include them (their summaries were paid for).
 */
export interface JobDay {
  /** UTC day, YYYY-MM-DD. */
  day: string;
  total: number;
  succeeded: number;
  skipped: number;
  failed: number;
  queued: number;
  running: number;
  tokensSaved: number;
  llmCalls: number;
  llmInputTokens: number;
  llmOutputTokens: number;
  llmCostUsd: number;
}

/** tokens_after / tokens_before of the succeeded, non-dry-run jobs of a range. */
export interface RatioStats {
  /** null when there are none. */
  median: number | null;
  /** Counts per equal-width bucket of [0, 1]: bucket i holds [i/n, (i+1)/n), the last one includes 1. */
  buckets: number[];
}

export interface FailedJob {
  jobId: string;
  sessionId: string;
  trigger: string;
  error: string | null;
  createdAt: Date;
  finishedAt: Date | null;
}

export interface NearBudgetSession {
  externalId: string;
  model: string;
  utilization: number;
  contextTokens: number;
  lastActivityAt: Date;
}

export const RATIO_BUCKETS = 10;

const DAY_SECONDS = 24 * 3600;
/** A compaction that saved tokens: succeeded, applied (not a dry run), with both counts known. */
const SAVED = `status = 'succeeded' AND NOT dry_run AND tokens_before > 0 AND tokens_after IS NOT NULL`;
const ratioBucketColumns = Array.from({ length: RATIO_BUCKETS }, (_, i) =>
  i === RATIO_BUCKETS - 1 ? `count(*) FILTER (WHERE r >= ${i / RATIO_BUCKETS})::int AS b${i}` : `count(*) FILTER (WHERE r >= ${i / RATIO_BUCKETS} AND r < ${(i + 1) / RATIO_BUCKETS})::int AS b${i}`,
).join(',\n      ');

/**
 * Every statement the analytics endpoints run, named, so the benchmark EXPLAINs exactly these
 * (docs/benchmarks.md, "Usage and analytics"). Each is tenant-scoped and can start from an index;
 * the compaction-job ones read only columns of compaction_jobs_tenant_id_created_at_status_dr_idx
 * (tenant_id, created_at, status, dry_run, tokens and LLM columns), so a range scan of it needs no heap.
 */
export const ANALYTICS_SQL = {
  /** Index: usage_points (session_id, id); the session by its primary key and tenant. */
  usagePoints: `SELECT u.id::text AS id, u.kind, u.seq, u.context_tokens AS "contextTokens", u.budget, u.threshold,
      u.created_at AS "createdAt", u.compaction_job_id AS "compactionJobId",
      j.tokens_before AS "tokensBefore", j.tokens_after AS "tokensAfter", j.trigger::text AS trigger
    FROM usage_points u
    JOIN sessions s ON s.id = u.session_id AND s.tenant_id = $1
    LEFT JOIN compaction_jobs j ON j.id = u.compaction_job_id
    WHERE u.session_id = $2 AND u.id > $3
    ORDER BY u.id
    LIMIT $4`,
  /** One pass over the range's jobs, a row per UTC day (days since the epoch); the totals are their sums. */
  jobsPerDay: `SELECT floor(extract(epoch FROM created_at) / ${DAY_SECONDS})::int AS day,
      count(*) FILTER (WHERE NOT dry_run)::int AS total,
      count(*) FILTER (WHERE NOT dry_run AND status = 'succeeded')::int AS succeeded,
      count(*) FILTER (WHERE NOT dry_run AND status = 'skipped')::int AS skipped,
      count(*) FILTER (WHERE NOT dry_run AND status = 'failed')::int AS failed,
      count(*) FILTER (WHERE NOT dry_run AND status = 'queued')::int AS queued,
      count(*) FILTER (WHERE NOT dry_run AND status = 'running')::int AS running,
      COALESCE(sum(tokens_before - tokens_after) FILTER (WHERE ${SAVED}), 0)::float8 AS "tokensSaved",
      sum(llm_calls)::float8 AS "llmCalls",
      sum(llm_input_tokens)::float8 AS "llmInputTokens",
      sum(llm_output_tokens)::float8 AS "llmOutputTokens",
      sum(llm_cost_usd)::float8 AS "llmCostUsd"
    FROM compaction_jobs
    WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $3
    GROUP BY 1
    ORDER BY 1`,
  /** The median and the histogram of compression ratios, from the succeeded jobs of the range. */
  ratioStats: `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY r) AS median,
      ${ratioBucketColumns}
    FROM (SELECT tokens_after::float8 / tokens_before AS r
          FROM compaction_jobs
          WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $3 AND ${SAVED}) saved`,
  /** Read backwards on compaction_jobs (status, created_at) or the tenant's range, whichever the planner finds narrower. */
  recentFailures: `SELECT j.id AS "jobId", s.external_id AS "sessionId", j.trigger::text AS trigger, j.error,
      j.created_at AS "createdAt", j.finished_at AS "finishedAt"
    FROM compaction_jobs j
    JOIN sessions s ON s.id = j.session_id
    WHERE j.tenant_id = $1 AND j.status = 'failed' AND j.created_at >= $2 AND j.created_at < $3 AND NOT j.dry_run
    ORDER BY j.created_at DESC
    LIMIT $4`,
  /** Index: sessions (tenant_id, utilization), index-only. */
  nearBudgetCount: `SELECT count(*)::int AS count FROM sessions WHERE tenant_id = $1 AND utilization >= $2`,
  /** Index: sessions (tenant_id, utilization), read backwards. */
  nearBudgetTop: `SELECT external_id AS "externalId", model, utilization, context_tokens AS "contextTokens", last_activity_at AS "lastActivityAt"
    FROM sessions
    WHERE tenant_id = $1 AND utilization >= $2
    ORDER BY utilization DESC
    LIMIT $3`,
} as const;

/** A usage point with its 0-based position in the session's whole series. */
export interface PositionedUsagePoint extends UsagePointRecord {
  position: number;
}

/** A session's whole usage series drawn from at most about `maxPoints` points (see usageSeriesDownsampled). */
export interface DownsampledUsage {
  /** Points in the whole series. */
  totalPoints: number;
  /** Stretches the appends were split into (equal numbers of points); each keeps its highest and lowest append. */
  buckets: number;
  points: PositionedUsagePoint[];
}

/**
 * The statements of the downsampled usage series, kept apart from ANALYTICS_SQL (the summary's
 * statements, which the analytics bench counts and EXPLAINs).
 */
export const USAGE_SERIES_SQL = {
  /** Index: usage_points (session_id, id); the session by its primary key and tenant. */
  size: `SELECT count(*)::int AS total, count(*) FILTER (WHERE u.kind <> 'append')::int AS markers
    FROM usage_points u
    JOIN sessions s ON s.id = u.session_id AND s.tenant_id = $1
    WHERE u.session_id = $2`,
  /**
   * One pass over the series in id order (index: usage_points (session_id, id); the window needs no
   * sort), grouped by stretch: per stretch the highest and the lowest append as [tokens, id, position]
   * (max/min of an array compare element by element, so no sort per group), and [id, position] of every
   * point that is kept whatever its tokens: every non-append point (compaction, restore, goal update), the
   * point before one (the peak a compaction cut), the first and last points, and each point where the
   * budget or trigger line moved.
   */
  buckets: `SELECT
      max(ARRAY[p.tokens, p.id, p.position]) FILTER (WHERE p.kind = 'append') AS high,
      min(ARRAY[p.tokens, p.id, p.position]) FILTER (WHERE p.kind = 'append') AS low,
      array_agg(ARRAY[p.id, p.position]) FILTER (
        WHERE p.kind <> 'append' OR p.next_kind IS DISTINCT FROM 'append' OR p.position = 0
          OR p.budget IS DISTINCT FROM p.prev_budget OR p.threshold IS DISTINCT FROM p.prev_threshold
      ) AS kept
    FROM (
      SELECT u.id, u.kind, u.context_tokens::bigint AS tokens, u.budget, u.threshold,
        row_number() OVER w - 1 AS position,
        lead(u.kind) OVER w AS next_kind,
        lag(u.budget) OVER w AS prev_budget,
        lag(u.threshold) OVER w AS prev_threshold
      FROM usage_points u
      WHERE u.session_id = $1
      WINDOW w AS (ORDER BY u.id)
    ) p
    GROUP BY floor(p.position::float8 * $2 / $3)`,
  /** The kept points by primary key, with their compaction job. */
  byIds: `SELECT u.id::text AS id, u.kind, u.seq, u.context_tokens AS "contextTokens", u.budget, u.threshold,
      u.created_at AS "createdAt", u.compaction_job_id AS "compactionJobId",
      j.tokens_before AS "tokensBefore", j.tokens_after AS "tokensAfter", j.trigger::text AS trigger
    FROM usage_points u
    LEFT JOIN compaction_jobs j ON j.id = u.compaction_job_id
    WHERE u.session_id = $1 AND u.id = ANY($2::bigint[])
    ORDER BY u.id`,
} as const;

export interface AnalyticsRange {
  tenantId: string;
  from: Date;
  /** Exclusive. */
  to: Date;
}

/**
 * The read side of usage and analytics: aggregations in SQL, on indexed columns only. Heavy reads:
 * they run on the read replica when DATABASE_REPLICA_URL names one (and may lag it), else on the primary.
 */
@Injectable()
export class AnalyticsRepository {
  constructor(private readonly replica: ReadReplica) {}

  /** The session's usage points with id > afterId, oldest first; nothing when the session is not the tenant's. */
  async usagePoints(tenantId: string, sessionId: string, afterId: bigint, limit: number): Promise<UsagePointRecord[]> {
    const { rows } = await this.replica.query<UsagePointRecord>(ANALYTICS_SQL.usagePoints, [tenantId, sessionId, afterId.toString(), limit]);
    return rows;
  }

  /**
   * The session's whole usage series, downsampled to about `maxPoints` points when it is longer
   * (min-max per stretch): the appends are split into stretches of equal length and each keeps its
   * highest and lowest append, so every peak and dip wider than a stretch is drawn; every compaction,
   * restore and goal update is kept with the point before it (the peak it cut), as are the first and
   * last points and every move of the budget or trigger line. A series of at most `maxPoints` points
   * comes whole. Nothing when the session is not the tenant's.
   */
  async usageSeriesDownsampled(tenantId: string, sessionId: string, maxPoints: number): Promise<DownsampledUsage> {
    const { rows: sizes } = await this.replica.query<{ total: number; markers: number }>(USAGE_SERIES_SQL.size, [tenantId, sessionId]);
    const { total, markers } = sizes[0];
    if (total === 0) return { totalPoints: 0, buckets: 0, points: [] };
    // Two appends per stretch; markers and the points before them, and the first and last points, come on top.
    const buckets = total <= maxPoints ? total : Math.max(1, Math.floor((maxPoints - 2 * markers - 2) / 2));
    const { rows: groups } = await this.replica.query<{ high: string[] | null; low: string[] | null; kept: string[][] | null }>(USAGE_SERIES_SQL.buckets, [
      sessionId,
      buckets,
      total,
    ]);
    const positions = new Map<string, number>();
    for (const g of groups) {
      for (const [, id, position] of [g.high, g.low].filter((x): x is string[] => x !== null)) positions.set(id, Number(position));
      for (const [id, position] of g.kept ?? []) positions.set(id, Number(position));
    }
    const { rows } = await this.replica.query<UsagePointRecord>(USAGE_SERIES_SQL.byIds, [sessionId, [...positions.keys()]]);
    return { totalPoints: total, buckets, points: rows.map((r) => ({ ...r, position: positions.get(r.id) ?? 0 })) };
  }

  /** Only the days that had a compaction job, in order. */
  async jobsPerDay({ tenantId, from, to }: AnalyticsRange): Promise<JobDay[]> {
    const { rows } = await this.replica.query<Omit<JobDay, 'day'> & { day: number }>(ANALYTICS_SQL.jobsPerDay, [tenantId, from, to]);
    return rows.map((row) => ({ ...row, day: new Date(row.day * DAY_SECONDS * 1000).toISOString().slice(0, 10) }));
  }

  async ratioStats({ tenantId, from, to }: AnalyticsRange): Promise<RatioStats> {
    const { rows } = await this.replica.query<Record<string, number | null>>(ANALYTICS_SQL.ratioStats, [tenantId, from, to]);
    const row = rows[0];
    return { median: row.median, buckets: Array.from({ length: RATIO_BUCKETS }, (_, i) => Number(row[`b${i}`])) };
  }

  async recentFailures({ tenantId, from, to }: AnalyticsRange, limit: number): Promise<FailedJob[]> {
    const { rows } = await this.replica.query<FailedJob>(ANALYTICS_SQL.recentFailures, [tenantId, from, to, limit]);
    return rows;
  }

  /** How many of the tenant's sessions are at or above `utilization`, and the fullest `limit` of them. */
  async sessionsNearBudget(tenantId: string, utilization: number, limit: number): Promise<{ count: number; sessions: NearBudgetSession[] }> {
    const [count, top] = await Promise.all([
      this.replica.query<{ count: number }>(ANALYTICS_SQL.nearBudgetCount, [tenantId, utilization]),
      this.replica.query<NearBudgetSession>(ANALYTICS_SQL.nearBudgetTop, [tenantId, utilization, limit]),
    ]);
    return { count: count.rows[0].count, sessions: top.rows };
  }
}
