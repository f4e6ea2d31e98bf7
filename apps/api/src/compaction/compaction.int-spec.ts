import { CanonicalMessage, isPresetImplemented, PRESET_NAMES, providerValidityProblems } from '@compactor/compaction';
import { longSweAgentSession, pollUntil, RunningApp, startWorkerFor } from '@compactor/testing';
import { PrismaService } from '@compactor/persistence';
import request from 'supertest';
import { startTestApi, TestApi } from '../test-app';

/**
 * A long real session: the five SWE-agent runs of testdata/ one after another, as one agent
 * taking task after task (~55,000 tokens; the system prompt of the first run only).
 */
const LONG = longSweAgentSession();
const PRESETS = PRESET_NAMES.filter((p) => isPresetImplemented(p));

/** An OpenAI-shape call of seed 001's watermark tool and its result. */
const watermarkCall = (n: number) => [
  { role: 'assistant', content: null, tool_calls: [{ id: `call_ckpt_${n}`, type: 'function', function: { name: 'compress_to_checkpoint', arguments: '{"summary":"task progress saved"}' } }] },
  { role: 'tool', tool_call_id: `call_ckpt_${n}`, content: 'Checkpoint saved.' },
];

interface JobView {
  id: string;
  status: string;
  reason: string | null;
  tokensBefore: number | null;
  tokensAfter: number | null;
  resultVersion: number | null;
  sessionId: string;
}

/**
 * The API and a worker process (the built one, as `npm start` runs it) on one database and one
 * queue prefix: appends that cross the threshold compact in the background, and the context
 * that comes back reflects it while the history stays exactly as appended.
 */
