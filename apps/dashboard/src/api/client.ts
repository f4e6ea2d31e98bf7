import 'server-only';
import createClient, { type Client } from 'openapi-fetch';
import { getDashboardConfig } from '../config';
import type { paths } from './schema';

export type CompactorClient = Client<paths>;

/** A typed client for the Compactor API. Server code only: the browser never talks to the API. */
export function createCompactorClient(baseUrl: string, fetchImpl?: (input: Request) => Promise<Response>): CompactorClient {
  return createClient<paths>({ baseUrl, fetch: fetchImpl });
}

let shared: CompactorClient | undefined;

export function getCompactorClient(): CompactorClient {
  shared ??= createCompactorClient(getDashboardConfig().COMPACTOR_API_URL);
  return shared;
}
