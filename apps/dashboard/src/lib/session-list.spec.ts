import { filtersHref, listApiQuery, listPagination, parseListParams, SESSIONS_PAGE_SIZE, sessionRow, usageBar, type SessionView } from './session-list';

const session = (over: Partial<SessionView> = {}): SessionView => ({
  id: 'agent run/42',
  model: 'gpt-4o',
  contextWindow: 16_000,
  outputReserve: 2_000,
  policy: { preset: 'balanced', overrides: {} },
  tokenCounting: 'exact',
  messageCount: 80,
  historyTokens: 22_649,
  usage: { contextTokens: 7_584, budget: 13_680, available: 12_252, utilization: 0.554, threshold: 10_944 },
  compactions: 3,
  reliability: { score: 46.8, level: 'low', emoji: '🟠', label: 'Low', warning: 'Context Compression Warning', factors: { modelFactor: 0.85, compressionPenalty: 0.55, contextConfidence: 1 } },
  createdAt: '2026-11-23T14:25:00.000Z',
  updatedAt: '2026-11-23T14:25:03.000Z',
  lastActivityAt: '2026-11-23T14:25:03.000Z',
  ...over,
});

describe('parseListParams and listApiQuery', () => {
  it('turns the URL into one page of the API, nothing counted', () => {
    const params = parseListParams({ q: '  run-4 ', model: 'gpt-4o', usage: 'near', cursor: 'MjAyNi0xMS0yM3x4', trail: ',QUJD' });
    expect(params).toEqual({ search: 'run-4', model: 'gpt-4o', usage: 'near', cursor: 'MjAyNi0xMS0yM3x4', trail: ['', 'QUJD'] });
    expect(listApiQuery(params)).toEqual({ limit: SESSIONS_PAGE_SIZE, search: 'run-4', model: 'gpt-4o', minUtilization: 0.8, cursor: 'MjAyNi0xMS0yM3x4' });
  });

  it('ignores what the API would refuse: a bad cursor, an unknown filter, an over-long search', () => {
    const params = parseListParams({ q: 'x'.repeat(300), usage: 'everything', cursor: 'not a cursor!', trail: 'QUJD' });
    expect(params.search).toHaveLength(128);
    expect(params).not.toHaveProperty('usage');
    expect(params).not.toHaveProperty('cursor');
    expect(params.trail).toEqual([]);
    expect(listApiQuery(parseListParams({}))).toEqual({ limit: SESSIONS_PAGE_SIZE });
  });
});

describe('listPagination', () => {
  it('walks forward with the API cursor and back through the trail, keeping the filters', () => {
    const first = parseListParams({ q: 'run' });
    const p1 = listPagination(first, 'C1');
    expect(p1).toEqual({ page: 1, firstHref: null, previousHref: null, nextHref: '/sessions?q=run&cursor=C1&trail=' });

    const second = parseListParams(Object.fromEntries(new URL(`http://x${p1.nextHref}`).searchParams));
    const p2 = listPagination(second, 'C2');
    expect(p2.page).toBe(2);
    expect(p2.previousHref).toBe('/sessions?q=run');
    expect(p2.firstHref).toBe('/sessions?q=run');

    const third = parseListParams(Object.fromEntries(new URL(`http://x${p2.nextHref}`).searchParams));
    const p3 = listPagination(third, null);
    expect(p3).toEqual({ page: 3, firstHref: '/sessions?q=run', previousHref: '/sessions?q=run&cursor=C1&trail=', nextHref: null });
  });

  it('clears paging when the filters change', () => {
    expect(filtersHref({ search: 'a b', usage: 'over' })).toBe('/sessions?q=a+b&usage=over');
    expect(filtersHref({})).toBe('/sessions');
  });
});

describe('usageBar', () => {
  it('places the fill and the trigger line as shares of the budget', () => {
    const bar = usageBar({ contextTokens: 6_840, budget: 13_680, threshold: 10_944 });
    expect(bar).toMatchObject({ fill: 50, trigger: 80, state: 'ok', text: '6,840 / 13,680 tokens (50%)' });
    expect(bar.description).toBe('6,840 of 13,680 budget tokens in context (50%); compaction triggers at 10,944');
  });

  it('says when the context is past the trigger line or over budget, and caps the fill', () => {
    expect(usageBar({ contextTokens: 11_000, budget: 13_680, threshold: 10_944 }).state).toBe('near');
    const over = usageBar({ contextTokens: 15_504, budget: 13_680, threshold: 10_944 });
    expect(over).toMatchObject({ state: 'over', fill: 100, text: '15,504 / 13,680 tokens (113%)' });
    expect(over.description).toContain('over budget');
  });
});

describe('sessionRow', () => {
  it('shapes one table row: link, usage, badge, compactions and last activity', () => {
    const row = sessionRow(session(), new Date('2026-11-23T14:30:03.000Z'));
    expect(row).toMatchObject({
      id: 'agent run/42',
      href: '/sessions/agent%20run%2F42',
      model: 'gpt-4o',
      policy: 'balanced',
      compactions: 3,
      lastActivity: { relative: '5 minutes ago', absolute: '2026-11-23 14:25:03 UTC' },
    });
    expect(row.reliability.text).toBe('🟠 Low · 47');
    expect(row.usage.fill).toBeCloseTo(55.44, 1);
  });
});
