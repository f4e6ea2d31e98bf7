import { renderToStaticMarkup } from 'react-dom/server';
import type { AnalyticsSummary } from '../../lib/overview-charts';
import { KeyNotice } from '../settings/key-notice';
import { FailuresPanel, KeyFigures, NearBudgetPanel, OverviewCharts, RangePicker } from './overview-sections';

const text = (html: string) => html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim();

const empty: AnalyticsSummary = {
  from: '2026-11-17T00:00:00.000Z',
  to: '2026-11-24T00:00:00.000Z',
  tokensSaved: 0,
  compactions: { total: 0, succeeded: 0, skipped: 0, failed: 0, queued: 0, running: 0 },
  compressionRatios: { buckets: Array.from({ length: 10 }, (_, i) => ({ from: i / 10, to: (i + 1) / 10, count: 0 })), median: null },
  compactionsPerDay: ['2026-11-22', '2026-11-23'].map((day) => ({ day, count: 0, succeeded: 0, skipped: 0, failed: 0, tokensSaved: 0, llmCalls: 0, llmTokens: 0, llmCostUsd: 0 })),
  llm: { calls: 0, inputTokens: 0, outputTokens: 0, costUsd: 0 },
  failures: { total: 0, perDay: [], recent: [] },
  queueDepth: { waiting: 2, active: 1, delayed: 0, failed: 0 },
  sessionsNearBudget: { threshold: 0.8, count: 0, sessions: [] },
};

describe('Overview sections', () => {
  it('shows an empty state instead of charts when nothing was compacted', () => {
    const html = renderToStaticMarkup(<OverviewCharts summary={empty} days={7} />);
    expect(html).toContain('data-testid="overview-empty"');
    expect(text(html)).toContain('No compactions in the last 7 days');
    expect(html).not.toContain('<figure');
  });

  it('shows zeros and dashes in the key figures, and the queue now', () => {
    const html = renderToStaticMarkup(<KeyFigures summary={empty} days={7} />);
    expect(text(html)).toContain('Tokens saved 0 by 0 succeeded compactions');
    expect(text(html)).toContain('Median context kept — no succeeded compaction yet');
    expect(text(html)).toContain('Queue 2 waiting now · 1 running · 0 retrying');
  });

  it('says so when no session is near its budget and nothing failed', () => {
    const now = new Date('2026-11-23T12:00:00Z');
    expect(text(renderToStaticMarkup(<NearBudgetPanel summary={empty} now={now} />))).toContain('No session is at 80% of its budget or more.');
    expect(text(renderToStaticMarkup(<FailuresPanel summary={empty} days={30} />))).toContain('No compaction failed in the last 30 days.');
  });

  it('lists recent failures with a link to their session', () => {
    const summary = {
      ...empty,
      failures: { total: 1, perDay: [], recent: [{ jobId: 'j1', sessionId: 'run/1', trigger: 'manual' as const, error: 'upstream answered 503', at: '2026-11-23T10:00:00Z' }] },
    };
    const html = renderToStaticMarkup(<FailuresPanel summary={summary} days={7} />);
    expect(html).toContain('href="/sessions/run%2F1"');
    expect(text(html)).toContain('Nov 23, 10:00 UTC run/1 (manual) upstream answered 503');
  });

  it('marks the current range in the range picker', () => {
    const html = renderToStaticMarkup(<RangePicker days={90} />);
    expect(html).toContain('<a aria-current="page" href="/?range=90">90 days</a>');
    expect(html).toContain('href="/"');
  });
});

describe('KeyNotice', () => {
  it('points to Settings when no key was entered', () => {
    const html = renderToStaticMarkup(<KeyNotice problem={{ state: 'no-key' }} what="the overview" />);
    expect(html).toContain('href="/settings"');
    expect(html).not.toContain('role="alert"');
    expect(text(html)).toContain('No API key entered yet');
  });

  it('names a rejected key and the API answer', () => {
    const html = renderToStaticMarkup(<KeyNotice problem={{ state: 'rejected', status: 401, message: 'The API key is unknown or revoked' }} what="the overview" />);
    expect(html).toContain('data-state="rejected-401"');
    expect(text(html)).toContain('The API answered 401: “The API key is unknown or revoked”. Enter another key in Settings to see the overview.');
  });
});
