import { limitsInForce, parseLimitsForm } from './limits-view';

const none = { requestsPerMinutePerKey: null, requestsPerMinute: null, appendedTokensPerMinute: null, summarizerTokensPerDay: null, summarizerCostPerDayUsd: null, sessionRetentionDays: null };
const defaults = { requestsPerMinutePerKey: 600, requestsPerMinute: 0, appendedTokensPerMinute: 2_000_000, summarizerTokensPerDay: 0, summarizerCostPerDayUsd: 5, sessionRetentionDays: 90 };
const spendToday = { since: '2026-11-25T00:00:00.000Z', summarizerTokens: 12_345, summarizerCostUsd: 0.5 };

describe('limitsInForce', () => {
  it("shows the operator's default where the tenant set nothing, and the tenant's own value over it", () => {
    const rows = limitsInForce({ limits: { ...none, requestsPerMinutePerKey: 120, summarizerTokensPerDay: 0 }, limitDefaults: defaults, spendToday });
    const byName = Object.fromEntries(rows.map((r) => [r.name, r]));
    expect(byName.requestsPerMinutePerKey).toMatchObject({ value: 120, source: 'tenant', text: '120 requests per minute', own: '120', defaultText: '600 requests per minute' });
    expect(byName.requestsPerMinute).toMatchObject({ value: 0, source: 'default', text: 'No limit', own: '' });
    expect(byName.appendedTokensPerMinute).toMatchObject({ source: 'default', text: '2,000,000 tokens per minute' });
    // A tenant's 0 is its own choice of no limit, not the default.
    expect(byName.summarizerTokensPerDay).toMatchObject({ value: 0, source: 'tenant', text: 'No limit', own: '0', usedToday: '12,345 tokens' });
    expect(byName.summarizerCostPerDayUsd).toMatchObject({ text: '$5.00 per UTC day', usedToday: '$0.50' });
    expect(byName.sessionRetentionDays).toMatchObject({ text: 'sessions idle over 90 days are deleted' });
    expect(limitsInForce({ limits: none, limitDefaults: { ...defaults, sessionRetentionDays: 0 }, spendToday }).at(-1)).toMatchObject({ text: 'Sessions are kept', defaultText: 'sessions are kept' });
    expect(byName.requestsPerMinute).toMatchObject({ defaultText: 'no limit' });
    expect(rows.map((r) => r.name)).toHaveLength(6);
  });
});

describe('parseLimitsForm', () => {
  const form = (fields: Record<string, string>) => (name: string) => fields[name];

  it('sends only what changed: a number, 0 for no limit, null to go back to the default', () => {
    expect(
      parseLimitsForm(
        form({
          'limit-requestsPerMinutePerKey': '1,200',
          'current-requestsPerMinutePerKey': '600',
          'limit-requestsPerMinute': '0',
          'current-requestsPerMinute': '',
          'limit-appendedTokensPerMinute': '',
          'current-appendedTokensPerMinute': '50000',
          'limit-summarizerCostPerDayUsd': ' 2.5 ',
          'limit-sessionRetentionDays': '30',
          'current-sessionRetentionDays': '30',
        }),
      ),
    ).toEqual({ ok: true, value: { requestsPerMinutePerKey: 1200, requestsPerMinute: 0, appendedTokensPerMinute: null, summarizerCostPerDayUsd: 2.5 } });
  });

  it('sends nothing for a value written differently', () => {
    expect(parseLimitsForm(form({ 'limit-requestsPerMinute': '1_000', 'current-requestsPerMinute': '1000' }))).toEqual({ ok: true, value: {} });
  });

  it('names each field that is not a number, or not whole where it must be', () => {
    const parsed = parseLimitsForm(form({ 'limit-requestsPerMinute': 'ten', 'limit-sessionRetentionDays': '1.5', 'limit-summarizerCostPerDayUsd': '-1', 'limit-summarizerTokensPerDay': '1.' }));
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(Object.keys(parsed.problems).sort()).toEqual(['limits.requestsPerMinute', 'limits.sessionRetentionDays', 'limits.summarizerCostPerDayUsd', 'limits.summarizerTokensPerDay']);
    expect(parsed.problems['limits.sessionRetentionDays']).toBe('Enter a whole number: 0 for no limit, 1–36,500, or leave it empty for the default.');
  });
});
