import 'server-only';
import { connection } from 'next/server';
import { cache } from 'react';
import { getDashboardConfig } from '../config';
import { getCompactorClient } from './client';
import { checkReadiness, type Readiness } from './readiness';

/**
 * The API's readiness for the current request. Cached per request, so the layout's status
 * indicator and the Overview panel share one call; `connection()` keeps every page dynamic
 * (rendered per request, never baked in at build time).
 */
export const loadReadiness = cache(async (): Promise<Readiness> => {
  await connection();
  return checkReadiness(getCompactorClient(), getDashboardConfig().COMPACTOR_API_URL);
});
