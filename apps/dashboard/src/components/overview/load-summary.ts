import 'server-only';
import { analyticsSummarySchema } from '../../lib/overview-schema';
import type { AnalyticsSummary } from '../../lib/overview-charts';
import { rangeQuery, type RangeDays } from '../../lib/overview-range';
import { readWithSavedKey, type ApiAccess } from '../settings/api-access';

/** The analytics summary of the last `days` UTC days (today included), read with the saved key. */
export function loadSummary(days: RangeDays, now = new Date()): Promise<ApiAccess<AnalyticsSummary>> {
  const query = rangeQuery(days, now);
  return readWithSavedKey(
    (client, signal) => client.GET('/v1/analytics/summary', { params: { query }, signal, cache: 'no-store' }),
    analyticsSummarySchema,
  );
}
