import type { PgPoolService } from './pg-pool.service';
import type { PrismaService } from './prisma.service';
import { ReadReplica } from './read-replica.service';

type QueryMock = jest.Mock<Promise<{ rows: unknown[] }>, [string, unknown[]?]>;

/** A ReadReplica whose primary and replica pools are mocks (the real pools are made but never connect). */
function setup(url: string | undefined, exportWaitMs = 0) {
  const primaryQuery: QueryMock = jest.fn<Promise<{ rows: unknown[] }>, [string, unknown[]?]>(async () => ({ rows: [{ from: 'primary', lsn: '0/100' }] }));
  const primary = { pool: { query: primaryQuery } } as unknown as PgPoolService;
  const replica = new ReadReplica({ url, exportWaitMs }, primary, {} as PrismaService);
  const replicaQuery: QueryMock = jest.fn<Promise<{ rows: unknown[] }>, [string, unknown[]?]>(async () => ({ rows: [{ from: 'replica' }] }));
  const internals = replica as unknown as { pool: { query: QueryMock } | null };
  if (internals.pool) internals.pool.query = replicaQuery;
  return { replica, primaryQuery, replicaQuery };
}

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5433'), { code: 'ECONNREFUSED' });
const recoveryConflict = Object.assign(new Error('canceling statement due to conflict with recovery'), { code: '40001' });

describe('ReadReplica', () => {
  afterEach(() => jest.useRealTimers());

  it('without DATABASE_REPLICA_URL every heavy read runs on the primary', async () => {
    const { replica, primaryQuery } = setup(undefined);
    expect(replica.configured).toBe(false);
    expect((await replica.query('SELECT 1', [])).rows).toEqual([{ from: 'primary', lsn: '0/100' }]);
    expect(primaryQuery).toHaveBeenCalledTimes(1);
    expect(await replica.exportSource()).toBe('primary');
  });

  it('reads the replica while it answers', async () => {
    const { replica, primaryQuery, replicaQuery } = setup('postgresql://ro@127.0.0.1:5433/db');
    expect((await replica.query('SELECT 1', [])).rows).toEqual([{ from: 'replica' }]);
    expect(replicaQuery).toHaveBeenCalledTimes(1);
    expect(primaryQuery).not.toHaveBeenCalled();
  });

  it('a refused connection: the read runs on the primary, and the replica is left alone for 5 s, then tried again', async () => {
    jest.useFakeTimers({ now: 1_000_000, doNotFake: ['nextTick', 'setImmediate'] });
    const { replica, primaryQuery, replicaQuery } = setup('postgresql://ro@127.0.0.1:5433/db');
    replicaQuery.mockRejectedValueOnce(refused);
    expect((await replica.query('SELECT 1', [])).rows[0]).toMatchObject({ from: 'primary' });
    expect((await replica.query('SELECT 1', [])).rows[0]).toMatchObject({ from: 'primary' });
    expect(replicaQuery).toHaveBeenCalledTimes(1);
    expect(primaryQuery).toHaveBeenCalledTimes(2);
    jest.setSystemTime(1_000_000 + 5_000);
    expect((await replica.query('SELECT 1', [])).rows).toEqual([{ from: 'replica' }]);
  });

  it('a query the standby cancels for a recovery conflict runs on the primary', async () => {
    const { replica, replicaQuery } = setup('postgresql://ro@127.0.0.1:5433/db');
    replicaQuery.mockRejectedValueOnce(recoveryConflict);
    expect((await replica.query('SELECT 1', [])).rows[0]).toMatchObject({ from: 'primary' });
  });

  it('a query error (not the replica being away) is the caller’s: no fallback', async () => {
    const { replica, primaryQuery, replicaQuery } = setup('postgresql://ro@127.0.0.1:5433/db');
    replicaQuery.mockRejectedValueOnce(Object.assign(new Error('syntax error at or near "SELEC"'), { code: '42601' }));
    await expect(replica.query('SELEC 1', [])).rejects.toThrow('syntax error');
    expect(primaryQuery).not.toHaveBeenCalled();
  });

  it('an export reads the replica once it has replayed the primary’s insert position, else the primary', async () => {
    const caught = setup('postgresql://ro@127.0.0.1:5433/db');
    caught.replicaQuery.mockResolvedValueOnce({ rows: [{ standby: true, caught: true }] });
    expect(await caught.replica.exportSource()).toBe('replica');
    expect(caught.primaryQuery.mock.calls[0][0]).toContain('pg_current_wal_insert_lsn()');
    expect(caught.replicaQuery.mock.calls[0][1]).toEqual(['0/100']);

    const behind = setup('postgresql://ro@127.0.0.1:5433/db', 0);
    behind.replicaQuery.mockResolvedValue({ rows: [{ standby: true, caught: false }] });
    expect(await behind.replica.exportSource()).toBe('primary');

    const down = setup('postgresql://ro@127.0.0.1:5433/db', 0);
    down.replicaQuery.mockRejectedValueOnce(refused);
    expect(await down.replica.exportSource()).toBe('primary');
  });
});
