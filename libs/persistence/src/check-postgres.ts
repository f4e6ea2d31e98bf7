import { Client } from 'pg';

/** Resolves to undefined when PostgreSQL answers at the URL, or to the reason it does not. */
export async function checkPostgres(url: string, timeoutMs = 5000): Promise<string | undefined> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message || error.name : String(error);
  } finally {
    await client.end().catch(() => undefined);
  }
}
