import { createTestDatabase, pollUntil, TestDatabase } from '@compactor/testing';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { EventRepository } from './event.repository';
import { PgPoolService } from './pg-pool.service';
import { PrismaService } from './prisma.service';
import { SessionRepository } from './session.repository';
import { TenantRepository } from './tenant.repository';

describe('EventRepository (real Postgres)', () => {
  let db: TestDatabase;
  let prisma: PrismaService;
  let pg: PgPoolService;
  let events: EventRepository;
  let sessions: SessionRepository;

  beforeAll(async () => {
    db = await createTestDatabase('events');
    prisma = new PrismaService(db.url);
    pg = new PgPoolService(db.url);
    events = new EventRepository(prisma);
    sessions = new SessionRepository(prisma, pg);
  });
  afterAll(async () => {
    await prisma?.$disconnect();
    await pg?.onModuleDestroy();
    await db?.drop();
  });

  const newSession = async () => {
    const tenant = await new TenantRepository(prisma).ensure(`tenant-${randomBytes(4).toString('hex')}`);
    const session = await sessions.create(tenant.id, `s-${randomBytes(4).toString('hex')}`, { model: 'gpt-4o', contextWindow: 32_000, outputReserve: 4_000, policy: { preset: 'balanced' } });
    return { tenantId: tenant.id, sessionId: session!.id };
  };

  it('records events in order with growing bigint ids, and pages them both ways with a type filter', async () => {
    const { tenantId, sessionId } = await newSession();
    const one = await events.record(sessionId, tenantId, 'compressed', 'Summarized 8 messages → 1 summary (saved ~1,200 tokens)', { jobId: 'j1' });
    const many = await events.recordMany(sessionId, tenantId, [
      { type: 'offloaded', line: 'line 2' },
      { type: 'compressed', line: 'line 3', data: { n: 3 } },
      { type: 'checkpoint-aged', line: 'line 4' },
    ]);
    expect(typeof one!.id).toBe('bigint');
    const ids = [one!.id, ...many.map((e) => e.id)];
    expect([...ids].sort((a, b) => (a < b ? -1 : 1))).toEqual(ids);
    expect(many.map((e) => e.line)).toEqual(['line 2', 'line 3', 'line 4']);
    expect(many[1].data).toEqual({ n: 3 });
    expect(one!.data).toEqual({ jobId: 'j1' });

    const first = await events.page({ tenantId, sessionId, limit: 2 });
    expect(first.map((e) => e.line)).toEqual(['Summarized 8 messages → 1 summary (saved ~1,200 tokens)', 'line 2']);
    const second = await events.page({ tenantId, sessionId, after: first[1].id, limit: 2 });
    expect(second.map((e) => e.line)).toEqual(['line 3', 'line 4']);
    const newest = await events.page({ tenantId, sessionId, limit: 2, order: 'desc' });
    expect(newest.map((e) => e.line)).toEqual(['line 4', 'line 3']);
    expect((await events.page({ tenantId, sessionId, before: newest[1].id, limit: 5, order: 'desc' })).map((e) => e.line)).toEqual(['line 2', first[0].line]);
    expect((await events.page({ tenantId, sessionId, limit: 10, types: ['compressed'] })).map((e) => e.line)).toEqual([first[0].line, 'line 3']);
    expect((await events.after(sessionId, ids[1], 10)).map((e) => e.id)).toEqual(ids.slice(2));
  });

  it("keeps tenants apart: another tenant's id reads nothing and records nothing", async () => {
    const a = await newSession();
    const b = await newSession();
    await events.record(a.sessionId, a.tenantId, 'compressed', 'a');
    expect(await events.page({ tenantId: b.tenantId, sessionId: a.sessionId, limit: 10 })).toEqual([]);
    expect(await events.record(a.sessionId, b.tenantId, 'compressed', 'written by the wrong tenant')).toBeNull();
    expect((await events.page({ tenantId: a.tenantId, sessionId: a.sessionId, limit: 10 })).map((e) => e.line)).toEqual(['a']);
  });

  it('hands out ids in commit order: a write waits for a transaction that holds the session row and inserted an event', async () => {
    const { tenantId, sessionId } = await newSession();
    // Another writer's transaction (as the append and commit transactions do): session row locked, event inserted, not committed yet.
    const other = new Client({ connectionString: db.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query('UPDATE sessions SET updated_at = now() WHERE id = $1', [sessionId]);
      const { rows } = await other.query<{ id: string }>(`INSERT INTO events (session_id, tenant_id, type, line) VALUES ($1, $2, 'snapshot-created', 'first') RETURNING id`, [sessionId, tenantId]);
      const firstId = BigInt(rows[0].id);

      let settled = false;
      const second = events.record(sessionId, tenantId, 'compressed', 'second').finally(() => (settled = true));
      // The write is blocked on the row lock, so it cannot commit an id above one a reader has not seen yet.
      await pollUntil(
        async () => {
          // Asked outside `other`'s transaction: inside one, pg_stat_activity is a snapshot taken at first access.
          const { rows: waiting } = await pg.pool.query(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO events%'`,
          );
          return waiting.length > 0 ? true : undefined;
        },
        { timeoutMs: 10_000, what: 'the second write to wait for the session row lock' },
      );
      expect(settled).toBe(false);
      await other.query('COMMIT');
      const row = await second;
      expect(row!.id).toBeGreaterThan(firstId);
      expect((await events.after(sessionId, 0n, 10)).map((e) => e.line)).toEqual(['first', 'second']);
    } finally {
      await other.end();
    }
  });
});
