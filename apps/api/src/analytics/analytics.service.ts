import { Injectable } from '@nestjs/common';
import { AnalyticsRepository, JobDay, SessionRecord, UsagePointRecord } from '@compactor/persistence';
import { JobQueue, QueueName } from '@compactor/jobs';
import { sessionUsage } from '../sessions/session-config';
import { SessionsService } from '../sessions/sessions.service';
import { denseDays, ratioBuckets, TimeRange } from './analytics-range';
import { AnalyticsSummary, QueueDepth, UsagePoint, UsageSeries } from './analytics.dto';

/** Utilization from which a session counts as near its budget on the overview. */
export const NEAR_BUDGET_UTILIZATION = 0.8;
const NEAR_BUDGET_SHOWN = 10;
const RECENT_FAILURES = 10;

function usagePointView(p: UsagePointRecord): UsagePoint {
  return {
    seq: p.seq,
    kind: p.kind,
    contextTokens: p.contextTokens,
    budget: p.budget,
    threshold: p.threshold,
    at: p.createdAt.toISOString(),
    ...(p.compactionJobId ? { compaction: { jobId: p.compactionJobId, tokensBefore: p.tokensBefore, tokensAfter: p.tokensAfter, trigger: p.trigger } } : {}),
  };
}

const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits;

@Injectable()
export class AnalyticsService {
  constructor(
    private readonly analytics: AnalyticsRepository,
    private readonly sessions: SessionsService,
    private readonly queue: JobQueue,
  ) {}

  /** The session's usage series after the point `after` (0: from the start), at most `limit` points. */
  async usage(tenantId: string, externalId: string, after: bigint, limit: number): Promise<UsageSeries> {
    const session = await this.sessions.require(tenantId, externalId);
    const rows = await this.analytics.usagePoints(tenantId, session.id, after, limit + 1);
    const page = rows.slice(0, limit);
    return {
      ...seriesHead(session),
      points: page.map(usagePointView),
      nextCursor: rows.length > limit ? page[page.length - 1].id : null,
    };
  }

  /** The session's whole usage series in at most about `maxPoints` points (AnalyticsRepository.usageSeriesDownsampled). */
  async usageDownsampled(tenantId: string, externalId: string, maxPoints: number): Promise<UsageSeries> {
    const session = await this.sessions.require(tenantId, externalId);
    const series = await this.analytics.usageSeriesDownsampled(tenantId, session.id, maxPoints);
    return {
      ...seriesHead(session),
      points: series.points.map((p) => ({ ...usagePointView(p), position: p.position })),
      nextCursor: null,
      totalPoints: series.totalPoints,
      ...(series.points.length < series.totalPoints ? { stretches: series.buckets } : {}),
    };
  }

  async summary(tenantId: string, range: TimeRange): Promise<AnalyticsSummary> {
    const scope = { tenantId, ...range };
    // Independent indexed statements, run side by side on the pool.
    const [days, ratios, recent, near, queueDepth] = await Promise.all([
      this.analytics.jobsPerDay(scope),
      this.analytics.ratioStats(scope),
      this.analytics.recentFailures(scope, RECENT_FAILURES),
      this.analytics.sessionsNearBudget(tenantId, NEAR_BUDGET_UTILIZATION, NEAR_BUDGET_SHOWN),
      this.queueDepth(),
    ]);
    const total = (field: keyof Omit<JobDay, 'day'>) => days.reduce((sum, d) => sum + d[field], 0);
    const perDay = denseDays(range, days);
    return {
      from: range.from.toISOString(),
      to: range.to.toISOString(),
      tokensSaved: total('tokensSaved'),
      compactions: {
        total: total('total'),
        succeeded: total('succeeded'),
        skipped: total('skipped'),
        failed: total('failed'),
        queued: total('queued'),
        running: total('running'),
      },
      compressionRatios: {
        buckets: ratioBuckets(ratios.buckets),
        median: ratios.median === null ? null : round(ratios.median, 6),
      },
      compactionsPerDay: perDay.map((d) => ({
        day: d.day,
        count: d.total,
        succeeded: d.succeeded,
        skipped: d.skipped,
        failed: d.failed,
        tokensSaved: d.tokensSaved,
        llmCalls: d.llmCalls,
        llmTokens: d.llmInputTokens + d.llmOutputTokens,
        llmCostUsd: round(d.llmCostUsd, 6),
      })),
      llm: {
        calls: total('llmCalls'),
        inputTokens: total('llmInputTokens'),
        outputTokens: total('llmOutputTokens'),
        costUsd: round(total('llmCostUsd'), 6),
      },
      failures: {
        total: total('failed'),
        perDay: perDay.map((d) => ({ day: d.day, count: d.failed })),
        recent: recent.map((f) => ({ jobId: f.jobId, sessionId: f.sessionId, trigger: f.trigger, error: f.error, at: (f.finishedAt ?? f.createdAt).toISOString() })),
      },
      queueDepth,
      sessionsNearBudget: {
        threshold: NEAR_BUDGET_UTILIZATION,
        count: near.count,
        sessions: near.sessions.map((s) => ({
          id: s.externalId,
          model: s.model,
          utilization: s.utilization,
          contextTokens: s.contextTokens,
          lastActivityAt: s.lastActivityAt.toISOString(),
        })),
      },
    };
  }

  private queueDepth(): Promise<QueueDepth> {
    return this.queue.depth(QueueName.Compaction);
  }
}

/** What every usage series answer opens with: the session and its budget, threshold and use now. */
function seriesHead(session: SessionRecord): Pick<UsageSeries, 'sessionId' | 'budget' | 'threshold' | 'contextTokens' | 'utilization'> {
  const now = sessionUsage(session, session.contextTokens, session.systemTokens);
  return { sessionId: session.externalId, budget: now.budget, threshold: now.threshold, contextTokens: now.contextTokens, utilization: now.utilization };
}
