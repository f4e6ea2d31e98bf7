import { createTestDatabase, TestDatabase } from '@compactor/testing';
import { randomBytes, randomUUID } from 'node:crypto';
import { CompactionRepository, JobAlreadyRecorded } from './compaction.repository';
import { PgPoolService } from './pg-pool.service';
import { PrismaService } from './prisma.service';
import { SessionRepository } from './session.repository';
import { TenantRepository } from './tenant.repository';

/** The job rows an append over its threshold writes on every turn (raw SQL since the ORM cost more than the append). */
describe('CompactionRepository job rows (real Postgres)', () => {
  let db: TestDatabase;
  let prisma: PrismaService;
  let pg: PgPoolService;
  let jobs: CompactionRepository;

  beforeAll(async () => {
    db = await createTestDatabase('jobs');
    prisma = new PrismaService(db.url);
    pg = new PgPoolService(db.url);
    jobs = new CompactionRepository(prisma, pg);
  });
  afterAll(async () => {
    await prisma?.$disconnect();
    await pg?.onModuleDestroy();
    await db?.drop();
  });

  const newSession = async () => {
    const tenant = await new TenantRepository(prisma).ensure(`tenant-${randomBytes(4).toString('hex')}`);
    const session = await new SessionRepository(prisma, pg).create(tenant.id, `s-${randomBytes(4).toString('hex')}`, {
      model: 'gpt-4o',
      contextWindow: 32_000,
      outputReserve: 4_000,
      policy: { preset: 'balanced' },
    });
    return { tenantId: tenant.id, sessionId: session!.id };
  };

  it('records a queued job with the columns the ORM defaulted, and refuses its id a second time', async () => {
    const { tenantId, sessionId } = await newSession();
    const id = await jobs.createJob({ sessionId, tenantId, trigger: 'threshold', policy: { preset: 'balanced', overrides: { keepRecentTurns: 3 } } });
    const job = await jobs.findJob(tenantId, id);
    expect(job).toMatchObject({ id, sessionId, tenantId, trigger: 'threshold', status: 'queued', dryRun: false, attempts: 0, llmCalls: 0, llmCostUsd: '0', steps: [], intermediate: {} });
    const { rows } = await pg.pool.query('SELECT policy FROM compaction_jobs WHERE id = $1', [id]);
    expect(rows[0].policy).toEqual({ preset: 'balanced', overrides: { keepRecentTurns: 3 } });
    expect(Math.abs(job!.createdAt.getTime() - Date.now())).toBeLessThan(60_000);

    const dry = await jobs.createJob({ id: randomUUID(), sessionId, tenantId, trigger: 'manual', policy: {}, dryRun: true });
    expect((await jobs.findJob(tenantId, dry))?.dryRun).toBe(true);
    await expect(jobs.createJob({ id, sessionId, tenantId, trigger: 'threshold', policy: {} })).rejects.toBeInstanceOf(JobAlreadyRecorded);
  });

  it('supersedes only a job still queued', async () => {
    const { tenantId, sessionId } = await newSession();
    const started = await jobs.createJob({ sessionId, tenantId, trigger: 'threshold', policy: {} });
    await jobs.startJob(started);
    const queued = await jobs.createJob({ sessionId, tenantId, trigger: 'threshold', policy: {} });
    await jobs.supersede(queued, 'job-a');
    await jobs.supersede(started, 'job-a');
    expect(await jobs.findJob(tenantId, queued)).toMatchObject({ status: 'skipped', reason: 'superseded-by:job-a' });
    expect((await jobs.findJob(tenantId, queued))?.finishedAt).toBeInstanceOf(Date);
    expect(await jobs.findJob(tenantId, started)).toMatchObject({ status: 'running', reason: null, finishedAt: null });
  });

  describe('artifacts of a commit (issue #15: a 30 MB artifact written through the pg pool, not Prisma)', () => {
    const content = `héllo 🌍 ${'x'.repeat(5_000)}\nlast line`;
    const commitWith = (repo: CompactionRepository, sessionId: string, tenantId: string) =>
      repo.commit({
        sessionId,
        tenantId,
        baseVersionId: null,
        coversThroughSeq: 0,
        treatments: {},
        checkpoints: [],
        artifacts: [{ id: 'art_1', seq: 3, toolUseId: 'call_1', toolName: 'bash', content, tokens: 1_250 }],
        artifactIds: ['art_1'],
        prefixTokens: 0,
        loadedThroughSeq: 0,
        budget: 20_000,
        threshold: 15_000,
        events: [],
      });
    const stored = async (sessionId: string) =>
      (
        await pg.pool.query(
          `SELECT a.id, a.seq, a.tool_use_id, a.tool_name, convert_from(a.content, 'UTF8') AS text, a.bytes, a.tokens, a.sha256 = encode(sha256(a.content), 'hex') AS hashed,
                  (SELECT count(*)::int FROM version_artifacts va WHERE va.session_id = a.session_id AND va.artifact_id = a.id) AS versions
           FROM artifacts a WHERE a.session_id = $1`,
          [sessionId],
        )
      ).rows;
    const expected = [{ id: 'art_1', seq: 3, tool_use_id: 'call_1', tool_name: 'bash', text: content, bytes: Buffer.byteLength(content), tokens: 1_250, hashed: true, versions: 1 }];

    it('through the pg pool: byte-exact, hashed, referenced by the version', async () => {
      const a = await newSession();
      expect(await commitWith(new CompactionRepository(prisma, pg), a.sessionId, a.tenantId)).toEqual(expect.any(String));
      expect(await stored(a.sessionId)).toEqual(expected);
    });

    it('an artifact deleted between its write and the transaction (another run cleaning unreferenced ones) is written again inside it', async () => {
      const { sessionId, tenantId } = await newSession();
      const racing = {
        pool: {
          query: async (sql: string, params: unknown[]) => {
            const result = await pg.pool.query(sql, params);
            await pg.pool.query('DELETE FROM artifacts WHERE session_id = $1 AND id = $2', [params[0], params[1]]);
            return result;
          },
        },
      } as unknown as PgPoolService;
      expect(await commitWith(new CompactionRepository(prisma, racing), sessionId, tenantId)).toEqual(expect.any(String));
      expect(await stored(sessionId)).toEqual(expected);
    });
  });
});