describe('compaction through HTTP, with a worker process', () => {
  let api: TestApi;
  let worker: RunningApp;
  let key: string;

  beforeAll(async () => {
    api = await startTestApi();
    key = await api.tenantKey();
    worker = await startWorkerFor(api.config);
  }, 60_000);
  afterAll(async () => {
    await worker?.stop();
    await api?.close();
  });
  const http = () => request(api.app.getHttpServer());
  const auth = (k = key) => ({ Authorization: `Bearer ${k}` });
  const job = async (id: string) => (await http().get(`/v1/jobs/${id}`).set(auth()).expect(200)).body as JobView;
  const finished = (id: string) =>
    pollUntil(
      async () => {
        const j = await job(id);
        return ['succeeded', 'skipped', 'failed'].includes(j.status) ? j : undefined;
      },
      { timeoutMs: 60_000, what: `job ${id} to finish (worker output: ${worker.output().slice(-2000)})` },
    );

  it.each(PRESETS)('%s: a long real session appended in batches compacts in the background; context under budget and valid, history unchanged', async (preset) => {
    const id = `long-${preset}`;
    const jobs: JobView[] = [];
    for (let i = 0; i < LONG.length; i += 8) {
      const batch = LONG.slice(i, i + 8);
      // Seed 001's agent marks checkpoints itself: every fourth batch ends with a call to the watermark tool.
      if (preset === 'watermark' && i % 32 === 24 && ['tool', 'user'].includes(String(batch.at(-1)?.role))) batch.push(...watermarkCall(i));
      const res = await http()
        .post(`/v1/sessions/${id}/messages`)
        .set(auth())
        .send({ model: 'gpt-4o', contextWindow: 32_000, outputReserve: 4_000, policy: preset, format: 'openai', messages: batch })
        .expect(201);
      // Waiting for each scheduled run keeps the test deterministic; appends during a run are covered below.
      if (res.body.compaction.scheduled) jobs.push(await finished(res.body.compaction.jobId));
    }
    expect(jobs.filter((j) => j.status === 'succeeded').length).toBeGreaterThan(0);
    for (const j of jobs) {
      expect(j.sessionId).toBe(id);
      if (j.status === 'failed') throw new Error(`compaction failed: ${j.reason}`);
      if (j.status === 'succeeded') expect(j.tokensAfter!).toBeLessThan(j.tokensBefore!);
    }
    // Each committed compaction's `compressed` event says what it did in numbers: tokens, cost, and how much of the prompt prefix it kept.
    const committed = new Map(jobs.filter((j) => j.status === 'succeeded').map((j) => [j.id, j]));
    const compressed = (await api.app.get(PrismaService).event.findMany({ where: { session: { externalId: id }, type: 'compressed' }, orderBy: { id: 'asc' } }))
      .map((e) => e.data as Record<string, number | boolean | string>)
      .filter((d) => committed.has(String(d.jobId)));
    expect(new Set(compressed.map((d) => d.jobId)).size).toBe(committed.size);
    for (const data of compressed) {
      const job = committed.get(String(data.jobId));
      expect(data).toMatchObject({ tokensBefore: job?.tokensBefore, tokensAfter: job?.tokensAfter, costUsd: 0, prefixChanged: expect.any(Boolean) });
      expect(data.sharedPrefixMessages as number).toBeLessThanOrEqual(data.contextMessagesBefore as number);
    }
    // No goal was set: once balanced summarized the task statement (the first user message), its opening lines are in the goal block.
    if (preset === 'balanced') {
      const goal = (await http().get(`/v1/sessions/${id}/goal`).set(auth()).expect(200)).body;
      const firstTask = String((LONG.find((m) => m.role === 'user') as { content: string }).content).split('\n')[0].slice(0, 40);
      expect(goal.goalBlock?.text).toContain("TASK (the session's first request):");
      expect(goal.goalBlock?.text).toContain(firstTask);
    }
        // The facts ledger is kept up to date run by run, through the last message a run loaded.
    const ledger = await api.app.get(PrismaService).sessionLedger.findFirst({ where: { session: { externalId: id } } });
    expect(ledger?.throughSeq).toBeGreaterThan(0);
    expect((ledger?.state as { entries: unknown[] }).entries.length).toBeGreaterThan(10);

    for (const format of ['anthropic', 'openai', 'canonical'] as const) {
      const ctx = (await http().get(`/v1/sessions/${id}/context?format=${format}`).set(auth()).expect(200)).body;
      expect(ctx.contextVersion).toBeGreaterThanOrEqual(1);
      expect(ctx.tokens).toBeLessThanOrEqual(ctx.usage.budget);
      if (format === 'canonical') expect(providerValidityProblems(ctx.messages as CanonicalMessage[])).toEqual([]);
      if (format === 'anthropic') {
        // Anthropic's order: the user's turn first, then strictly alternating turns.
        const roles = (ctx.messages as { role: string }[]).map((m) => m.role);
        expect(roles[0]).toBe('user');
        roles.forEach((r, k) => k > 0 && expect(`${k}:${r}`).not.toBe(`${k}:${roles[k - 1]}`));
      }
    }

    // Guarantee 1: the full history is exactly what was appended.
    const history: unknown[] = [];
    for (let after = 0; ; ) {
      const page = (await http().get(`/v1/sessions/${id}/messages?after=${after}&limit=1000`).set(auth()).expect(200)).body;
      history.push(...page.messages.map((m: { message: unknown }) => m.message));
      if (page.messages.length < 1000) break;
      after = page.messages.at(-1).seq;
    }
    expect(history.filter((m) => !JSON.stringify(m).includes('call_ckpt_'))).toEqual(LONG);
  }, 300_000);

  it('offloaded tool output: GET /v1/artifacts/:id returns it byte-exact, to its tenant only; the read tool is published', async () => {
    const id = 'offload-artifacts';
    // offload-compact on a window where the run offloads but need not summarize.
    for (let i = 0; i < LONG.length; i += 8) {
      const res = await http()
        .post(`/v1/sessions/${id}/messages`)
        .set(auth())
        .send({ model: 'gpt-4o', contextWindow: 48_000, policy: { preset: 'offload-compact', overrides: { offloadMinTokens: 200, triggerThreshold: 0 } }, format: 'openai', messages: LONG.slice(i, i + 8) })
        .expect(201);
      if (res.body.compaction.scheduled) expect((await finished(res.body.compaction.jobId)).status).not.toBe('failed');
    }
    const ctx = (await http().get(`/v1/sessions/${id}/context?format=canonical`).set(auth()).expect(200)).body;
    const ids = [...new Set([...JSON.stringify(ctx.messages).matchAll(/Stored as artifact (art_[0-9a-f]+)/g)].map((m) => m[1]))];
    expect(ids.length).toBeGreaterThan(0);
    for (const artifactId of ids.slice(0, 5)) {
      const res = await http().get(`/v1/artifacts/${artifactId}`).set(auth()).buffer(true).parse((r, cb) => {
        const chunks: Buffer[] = [];
        r.on('data', (c: Buffer) => chunks.push(c));
        r.on('end', () => cb(null, Buffer.concat(chunks)));
      }).expect(200);
      const seq = Number(res.headers['x-compactor-seq']);
      const page = (await http().get(`/v1/sessions/${id}/messages?after=${seq - 1}&limit=1`).set(auth()).expect(200)).body.messages[0];
      const original = page.blocks.find((b: { type: string }) => b.type === 'tool_result').content;
      expect((res.body as Buffer).equals(Buffer.from(typeof original === 'string' ? original : JSON.stringify(original), 'utf8'))).toBe(true);
      const part = await http().get(`/v1/artifacts/${artifactId}?offset=0&limit=10`).set(auth()).expect(200);
      expect(part.text).toBe((typeof original === 'string' ? original : JSON.stringify(original)).slice(0, 10));
    }
    await http().get(`/v1/artifacts/${ids[0]}`).set(auth(await api.tenantKey())).expect(404);
    const tool = (await http().get('/v1/tools/read-artifact').set(auth()).expect(200)).body;
    expect(tool.anthropic.name).toBe('compactor_read_artifact');
    expect(JSON.stringify(ctx.messages)).toContain('compactor_read_artifact');
  }, 180_000);

  it("Guarantee 4: over budget with nothing compacted yet, the read falls back deterministically and says so", async () => {
    const id = 'fallback-1';
    // watermark without any watermark call: no run shrinks it, so only the read-time fallback keeps it in budget.
    await http()
      .post(`/v1/sessions/${id}/messages`)
      .set(auth())
      .send({ model: 'gpt-4o', contextWindow: 8_000, outputReserve: 1_000, policy: 'watermark', format: 'openai', messages: LONG.slice(43, 79) })
      .expect(201);
    const read = async () => (await http().get(`/v1/sessions/${id}/context?format=canonical`).set(auth()).expect(200)).body;
    const ctx = await read();
    expect(ctx.fallback).toMatch(/^Fallback: /);
    expect(ctx.tokens).toBeLessThanOrEqual(ctx.usage.budget);
    expect(providerValidityProblems(ctx.messages as CanonicalMessage[])).toEqual([]);
    expect(ctx.messages.at(-1)).toEqual((await read()).messages.at(-1));
  });

  it('Guarantee 3: when the protected part alone exceeds the budget, the read is a 422 budget_too_small with an event', async () => {
    const id = 'too-small-1';
    const task = `Refactor the parser. ${'Keep every public name stable and document each change. '.repeat(300)}`;
    await http()
      .post(`/v1/sessions/${id}/messages`)
      .set(auth())
      .send({ model: 'gpt-4o', contextWindow: 2_048, outputReserve: 256, messages: [{ role: 'user', content: task }] })
      .expect(201);
    const res = await http().get(`/v1/sessions/${id}/context`).set(auth()).expect(422);
    expect(res.body.error.code).toBe('budget_too_small');
    const prisma = api.app.get(PrismaService);
    const events = await prisma.event.findMany({ where: { session: { externalId: id }, type: 'budget-too-small' } });
    expect(events).toHaveLength(1);
  });

  it('seed 000 at ingest: factor3 condenses a long file read in the context at once; the history keeps it whole', async () => {
    const id = 'factor3-ingest';
    const file = Array.from({ length: 700 }, (_, i) => (i % 50 === 0 ? `def handler_${i}(request, session):` : `    value_${i} = compute(request, ${i})  # line ${i + 1}`)).join('\n');
    const messages = [
      { role: 'user', content: 'Find where handler_350 computes its value.' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_read_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"src/handlers.py"}' } }] },
      { role: 'tool', tool_call_id: 'call_read_1', content: file },
    ];
    await http().post(`/v1/sessions/${id}/messages`).set(auth()).send({ model: 'gpt-4o', policy: 'factor3', format: 'openai', messages }).expect(201);
    const ctx = (await http().get(`/v1/sessions/${id}/context?format=openai`).set(auth()).expect(200)).body;
    const tool = ctx.messages.find((m: { role: string }) => m.role === 'tool');
    expect(tool.tool_call_id).toBe('call_read_1');
    expect(tool.content.length).toBeLessThan(file.length / 2);
    expect(tool.content).toContain('handler_350');
    const history = (await http().get(`/v1/sessions/${id}/messages`).set(auth()).expect(200)).body.messages;
    expect(history[2].message).toEqual(messages[2]);
  });

  it('balanced at ingest: a very large tool result is offloaded by an ingest run below the threshold; the artifact is byte-exact', async () => {
    const id = 'balanced-ingest';
    const log = Array.from({ length: 3_000 }, (_, i) => `2026-11-23T10:${String(i % 60).padStart(2, '0')}:00Z worker-${i % 7} processed batch ${i} in ${i * 3} ms`).join('\n');
    const messages = [
      { role: 'user', content: 'Why is the worker slow? Check the logs.' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_logs_1', type: 'function', function: { name: 'bash', arguments: '{"command":"cat worker.log"}' } }] },
      { role: 'tool', tool_call_id: 'call_logs_1', content: log },
    ];
    const res = await http().post(`/v1/sessions/${id}/messages`).set(auth()).send({ model: 'gpt-4o', format: 'openai', messages }).expect(201);
    expect(res.body.usage.contextTokens).toBeLessThan(res.body.usage.threshold);
    expect(res.body.compaction.scheduled).toBe(true);
    const done = await finished(res.body.compaction.jobId);
    expect(done).toMatchObject({ status: 'succeeded', trigger: 'ingest', steps: ['offload'] });
    const ctx = (await http().get(`/v1/sessions/${id}/context?format=openai`).set(auth()).expect(200)).body;
    const tool = ctx.messages.find((m: { role: string }) => m.role === 'tool');
    const artifactId = /Stored as artifact (art_[0-9a-f]+)/.exec(tool.content)?.[1];
    expect(artifactId).toBeDefined();
    const artifact = await http().get(`/v1/artifacts/${artifactId}`).set(auth()).expect(200);
    expect(artifact.text).toBe(log);
    expect(ctx.tokens).toBeLessThan(res.body.usage.contextTokens / 5);
  }, 120_000);

  it('Guarantee 8: the same appends in the same batches give byte-identical contexts with the local summarizer', async () => {
    const bodies: string[] = [];
    for (const id of ['same-a', 'same-b']) {
      for (let i = 0; i < 120; i += 8) {
        const res = await http()
          .post(`/v1/sessions/${id}/messages`)
          .set(auth())
          .send({ model: 'gpt-4o', contextWindow: 24_000, outputReserve: 2_000, format: 'openai', messages: LONG.slice(i, i + 8) })
          .expect(201);
        if (res.body.compaction.scheduled) await finished(res.body.compaction.jobId);
      }
      const ctx = (await http().get(`/v1/sessions/${id}/context?format=anthropic`).set(auth()).expect(200)).body;
      expect(ctx.contextVersion).toBeGreaterThanOrEqual(1);
      bodies.push(JSON.stringify({ ...ctx, sessionId: undefined }));
    }
    expect(bodies[0]).toBe(bodies[1]);
  }, 180_000);

  it('locked decisions outlive compaction: the goal block of the version holds them, right after the system prompt', async () => {
    const id = 'goal-block-1';
    const session = [
      LONG[0],
      LONG[1],
      { role: 'assistant', content: '[GOAL] Capture the flag of the web challenge\n[DECISION] Use curl, not a browser, for every request - LOCKED' },
      { role: 'user', content: 'Agreed, go on.' },
      ...LONG.slice(2),
    ];
    let compacted = 0;
    for (let i = 0; i < session.length; i += 8) {
      const res = await http()
        .post(`/v1/sessions/${id}/messages`)
        .set(auth())
        .send({ model: 'gpt-4o', contextWindow: 16_000, outputReserve: 2_000, format: 'openai', messages: session.slice(i, i + 8) })
        .expect(201);
      if (res.body.compaction.scheduled && (await finished(res.body.compaction.jobId)).status === 'succeeded') compacted += 1;
    }
    expect(compacted).toBeGreaterThan(0);
    const ctx = (await http().get(`/v1/sessions/${id}/context?format=canonical`).set(auth()).expect(200)).body;
    const goal = (ctx.messages as CanonicalMessage[]).find((m) => m.tags?.includes('goal'));
    expect(goal?.role).toBe('system');
    const text = JSON.stringify(goal?.blocks);
    expect(text).toContain('Use curl, not a browser, for every request');
    expect(text).toContain('Capture the flag of the web challenge');
    const anthropic = (await http().get(`/v1/sessions/${id}/context?format=anthropic`).set(auth()).expect(200)).body;
    expect(JSON.stringify(anthropic.system)).toContain('LOCKED DECISIONS');
    expect(anthropic.tokens).toBeLessThanOrEqual(anthropic.usage.budget);
  }, 180_000);

  it('manual compaction: queued, reported by GET /v1/jobs/:id, invisible to another tenant', async () => {
    const id = 'manual-1';
    await http()
      .post(`/v1/sessions/${id}/messages`)
      .set(auth())
      .send({ model: 'gpt-4o', contextWindow: 128_000, format: 'openai', messages: LONG.slice(0, 40) })
      .expect(201);
    const res = await http().post(`/v1/sessions/${id}/compact`).set(auth()).send({}).expect(202);
    expect(res.body.job).toMatchObject({ sessionId: id, trigger: 'manual', dryRun: false });
    const done = await finished(res.body.job.id);
    expect(['succeeded', 'skipped']).toContain(done.status);

    const other = await api.tenantKey();
    await http().get(`/v1/jobs/${res.body.job.id}`).set(auth(other)).expect(404);
    await http().get('/v1/jobs/not-a-uuid').set(auth()).expect(400);
  }, 120_000);

  it('dry run returns the would-be context and its savings, and changes nothing', async () => {
    const id = 'dry-run-1';
    // Under the threshold (no background run), but summarizing from 10% of the budget on.
    const appended = await http()
      .post(`/v1/sessions/${id}/messages`)
      .set(auth())
      .send({ model: 'gpt-4o', contextWindow: 32_000, policy: { preset: 'balanced', overrides: { summarizeAbove: 0.1, summarizeDownTo: 0.1 } }, format: 'openai', messages: LONG.slice(0, 30) })
      .expect(201);
    expect(appended.body.compaction.scheduled).toBe(false);
    const before = (await http().get(`/v1/sessions/${id}/context?format=canonical`).set(auth()).expect(200)).body;
    const res = await http().post(`/v1/sessions/${id}/compact`).set(auth()).send({ dryRun: true, format: 'canonical' }).expect(202);
    expect(res.body.job).toMatchObject({ dryRun: true, status: 'succeeded' });
    expect(res.body.savedTokens).toBeGreaterThan(0);
    expect(res.body.context.tokens).toBe(before.tokens - res.body.savedTokens);
    expect(providerValidityProblems(res.body.context.messages as CanonicalMessage[])).toEqual([]);
    // The facts ledger of the dry run: what its checkpoint would keep, append and leave out, and what the context would no longer hold.
    const ledger = res.body.ledger;
    expect(ledger.listed).toBe(ledger.kept + ledger.repaired + ledger.dropped);
    expect(ledger.listed).toBeGreaterThan(0);
    expect(ledger.check.total).toBeGreaterThanOrEqual(ledger.check.survived);
    for (const e of [...ledger.repairedEntries, ...ledger.check.missing]) expect(e).toEqual({ kind: expect.any(String), text: expect.any(String), seq: expect.any(Number) });
    // Appended entries are in the would-be context as sent.
    const sent = JSON.stringify(res.body.context.messages).toLowerCase();
    for (const e of ledger.repairedEntries) expect(sent).toContain(JSON.stringify(e.text.toLowerCase()).slice(1, 30));
    const after = (await http().get(`/v1/sessions/${id}/context?format=canonical`).set(auth()).expect(200)).body;
    expect(after).toEqual(before);
    await http().post(`/v1/sessions/${id}/compact`).set(auth()).send({ dryRun: 'yes' }).expect(400);
  }, 120_000);

  it('seed 001 over the API: POST watermarks advances the watermark, compacts tool blocks before it, and never moves it back', async () => {
    const id = 'watermark-api';
    // Two SWE-agent runs with function calls (the first run of LONG has none).
    const messages = LONG.slice(43, 79);
    expect(messages[0].role).toBe('user');
    const appended = await http().post(`/v1/sessions/${id}/messages`).set(auth()).send({ model: 'gpt-4o', contextWindow: 32_000, policy: 'watermark', format: 'openai', messages }).expect(201);
    expect(appended.body.compaction.scheduled).toBe(false);
    const before = (await http().get(`/v1/sessions/${id}/context?format=canonical`).set(auth()).expect(200)).body;
    const res = await http().post(`/v1/sessions/${id}/watermarks`).set(auth()).send({ seq: 30 }).expect(200);
    expect(res.body).toMatchObject({ advanced: true, watermarkSeq: 30 });
    const done = await finished(res.body.jobId);
    expect(done).toMatchObject({ status: 'succeeded' });
    const after = (await http().get(`/v1/sessions/${id}/context?format=canonical`).set(auth()).expect(200)).body;
    expect(after.tokens).toBeLessThan(before.tokens);
    expect(providerValidityProblems(after.messages as CanonicalMessage[])).toEqual([]);

    const back = await http().post(`/v1/sessions/${id}/watermarks`).set(auth()).send({ seq: 20 }).expect(200);
    expect(back.body).toMatchObject({ advanced: false, reason: 'not-after-current', watermarkSeq: 30, jobId: null });
    const beyond = await http().post(`/v1/sessions/${id}/watermarks`).set(auth()).send({ seq: 37 }).expect(400);
    expect(beyond.body.error.message).toContain('seq');
  }, 120_000);

  it('rejects an unknown or mistyped policy override, naming it', async () => {
    const res = await http()
      .post('/v1/sessions')
      .set(auth())
      .send({ id: 'bad-policy', policy: { preset: 'balanced', overrides: { maskKeepLatestTurn: 3, summarizeAbove: 'high' } } })
      .expect(400);
    expect(res.body.error.message).toContain('policy.overrides.maskKeepLatestTurn');
    expect(res.body.error.message).toContain('policy.overrides.summarizeAbove');
  });
});
