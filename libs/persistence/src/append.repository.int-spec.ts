import { createTestDatabase, TestDatabase } from '@compactor/testing';
import { randomBytes } from 'node:crypto';
import { Client, QueryConfig } from 'pg';
import { AppendPlan, AppendRepository, AppendRequest, NewMessageRow } from './append.repository';
import { PgPoolService } from './pg-pool.service';
import { PrismaService } from './prisma.service';
import { SessionRecord, SessionRepository } from './session.repository';
import { TenantRepository } from './tenant.repository';

/** AppendRepository on a real PostgreSQL: the guarded one-statement path and its fallback to the locked transaction. */
describe('AppendRepository (real Postgres)', () => {
  let db: TestDatabase;
  let prisma: PrismaService;
  let pg: PgPoolService;
  let sessions: SessionRepository;
  let appends: AppendRepository;

  beforeAll(async () => {
    db = await createTestDatabase('appends');
    prisma = new PrismaService(db.url);
    pg = new PgPoolService(db.url);
    sessions = new SessionRepository(prisma, pg);
    appends = new AppendRepository(pg);
  });
  afterAll(async () => {
    await prisma?.$disconnect();
    await pg?.onModuleDestroy();
    await db?.drop();
  });
  afterEach(() => jest.restoreAllMocks());

  /** The statements every pg client sends from now on (the pool's clients included). */
  const statements = () => {
    const sent: string[] = [];
    const query = Client.prototype.query as (this: Client, ...args: unknown[]) => unknown;
    jest.spyOn(Client.prototype, 'query').mockImplementation(function (this: Client, ...args: unknown[]) {
      const q = args[0] as string | QueryConfig;
      sent.push((typeof q === 'string' ? q : q.text).trim().split(/\s+/).slice(0, 2).join(' '));
      return query.apply(this, args);
    } as never);
    return sent;
  };

  const config = { model: 'gpt-4o', contextWindow: 32_000, outputReserve: 4_000, policy: { preset: 'balanced' } };
  const newSession = async () => {
    const tenant = await new TenantRepository(prisma).ensure(`tenant-${randomBytes(4).toString('hex')}`);
    const externalId = `s-${randomBytes(4).toString('hex')}`;
    await sessions.create(tenant.id, externalId, config);
    return { tenantId: tenant.id, externalId };
  };
  const row = (text: string): NewMessageRow => ({
    role: 'user',
    blocks: [{ type: 'text', text }],
    raw: { role: 'user', content: text },
    format: 'openai',
    pinned: false,
    tags: [],
    tokens: 3,
    toolUseIds: [],
  });

  /** A request whose plan records every session it was planned on, and can refuse one. */
  const request = (
    tenantId: string,
    externalId: string,
    observed: SessionRecord | null,
    texts: string[],
    extra: Partial<AppendPlan> & { refuse?: (s: SessionRecord) => boolean } = {},
  ): AppendRequest & { plannedOn: SessionRecord[] } => {
    const plannedOn: SessionRecord[] = [];
    return {
      tenantId,
      externalId,
      create: config,
      observed,
      plannedOn,
      plan: async (session) => {
        plannedOn.push(session);
        if (extra.refuse?.(session)) throw new Error(`refused at seq ${session.lastSeq}`);
        return {
          rows: texts.map(row),
          lastRole: 'user',
          openToolUseIds: [],
          contextTokens: session.contextTokens + texts.length * 3,
          systemTokens: session.systemTokens,
          utilization: 0.1,
          budget: 28_000,
          threshold: 23_800,
          ...extra,
          respond: (firstSeq, lastSeq) => ({ firstSeq, lastSeq }),
        };
      },
    };
  };
  const stored = async (externalId: string) => {
    const { rows } = await pg.pool.query<{ seq: number; text: string }>(
      `SELECT m.seq, m.blocks->0->>'text' AS text FROM messages m JOIN sessions s ON s.id = m.session_id WHERE s.external_id = $1 ORDER BY m.seq`,
      [externalId],
    );
    return rows;
  };

  it('writes an append planned on an unchanged read in one statement, without a transaction, and returns the new row version', async () => {
    const { tenantId, externalId } = await newSession();
    const read = await sessions.find(tenantId, externalId);
    expect(read?.rowVersion).toMatch(/^\d+$/);
    const sent = statements();
    const req = request(tenantId, externalId, read, ['one', 'two']);
    const outcome = await appends.append(req);
    jest.restoreAllMocks();

    expect(outcome).toMatchObject({ kind: 'appended', created: false, firstSeq: 1, lastSeq: 2, response: { firstSeq: 1, lastSeq: 2 } });
    expect(sent).toEqual(['WITH updated']);
    expect(req.plannedOn).toHaveLength(1);
    const after = await sessions.find(tenantId, externalId);
    expect(after).toMatchObject({ lastSeq: 2, historyTokens: 6, contextTokens: 6, lastRole: 'user' });
    expect(outcome.kind === 'appended' && outcome.session).toEqual(after);
    expect(after!.rowVersion).not.toBe(read!.rowVersion);
    expect(await stored(externalId)).toEqual([
      { seq: 1, text: 'one' },
      { seq: 2, text: 'two' },
    ]);
    const { rows: usage } = await pg.pool.query(`SELECT seq, context_tokens FROM usage_points WHERE session_id = $1`, [after!.id]);
    expect(usage).toEqual([{ seq: 2, context_tokens: 6 }]);
  });

  it('writes nothing on a read the row has moved past (another writer, or a no-op update), then locks and plans again on the current row', async () => {
    const { tenantId, externalId } = await newSession();
    const read = await sessions.find(tenantId, externalId);
    await appends.append(request(tenantId, externalId, null, ['first']));
    const req = request(tenantId, externalId, read, ['second']);
    expect(await appends.append(req)).toMatchObject({ kind: 'appended', firstSeq: 2, lastSeq: 2 });
    expect(req.plannedOn.map((s) => s.lastSeq)).toEqual([0, 1]);

    // An update that changes no value still makes a new row version: a compaction's commit, a settings change.
    const read2 = await sessions.find(tenantId, externalId);
    await pg.pool.query(`UPDATE sessions SET compactions = compactions WHERE tenant_id = $1 AND external_id = $2`, [tenantId, externalId]);
    const req2 = request(tenantId, externalId, read2, ['third']);
    expect(await appends.append(req2)).toMatchObject({ kind: 'appended', firstSeq: 3, lastSeq: 3 });
    expect(req2.plannedOn).toHaveLength(2);
    expect(await stored(externalId)).toEqual([
      { seq: 1, text: 'first' },
      { seq: 2, text: 'second' },
      { seq: 3, text: 'third' },
    ]);
  });

  it('takes a refusal on a stale read to the locked path, which decides on the current row', async () => {
    const { tenantId, externalId } = await newSession();
    const stale = await sessions.find(tenantId, externalId);
    await appends.append(request(tenantId, externalId, null, ['first']));
    // Refuses unless planned on the current row (lastSeq 1): the stale read's refusal is not final.
    const req = request(tenantId, externalId, stale, ['second'], { refuse: (s) => s.lastSeq !== 1 });
    expect(await appends.append(req)).toMatchObject({ kind: 'appended', firstSeq: 2 });
    // A refusal on the current row is final, and stores nothing.
    const fresh = await sessions.find(tenantId, externalId);
    const refused = request(tenantId, externalId, fresh, ['never'], { refuse: () => true });
    await expect(appends.append(refused)).rejects.toThrow('refused at seq 2');
    expect(refused.plannedOn).toHaveLength(2);
    expect((await stored(externalId)).map((m) => m.text)).toEqual(['first', 'second']);
  });

  it('with a remembered row (observedRemembered) that moved on, writes nothing and answers stale, refusal or not; on the current row it appends', async () => {
    const { tenantId, externalId } = await newSession();
    const first = await appends.append(request(tenantId, externalId, await sessions.find(tenantId, externalId), ['first']));
    const remembered = first.kind === 'appended' ? first.session : null;
    expect(remembered?.lastSeq).toBe(1);
    // Another writer (another replica's append) moves the row on.
    await appends.append(request(tenantId, externalId, null, ['second']));
    const sent = statements();
    const stale = { ...request(tenantId, externalId, remembered, ['lost?']), observedRemembered: true };
    expect(await appends.append(stale)).toEqual({ kind: 'stale' });
    const refusedStale = { ...request(tenantId, externalId, remembered, ['lost?'], { refuse: () => true }), observedRemembered: true };
    expect(await appends.append(refusedStale)).toEqual({ kind: 'stale' });
    jest.restoreAllMocks();
    // Neither took the locked path: one guarded statement, nothing in a transaction.
    expect(sent).toEqual(['WITH updated']);
    expect(stale.plannedOn.map((x) => x.lastSeq)).toEqual([1]);
    // The row the last append returned is current: remembered, it appends without reading.
    const current = await appends.append(request(tenantId, externalId, null, ['third']));
    const ok = { ...request(tenantId, externalId, current.kind === 'appended' ? current.session : null, ['fourth']), observedRemembered: true };
    expect(await appends.append(ok)).toMatchObject({ kind: 'appended', firstSeq: 4, lastSeq: 4 });
    expect((await stored(externalId)).map((m) => m.text)).toEqual(['first', 'second', 'third', 'fourth']);
  });

  it('keeps seqs gap-free and loses nothing when 30 appends race on reads of the same row version', async () => {
    const { tenantId, externalId } = await newSession();
    const read = await sessions.find(tenantId, externalId);
    const outcomes = await Promise.all(Array.from({ length: 30 }, (_, i) => appends.append(request(tenantId, externalId, read, [`m${i}`]))));
    const seqs = outcomes.map((o) => (o.kind === 'appended' ? o.firstSeq : -1)).sort((a, b) => a - b);
    expect(seqs).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    const rows = await stored(externalId);
    expect(rows.map((r) => r.seq)).toEqual(seqs);
    expect(new Set(rows.map((r) => r.text)).size).toBe(30);
    expect(await sessions.find(tenantId, externalId)).toMatchObject({ lastSeq: 30, historyTokens: 90 });
  });

  it('writes the goal record and the threshold snapshot in the guarded statement, and neither when the guard fails', async () => {
    const { tenantId, externalId } = await newSession();
    const read = await sessions.find(tenantId, externalId);
    const snapshot = { metadata: { reason: 'threshold' }, line: 'Snapshot at 80% of the budget' };
    const req = request(tenantId, externalId, read, ['goal'], { goal: { goal: 'ship it' }, snapshot });
    const sent = statements();
    await appends.append(req);
    jest.restoreAllMocks();
    expect(sent).toEqual(['WITH updated']);
    const after = await sessions.find(tenantId, externalId);
    expect(after!.goal).toEqual({ goal: 'ship it' });
    const snaps = async () => (await pg.pool.query(`SELECT kind, metadata FROM snapshots WHERE session_id = $1`, [after!.id])).rows;
    const events = async () => (await pg.pool.query(`SELECT type, line, data FROM events WHERE session_id = $1`, [after!.id])).rows;
    expect(await snaps()).toEqual([{ kind: 'threshold', metadata: { reason: 'threshold' } }]);
    expect(await events()).toEqual([{ type: 'snapshot-created', line: 'Snapshot at 80% of the budget', data: { kind: 'threshold', lastSeq: 1 } }]);

    // A stale read: the guarded statement writes nothing, the locked plan (here without goal or snapshot) writes its own.
    let planned = 0;
    const stale = request(tenantId, externalId, read, ['later'], { goal: { goal: 'stale' }, snapshot });
    const plan = stale.plan;
    stale.plan = async (session, created, known) => {
      const p = await plan(session, created, known);
      return planned++ === 0 ? p : { ...p, goal: undefined, snapshot: undefined };
    };
    await appends.append(stale);
    expect((await sessions.find(tenantId, externalId))!.goal).toEqual({ goal: 'ship it' });
    expect(await snaps()).toHaveLength(1);
    expect(await events()).toHaveLength(1);
  });

  it('stores the answer to an Idempotency-Key in the guarded statement, replays it, and refuses the key for another request', async () => {
    const { tenantId, externalId } = await newSession();
    const read = await sessions.find(tenantId, externalId);
    const keyed = (texts: string[], requestHash: string, observed = read) => ({ ...request(tenantId, externalId, observed, texts), idempotency: { key: 'k-1', requestHash } });
    const sent = statements();
    const first = await appends.append(keyed(['once'], 'hash-a'));
    jest.restoreAllMocks();
    expect(first).toMatchObject({ kind: 'appended', firstSeq: 1, lastSeq: 1, response: { firstSeq: 1, lastSeq: 1 } });
    // The key's lookup, then one statement: no transaction.
    expect(sent).toEqual(['SELECT request_hash', 'WITH updated']);
    const again = await sessions.find(tenantId, externalId);
    const replay = keyed(['once'], 'hash-a', again);
    expect(await appends.append(replay)).toEqual({ kind: 'replayed', response: { firstSeq: 1, lastSeq: 1 } });
    expect(replay.plannedOn).toHaveLength(0);
    expect(await appends.append(keyed(['other'], 'hash-b', again))).toEqual({ kind: 'key-reused' });
    expect((await stored(externalId)).map((m) => m.text)).toEqual(['once']);
  });

  it('appends once when two requests with the same key race on one row version: the other replays the answer', async () => {
    const { tenantId, externalId } = await newSession();
    const read = await sessions.find(tenantId, externalId);
    const keyed = () => ({ ...request(tenantId, externalId, read, ['raced']), idempotency: { key: 'k-race', requestHash: 'same' } });
    const outcomes = await Promise.all([appends.append(keyed()), appends.append(keyed()), appends.append(keyed())]);
    expect(outcomes.map((o) => o.kind).sort()).toEqual(['appended', 'replayed', 'replayed']);
    for (const o of outcomes) expect(o.kind === 'replayed' || o.kind === 'appended' ? o.response : null).toEqual({ firstSeq: 1, lastSeq: 1 });
    expect(await stored(externalId)).toEqual([{ seq: 1, text: 'raced' }]);
  });

  it('checks tool-result ids against the stored history on the guarded path', async () => {
    const { tenantId, externalId } = await newSession();
    await appends.append({ ...request(tenantId, externalId, null, ['call']), plan: async (s) => ({ ...(await request(tenantId, externalId, null, ['call']).plan(s, false, async () => [])), rows: [{ ...row('call'), toolUseIds: ['call_1'] }] }) });
    const read = await sessions.find(tenantId, externalId);
    let known: string[] = [];
    await appends.append({
      ...request(tenantId, externalId, read, ['result']),
      plan: async (s, created, knownToolUseIds) => {
        known = await knownToolUseIds(['call_1', 'call_2']);
        return request(tenantId, externalId, read, ['result']).plan(s, created, knownToolUseIds);
      },
    });
    expect(known).toEqual(['call_1']);
  });
});
