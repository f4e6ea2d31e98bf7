import type { Metadata } from 'next';
import { connection } from 'next/server';
import { ApiFailureNotice, NoKeyNotice } from '../../../components/sessions/access-notice';
import { SessionsFilters } from '../../../components/sessions/sessions-filters';
import { SessionsPagination } from '../../../components/sessions/sessions-pagination';
import { SessionsTable } from '../../../components/sessions/sessions-table';
import styles from '../../../components/sessions/sessions.module.css';
import { apiCall } from '../../../lib/session-api';
import { listApiQuery, listPagination, parseListParams, sessionRow } from '../../../lib/session-list';
import { authedClient } from '../../../server/api-key';

export const metadata: Metadata = { title: 'Sessions' };

type SearchParams = Promise<Record<string, string | string[] | undefined>>;

export default async function SessionsPage({ searchParams }: { searchParams: SearchParams }) {
  await connection();
  const params = parseListParams(await searchParams);
  const client = await authedClient();
  const header = (
    <>
      <h1>Sessions</h1>
      <p className="lead">Every agent session with its model, context usage against the budget, reliability and compactions, most recently active first.</p>
    </>
  );
  if (!client) {
    return (
      <>
        {header}
        <NoKeyNotice />
      </>
    );
  }

  const result = await apiCall(() => client.GET('/v1/sessions', { params: { query: listApiQuery(params) }, cache: 'no-store' }));
  if (!result.ok) {
    return (
      <>
        {header}
        <ApiFailureNotice failure={result.failure} />
      </>
    );
  }

  const now = new Date();
  const rows = result.data.sessions.map((s) => sessionRow(s, now));
  const pagination = listPagination(params, result.data.nextCursor);
  const filtered = Boolean(params.search || params.model || params.usage);

  return (
    <>
      {header}
      <div className={styles.page}>
        <SessionsFilters params={params} />
        {rows.length === 0 ? (
          <section className={`card empty-state ${styles.empty}`} aria-label="Sessions list">
            {filtered ? (
              <p>No sessions match these filters{params.search ? ` (id contains “${params.search}”)` : ''}.</p>
            ) : params.cursor ? (
              <p>No more sessions.</p>
            ) : (
              <p>
                No sessions yet — append messages with <code>POST /v1/sessions/:id/messages</code>.
              </p>
            )}
          </section>
        ) : (
          <SessionsTable rows={rows} />
        )}
        <SessionsPagination pagination={pagination} shown={rows.length} />
      </div>
    </>
  );
}
