import { CompactionRepository, JobTakenOver, PgPoolService, PrismaService } from '@compactor/persistence';
import { longSweAgentSession, pollUntil, RunningApp, startWorkerFor } from '@compactor/testing';
import request from 'supertest';
import { startTestApi, TestApi } from '../test-app';

const LONG = longSweAgentSession();
const FINISHED = ['succeeded', 'skipped', 'failed'];

/**
 * A compaction job's row always ends in the state BullMQ ended it in (docs/reliability.md): a
 * deduplicated trigger leaves no queued row, a replayed answer never names a job that does not
 * exist, and a run that was taken over writes nothing more.
 */
describe('compaction job rows and BullMQ', () => {
  let api: TestApi;
  let worker: RunningApp | undefined;
  let key: string;

  beforeAll(async () => {
    api = await startTestApi();
    key = await api.tenantKey();
  }, 60_000);
  afterAll(async () => {
    await worker?.stop();
    await api?.close();
    // The built worker drains its running jobs for up to SHUTDOWN_TIMEOUT_MS (30 s) before it exits.
  }, 60_000);
  const http = () => request(api.app.getHttpServer());
  const auth = () => ({ Authorization: `Bearer ${key}` });
  const append = (id: string, messages: unknown[], idempotencyKey?: string) =>
    http()
      .post(`/v1/sessions/${id}/messages`)
      .set({ ...auth(), ...(idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {}) })
      .send({ model: 'gpt-4o', contextWindow: 24_000, outputReserve: 2_000, format: 'openai', messages })
      .expect(201);
  const prisma = () => api.app.get(PrismaService);
  const jobsOf = async (externalId: string) => {
    const session = await prisma().session.findFirstOrThrow({ where: { externalId }, select: { id: true } });
    return prisma().compactionJob.findMany({ where: { sessionId: session.id }, orderBy: { createdAt: 'asc' }, select: { id: true, status: true, reason: true } });
  };
  /** Appends until the threshold is crossed; returns the offset reached and the scheduled job's id. */
  const appendUntilScheduled = async (id: string, from = 0, idempotencyKey = (i: number) => `${id}-turn-${i}`) => {
    for (let i = from; i < LONG.length; i += 6) {
      const res = await append(id, LONG.slice(i, i + 6), idempotencyKey(i));
      if (res.body.compaction.jobId) return { next: i + 6, jobId: res.body.compaction.jobId as string, key: idempotencyKey(i) };
    }
    throw new Error('never scheduled');
  };

  it('a trigger folded into a waiting job is skipped naming it, a replay names a job that exists, and every row finishes once a worker runs', async () => {
    const folded = `dedup-${Date.now()}`;
    // No worker yet: the first trigger waits in BullMQ, the next ones fold into it.
    const first = await appendUntilScheduled(folded);
    const later = await append(folded, LONG.slice(first.next, first.next + 6));
    expect(later.body.compaction.scheduled).toBe(true);
    expect(await jobsOf(folded)).toEqual([
      { id: first.jobId, status: 'queued', reason: null },
      { id: later.body.compaction.jobId, status: 'skipped', reason: `superseded-by:${first.jobId}` },
    ]);

    // An API killed between the append's commit and the job's record: the replay's job id must exist.
    const replayed = `replay-${Date.now()}`;
    const scheduled = await appendUntilScheduled(replayed);
    await prisma().compactionJob.delete({ where: { id: scheduled.jobId } });
    const again = await append(replayed, LONG.slice(scheduled.next - 6, scheduled.next), scheduled.key);
    expect(again.body.compaction.jobId).toBe(scheduled.jobId);
    await http().get(`/v1/jobs/${scheduled.jobId}`).set(auth()).expect(200);

    worker = await startWorkerFor(api.config);
    for (const [session, jobId] of [[folded, first.jobId], [replayed, scheduled.jobId]]) {
      const job = await pollUntil(
        async () => {
          const r = await http().get(`/v1/jobs/${jobId}`).set(auth()).expect(200);
          return FINISHED.includes(r.body.status) ? r.body : undefined;
        },
        { timeoutMs: 60_000, what: `job ${jobId} to finish (worker: ${worker.output().slice(-1500)})` },
      );
      expect(job.status).toBe('succeeded');
      expect((await jobsOf(session)).filter((j) => j.status === 'queued' || j.status === 'running')).toEqual([]);
    }
  }, 120_000);

  it('a run that was taken over (a stalled worker) can neither commit nor finish the job; the run that took it over can', async () => {
    const id = `takeover-${Date.now()}`;
    await append(id, LONG.slice(0, 4));
    const session = await prisma().session.findFirstOrThrow({ where: { externalId: id } });
    const jobs = new CompactionRepository(prisma(), api.app.get(PgPoolService));
    const jobId = await jobs.createJob({ sessionId: session.id, tenantId: session.tenantId, trigger: 'manual', policy: {} });
    const stalled = await jobs.startJob(jobId);
    const takeover = await jobs.startJob(jobId);
    expect([stalled?.attempts, takeover?.attempts]).toEqual([1, 2]);
    expect(await jobs.ownsJob(jobId, 1)).toBe(false);
    const commit = (attempt: number) =>
      jobs.commit({ sessionId: session.id, tenantId: session.tenantId, jobId, attempt, baseVersionId: session.headVersionId, coversThroughSeq: 0, treatments: {}, checkpoints: [], prefixTokens: 0, loadedThroughSeq: session.lastSeq, budget: 20_000, threshold: 15_000, events: [] });
    await expect(commit(1)).rejects.toBeInstanceOf(JobTakenOver);
    expect(await jobs.finishJob(jobId, { status: 'succeeded' }, 1)).toBe(false);
    expect(await commit(2)).toEqual(expect.any(String));
    expect(await jobs.finishJob(jobId, { status: 'succeeded' }, 2)).toBe(true);
    expect((await prisma().compactionJob.findUniqueOrThrow({ where: { id: jobId } })).status).toBe('succeeded');
  });
});
