import { CanonicalMessage, providerValidityProblems } from '@compactor/compaction';
import { FakeLlm, InProcessTestStack, longSweAgentSession, pollUntil, startTestStack } from '@compactor/testing';
import { PrismaService } from '@compactor/persistence';
import request from 'supertest';
import { startTestApi, TestApi } from '../test-app';

const LONG = longSweAgentSession();

/**
 * Guarantee 6 and the one-run-per-session rule, with the summarizer held mid-call: the worker
 * uses the `openai` provider against the fake upstream, whose first answer waits until the test
 * releases it. Appends made meanwhile stay live, their triggers fold into one more run, and two
 * runs of one session never overlap.
 */
describe('appends while a compaction runs', () => {
  let stack: InProcessTestStack<TestApi>;
  let api: TestApi;
  let fake: FakeLlm;
  let key: string;

  beforeAll(async () => {
    // No retry window: an LLM outage fails the run at once (the retry is reliability/job-failures.int-spec's).
    stack = await startTestStack({ label: 'concurrency', api: () => startTestApi(), worker: { COMPACTION_LLM_RETRY_WINDOW_MS: '0' } });
    ({ api, fake, key } = stack);
  }, 60_000);
  afterAll(() => stack?.close());
  const http = () => request(api.app.getHttpServer());
  const auth = () => ({ Authorization: `Bearer ${key}` });
  const job = async (id: string) => (await http().get(`/v1/jobs/${id}`).set(auth()).expect(200)).body;

  it('messages appended during a run stay live; the triggers fold into one more run; runs never overlap', async () => {
    const id = 'concurrent-1';
    let release!: () => void;
    fake.script([{ until: new Promise<void>((resolve) => (release = resolve)) }]);
    const append = (messages: unknown[]) =>
      http()
        .post(`/v1/sessions/${id}/messages`)
        .set(auth())
        .send({ model: 'gpt-4o', contextWindow: 24_000, outputReserve: 2_000, policy: { preset: 'balanced', overrides: { summarizeAbove: 0, summarizeDownTo: 0 } }, format: 'openai', messages })
        .expect(201);

    // Append until the threshold is crossed: the first run starts and its LLM call is held.
    let i = 0;
    let firstJob: string | undefined;
    while (!firstJob) {
      const res = await append(LONG.slice(i, i + 6));
      i += 6;
      firstJob = res.body.compaction.jobId;
    }
    await fake.waitForRequests(1);
    expect((await job(firstJob)).status).toBe('running');

    // Meanwhile: more appends, each over the threshold.
    const duringRun: string[] = [];
    let lastSeqDuringRun = 0;
    let firstSeqDuringRun = 0;
    for (let k = 0; k < 3; k += 1) {
      const res = await append(LONG.slice(i, i + 6));
      i += 6;
      expect(res.body.compaction.scheduled).toBe(true);
      duringRun.push(res.body.compaction.jobId);
      lastSeqDuringRun = res.body.lastSeq;
      firstSeqDuringRun ||= res.body.firstSeq;
    }
    expect((await job(firstJob)).status).toBe('running');
    release();

    const first = await pollUntil(async () => ((await job(firstJob!)).status === 'succeeded' ? job(firstJob!) : undefined), { timeoutMs: 60_000, what: 'the held run to finish' });
    expect(first.status).toBe('succeeded');

    // Every later trigger is answered: by the one extra run, or folded into it.
    const prisma = api.app.get(PrismaService);
    const session = await prisma.session.findFirstOrThrow({ where: { externalId: id }, select: { id: true } });
    const jobs = await pollUntil(
      async () => {
        const rows = await prisma.compactionJob.findMany({ where: { sessionId: session.id }, orderBy: { createdAt: 'asc' } });
        return rows.every((r) => ['succeeded', 'skipped', 'failed'].includes(r.status)) ? rows : undefined;
      },
      { timeoutMs: 60_000, what: 'every job of the session to finish' },
    );
    const ran = jobs.filter((j) => j.startedAt !== null);
    const folded = jobs.filter((j) => j.startedAt === null);
    expect(ran.length).toBeGreaterThanOrEqual(2);
    expect(ran.length).toBeLessThan(jobs.length); // some triggers were folded, not each run on its own
    for (const j of folded) expect(j.reason).toMatch(/^superseded-by:/);
    for (const j of ran) expect(j.status).not.toBe('failed');
    for (const t of duringRun) expect(jobs.map((j) => j.id)).toContain(t);
    // One run at a time per session.
    const spans = ran.map((j) => [j.startedAt!.getTime(), j.finishedAt!.getTime()]).sort((a, b) => a[0] - b[0]);
    for (let k = 1; k < spans.length; k += 1) expect(spans[k][0]).toBeGreaterThanOrEqual(spans[k - 1][1]);

    // Guarantee 6: the held run covered a fixed range that ends before the messages appended meanwhile.
    const v1 = await prisma.contextVersion.findFirstOrThrow({ where: { compactionJobId: firstJob }, select: { coversThroughSeq: true } });
    expect(v1.coversThroughSeq).toBeLessThan(firstSeqDuringRun);
    // …and the latest of them (not a call still waiting for its result) is in the context as appended.
    const ctx = (await http().get(`/v1/sessions/${id}/context?format=canonical`).set(auth()).expect(200)).body;
    expect(providerValidityProblems(ctx.messages as CanonicalMessage[])).toEqual([]);
    const appended = (await http().get(`/v1/sessions/${id}/messages?after=${firstSeqDuringRun - 1}&limit=100`).set(auth()).expect(200)).body.messages;
    expect(appended.at(-1).seq).toBe(lastSeqDuringRun);
    const tail = [...appended].reverse().find((m: { role: string }) => m.role === 'tool');
    const result = tail.blocks[0] as { toolUseId: string; content: unknown };
    const inContext = (ctx.messages as CanonicalMessage[]).flatMap((m) => m.blocks).find((b) => b.type === 'tool_result' && b.toolUseId === result.toolUseId);
    expect(inContext).toMatchObject({ toolUseId: result.toolUseId, content: result.content });
    expect(ctx.tokens).toBeLessThanOrEqual(ctx.usage.budget);
  }, 180_000);

  it('an LLM that keeps failing, with no retry window: 3 attempts inside the provider, the job fails with the error recorded, the old head stays', async () => {
    const id = 'llm-down-1';
    const append = (messages: unknown[]) =>
      http()
        .post(`/v1/sessions/${id}/messages`)
        .set(auth())
        .send({ model: 'gpt-4o', contextWindow: 24_000, outputReserve: 2_000, policy: { preset: 'balanced', overrides: { summarizeAbove: 0, summarizeDownTo: 0 } }, format: 'openai', messages })
        .expect(201);
    let i = 0;
    let jobId: string | undefined;
    const before = fake.requests.length;
    fake.script([{ status: 500 }, { status: 500 }, { status: 500 }]);
    while (!jobId) {
      const res = await append(LONG.slice(i, i + 6));
      i += 6;
      jobId = res.body.compaction.jobId;
    }
    const failed = await pollUntil(async () => {
      const j = await job(jobId!);
      return ['succeeded', 'skipped', 'failed'].includes(j.status) ? j : undefined;
    }, { timeoutMs: 60_000, what: 'the job to fail' });
    expect(failed).toMatchObject({ status: 'failed', error: 'llm-server', llmCalls: 3, resultVersion: null });
    expect(fake.requests.length - before).toBe(3);
    const ctx = (await http().get(`/v1/sessions/${id}/context`).set(auth()).expect(200)).body;
    expect(ctx.contextVersion).toBeNull();
    const prisma = api.app.get(PrismaService);
    const events = await prisma.event.findMany({ where: { session: { externalId: id }, type: 'compression-error' } });
    expect(events.map((e) => e.line)).toEqual([expect.stringContaining('Summarizer failed (server) after 3 attempt(s)')]);
  }, 120_000);
});
