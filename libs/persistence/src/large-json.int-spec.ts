import { createTestDatabase, TestDatabase } from '@compactor/testing';
import { randomBytes } from 'node:crypto';
import { Client, QueryConfig } from 'pg';
import { AppendRepository, NewMessageRow } from './append.repository';
import { LARGE_JSON_STRING, largeStringsOf, largeStringTokens, skeletonJson } from './large-json';
import { PgPoolService } from './pg-pool.service';
import { PrismaService } from './prisma.service';
import { SessionRepository } from './session.repository';
import { TenantRepository } from './tenant.repository';

/** Every code point the API stores in a string: U+0001 to U+10FFFF, without the surrogate code units alone. */
function everyCodePoint(): string {
  const parts: string[] = [];
  for (let cp = 1; cp <= 0x10ffff; cp += 1) if (cp < 0xd800 || cp > 0xdfff) parts.push(String.fromCodePoint(cp));
  return parts.join('');
}

/** A message's large strings go to PostgreSQL once and are escaped there: the stored texts (json columns, kept as sent) are those of JSON.stringify, byte for byte. */
describe('large JSON strings in the append statement (real Postgres)', () => {
  let db: TestDatabase;
  let prisma: PrismaService;
  let pg: PgPoolService;
  let sessions: SessionRepository;
  let appends: AppendRepository;

  beforeAll(async () => {
    db = await createTestDatabase('large_json');
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

  it("PostgreSQL's to_json writes every code point of a text as JSON.stringify does", async () => {
    const text = everyCodePoint();
    const { rows } = await pg.pool.query<{ json: string }>(`SELECT to_json($1::text)::text AS json`, [text]);
    expect(rows[0].json === JSON.stringify(text)).toBe(true);
  });

  const config = { model: 'gpt-4o', contextWindow: 32_000, outputReserve: 4_000, policy: { preset: 'balanced' } };
  /** Appends `rows` to a new session; the statements' parameter texts are returned with what was stored. */
  const appendRows = async (rows: NewMessageRow[]) => {
    const tenant = await new TenantRepository(prisma).ensure(`tenant-${randomBytes(4).toString('hex')}`);
    const externalId = `s-${randomBytes(4).toString('hex')}`;
    await sessions.create(tenant.id, externalId, config);
    const sentChars: number[] = [];
    const query = Client.prototype.query as (this: Client, ...args: unknown[]) => unknown;
    jest.spyOn(Client.prototype, 'query').mockImplementation(function (this: Client, ...args: unknown[]) {
      const q = args[0] as QueryConfig | string;
      if (typeof q !== 'string' && q.text.startsWith('WITH updated')) sentChars.push((q.values ?? []).reduce<number>((n, v) => n + (typeof v === 'string' ? v.length : 0), 0));
      return query.apply(this, args);
    } as never);
    const outcome = await appends.append({
      tenantId: tenant.id,
      externalId,
      create: config,
      observed: await sessions.find(tenant.id, externalId),
      plan: async (session) => ({
        rows,
        lastRole: rows[rows.length - 1].role,
        openToolUseIds: [],
        contextTokens: session.contextTokens + 3,
        systemTokens: 0,
        utilization: 0.1,
        budget: 28_000,
        threshold: 23_800,
        respond: (firstSeq, lastSeq) => ({ firstSeq, lastSeq }),
      }),
    });
    jest.restoreAllMocks();
    expect(outcome.kind).toBe('appended');
    const { rows: stored } = await pg.pool.query<{ seq: number; blocks: string; raw: string; meta: string | null }>(
      `SELECT m.seq, m.blocks::text AS blocks, m.raw::text AS raw, m.meta::text AS meta FROM messages m JOIN sessions s ON s.id = m.session_id WHERE s.external_id = $1 ORDER BY m.seq`,
      [externalId],
    );
    return { stored, sentChars };
  };
  const message = (blocks: unknown, raw: unknown, meta?: unknown): NewMessageRow =>
    ({ role: 'user', blocks, raw, meta, format: 'openai', pinned: false, tags: [], tokens: 3, toolUseIds: [] }) as NewMessageRow;

  it('stores a large tool result sent once exactly as JSON.stringify writes it, in raw and in blocks', async () => {
    // Every code point, quotes, backslashes and control characters, repeated past the threshold.
    const big = `${everyCodePoint()}"\\\n\t\u0001\u001f\u2028`.repeat(2);
    expect(big.length).toBeGreaterThan(LARGE_JSON_STRING);
    const raw = { role: 'tool', tool_call_id: 'call_1', content: big };
    const blocks = [{ type: 'tool_result', toolUseId: 'call_1', content: big }];
    const meta = { origin: 'x', copy: big };
    const { stored, sentChars } = await appendRows([message(blocks, raw, meta), message([{ type: 'text', text: 'after' }], { role: 'user', content: 'after' })]);
    expect(stored).toHaveLength(2);
    expect(stored[0].raw === JSON.stringify(raw)).toBe(true);
    expect(stored[0].meta === JSON.stringify(meta)).toBe(true);
    expect(stored[0].blocks === JSON.stringify(blocks)).toBe(true);
    expect(stored[1]).toMatchObject({ raw: JSON.stringify({ role: 'user', content: 'after' }), blocks: JSON.stringify([{ type: 'text', text: 'after' }]), meta: null });
    // The large string went once, unescaped: well under two JSON copies of it.
    expect(sentChars[0]).toBeLessThan(big.length + 10_000);
    // Three copies of 2.2 million code points through PostgreSQL: past Jest's 5 s on a loaded 2-core machine (a fresh
    // machine's first npm test, 2026-11-29): the longer timeout is room for a loaded machine, not a claim about speed.
  }, 30_000);

  it('stores two distinct large strings of one message, and a message whose large string holds a placeholder-like text', async () => {
    const a = 'a\n'.repeat(LARGE_JSON_STRING);
    const b = `"compactor-large-${'0'.repeat(36)}"`.repeat(LARGE_JSON_STRING / 50);
    const raw = { role: 'user', content: [{ type: 'text', text: a }, { type: 'text', text: b }, { type: 'text', text: a }] };
    const blocks = [{ type: 'text', text: a }, { type: 'text', text: b }, { type: 'text', text: a }];
    const { stored, sentChars } = await appendRows([message(blocks, raw)]);
    expect(stored[0].raw === JSON.stringify(raw)).toBe(true);
    expect(stored[0].blocks === JSON.stringify(blocks)).toBe(true);
    expect(sentChars[0]).toBeLessThan(a.length + b.length + 10_000);
  }, 30_000);

  it('falls back to JSON.stringify when a placeholder would not stand only where the string was', () => {
    const big = 'x'.repeat(LARGE_JSON_STRING);
    const large = largeStringTokens(largeStringsOf([{ text: big }]))!;
    expect(large.strings).toEqual([big]);
    expect(skeletonJson({ text: big, other: big }, large)).toBe(JSON.stringify({ text: large.tokens[0], other: large.tokens[0] }));
    expect(skeletonJson({ text: big, note: large.tokens[0] }, large)).toBeUndefined();
    // Strings PostgreSQL's to_json would write otherwise are not sent apart.
    expect(largeStringsOf([{ text: `${big}\ud800` }])).toEqual([]);
    expect(largeStringsOf([{ text: 'short' }])).toEqual([]);
  });
});
