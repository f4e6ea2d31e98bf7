import { longSweAgentSession, RunningApp, startWorkerFor } from '@compactor/testing';
import request from 'supertest';
import { jobFinished, startTestApi, TestApi } from '../test-app';

/** The five real SWE-agent runs one after another (~55,000 tokens). */
const LONG = longSweAgentSession();

interface Snapshot {
  id: string;
  kind: string;
  label: string | null;
  version: number;
  compactionJobId: string | null;
  metadata: Record<string, unknown>;
}

/**
 * Snapshots, restore, undo, version diffs, the goal record and the export (SPEC.md "Snapshot",
 * seed 004), through HTTP with a worker process on the real PostgreSQL and Redis.
 */
describe('snapshots, undo, diff, goal and export', () => {
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
  const finished = (jobId: string) => jobFinished(api, key, jobId, worker);
  /** Appends LONG in batches until `compactions` compactions succeeded; returns their job ids in order and the seq reached. */
  const appendUntil = async (id: string, compactions: number, from = 0, onCompacted?: (jobId: string) => Promise<void>) => {
    const jobs: string[] = [];
    let i = from;
    for (; i < LONG.length && jobs.length < compactions; i += 8) {
      const res = await http()
        .post(`/v1/sessions/${id}/messages`)
        .set(auth())
        .send({ model: 'gpt-4o', contextWindow: 16_000, outputReserve: 2_000, policy: 'balanced', format: 'openai', messages: LONG.slice(i, i + 8) })
        .expect(201);
      if (res.body.compaction.scheduled) {
        const job = await finished(res.body.compaction.jobId);
        if (job.status === 'succeeded') {
          jobs.push(job.id);
          await onCompacted?.(job.id);
        }
      }
    }
    return { jobs, next: i };
  };
  const context = async (id: string) => (await http().get(`/v1/sessions/${id}/context?format=canonical`).set(auth()).expect(200)).body;
  const snapshots = async (id: string) => (await http().get(`/v1/sessions/${id}/snapshots`).set(auth()).expect(200)).body.snapshots as Snapshot[];

  it('a snapshot before every compaction and at 80%; undo restores the version before it, later messages stay live; aging never changes an older snapshot', async () => {
    const id = `snap-undo-${Date.now().toString(36)}`;
    // The checkpoints (ids and texts) each compaction left in the context, as they were then.
    const seen = new Map<string, { id: string; text?: string; tokens: number }[]>();
    const { jobs, next } = await appendUntil(id, 2, 0, async (jobId) => {
      const all = (await http().get(`/v1/sessions/${id}/checkpoints`).set(auth()).expect(200)).body.checkpoints;
      seen.set(jobId, all.filter((c: { inContext: boolean }) => c.inContext).map((c: { id: string; text: string; tokens: number }) => ({ id: c.id, text: c.text, tokens: c.tokens })));
    });
    expect(jobs).toHaveLength(2);
    const list = await snapshots(id);
    const pre = list.filter((s) => s.kind === 'pre-compaction');
    expect(pre.map((s) => s.compactionJobId).sort()).toEqual([...jobs].sort());
    expect(list.some((s) => s.kind === 'threshold')).toBe(true);
    const [firstJob, secondJob] = jobs;
    const beforeSecond = pre.find((s) => s.compactionJobId === secondJob)!;
    expect(beforeSecond.version).toBeGreaterThanOrEqual(1);
    const pinned = await context(id); // the head after the second compaction
    // Reliability (seed 004 + the pinned-facts ledger): two compactions in force, the measured share stored with the new checkpoints.
    const session = async () => (await http().get(`/v1/sessions/${id}`).set(auth()).expect(200)).body;
    const twice = await session();
    expect(twice.compactions).toBe(2);
    expect(twice.reliability.factors.compressionPenalty).toBeCloseTo(0.7, 5);
    expect(twice.reliability.factors.modelFactor).toBeGreaterThan(0);
    expect(twice.reliability.factors.contextConfidence).toBeGreaterThan(0);
    expect(twice.reliability.factors.contextConfidence).toBeLessThanOrEqual(1);
    expect(twice.reliability.score).toBeCloseTo(100 * twice.reliability.factors.modelFactor * 0.7 * twice.reliability.factors.contextConfidence, 0);
    const timeline = (await http().get(`/v1/sessions/${id}/checkpoints`).set(auth()).expect(200)).body.checkpoints;
    const used = timeline.filter((c: { inContext: boolean }) => c.inContext);
    expect(used.map((c: { id: string }) => c.id)).toEqual(pinned.checkpoints.map((c: { id: string }) => c.id));
    for (const c of timeline) {
      expect(c.factsSurvived).toBeGreaterThanOrEqual(0);
      expect(c.factsSurvived).toBeLessThanOrEqual(1);
    }

    // The version the second compaction replaced, as it was: its checkpoints are the same rows after later aging.
    const v1 = (await http().get(`/v1/sessions/${id}/versions/0/diff/${beforeSecond.version}`).set(auth()).expect(200)).body;

    // More appends after the snapshot: they must stay live through the undo.
    const later = LONG.slice(next, next + 4);
    const appended = (
      await http().post(`/v1/sessions/${id}/messages`).set(auth()).send({ format: 'openai', messages: later }).expect(201)
    ).body;
    const jobAfter = appended.compaction.scheduled ? await finished(appended.compaction.jobId) : null;

    const undo = (await http().post(`/v1/sessions/${id}/compactions/${secondJob}/undo`).set(auth()).expect(200)).body;
    expect(undo.restoredVersion).toBe(beforeSecond.version);
    expect(undo.version).toBeGreaterThan(pinned.contextVersion);
    // The audit log names the undo, its job and the key that did it.
    const audited = (await http().get('/v1/audit?limit=1').set(auth()).expect(200)).body.entries[0];
    expect(audited).toMatchObject({ action: 'compaction.undone', targetType: 'session', targetId: id, keyId: expect.any(String), data: { jobId: secondJob, restoredVersion: undo.restoredVersion, version: undo.version } });
    const restored = await context(id);
    expect(restored.contextVersion).toBe(undo.version);
    expect((await session()).reliability.factors.compressionPenalty).toBeCloseTo(0.85, 5);
    // Same prefix as the snapshot's version: the diff between them is empty.
    const same = (await http().get(`/v1/sessions/${id}/versions/${beforeSecond.version}/diff/${undo.version}`).set(auth()).expect(200)).body;
    expect(same.messages).toEqual({ masked: [], offloaded: [], summarized: [], compressed: [], dropped: [], restored: [] });
    expect(same.checkpoints).toEqual({ added: [], removed: [] });
    expect(restored.checkpoints.map((c: { id: string }) => c.id)).toEqual(v1.checkpoints.added.map((c: { id: string }) => c.id));
    // Exactly the checkpoints the first compaction left, whatever the second one aged since (aging writes new rows).
    const afterFirst = seen.get(firstJob)!;
    expect(afterFirst.length).toBeGreaterThan(0);
    // …and the second compaction did age one of them.
    expect(timeline.some((c: { agedFrom: string | null }) => afterFirst.some((f) => f.id === c.agedFrom))).toBe(true);
    expect(restored.checkpoints.map((c: { id: string; tokens: number }) => ({ id: c.id, tokens: c.tokens }))).toEqual(afterFirst.map((c) => ({ id: c.id, tokens: c.tokens })));
    const texts = JSON.stringify(restored.messages.filter((m: { tags?: string[] }) => m.tags?.includes('checkpoint')));
    for (const c of afterFirst) expect(texts).toContain(JSON.stringify(c.text!.slice(0, 60)).slice(1, -1));
    // The messages appended after the snapshot are live in the restored context.
    const tail = JSON.stringify(restored.messages.slice(-6));
    for (const m of later) if (typeof m.content === 'string' && m.content.length > 20) expect(tail).toContain(JSON.stringify(m.content).slice(1, 40));
    expect(restored.tokens).toBeLessThanOrEqual(restored.usage.budget);
    // The undo is an event, and the head's history is untouched.
    const exported = (await http().get(`/v1/sessions/${id}/export`).set(auth()).expect(200)).body;
    expect(exported.events.map((e: { type: string }) => e.type)).toEqual(expect.arrayContaining(['snapshot-created', 'snapshot-restored', 'compressed']));
    expect(exported.messages.map((m: { message: unknown }) => m.message)).toEqual([...LONG.slice(0, next), ...later]);
    expect(exported.versions.at(-1)).toMatchObject({ number: undo.version, cause: 'restore' });
    expect(exported.snapshots.length).toBe(list.length + (jobAfter?.status === 'succeeded' ? 1 : 0));
    // Undoing the first compaction goes back to the uncompacted history (version 0's prefix).
    const first = (await http().post(`/v1/sessions/${id}/compactions/${firstJob}/undo`).set(auth()).expect(200)).body;
    expect(first.restoredVersion).toBe(0);
    expect((await context(id)).checkpoints).toEqual([]);
    const none = await session();
    expect(none.compactions).toBe(0);
    expect(none.reliability.factors).toMatchObject({ compressionPenalty: 1, contextConfidence: 1 });
  }, 300_000);

  it('manual snapshot with a label, restore through the API, diff names summarized and masked messages; validation and 404s', async () => {
    const id = `snap-manual-${Date.now().toString(36)}`;
    await http().post(`/v1/sessions/${id}/messages`).set(auth()).send({ model: 'gpt-4o', contextWindow: 16_000, outputReserve: 2_000, format: 'openai', messages: LONG.slice(0, 8) }).expect(201);
    const manual = (await http().post(`/v1/sessions/${id}/snapshots`).set(auth()).send({ label: 'before the fix' }).expect(201)).body as Snapshot;
    expect(manual).toMatchObject({ kind: 'manual', label: 'before the fix', version: 0 });
    const { jobs } = await appendUntil(id, 1, 8);
    expect(jobs).toHaveLength(1);
    const head = await context(id);
    const diff = (await http().get(`/v1/sessions/${id}/versions/0/diff/${head.contextVersion}`).set(auth()).expect(200)).body;
    expect(diff.messages.masked.length + diff.messages.summarized.length).toBeGreaterThan(0);
    for (const s of diff.messages.summarized) expect(head.checkpoints.map((c: { id: string }) => c.id)).toContain(s.checkpointId);
    const restore = (await http().post(`/v1/sessions/${id}/snapshots/${manual.id}/restore`).set(auth()).expect(200)).body;
    expect(restore).toMatchObject({ snapshotId: manual.id, restoredVersion: 0 });
    const back = (await http().get(`/v1/sessions/${id}/versions/${head.contextVersion}/diff/${restore.version}`).set(auth()).expect(200)).body;
    expect(back.messages.restored.length).toBe(diff.messages.masked.length + diff.messages.summarized.length + diff.messages.offloaded.length + diff.messages.compressed.length + diff.messages.dropped.length);

    const bad = await http().post(`/v1/sessions/${id}/snapshots`).set(auth()).send({ label: '' }).expect(400);
    expect(bad.body.error.message).toContain('label');
    expect((await http().post(`/v1/sessions/${id}/snapshots/not-a-uuid/restore`).set(auth()).expect(400)).body.error.message).toContain('snapshotId');
    await http().post(`/v1/sessions/${id}/snapshots/00000000-0000-4000-8000-000000000000/restore`).set(auth()).expect(404);
    expect((await http().get(`/v1/sessions/${id}/versions/x/diff/1`).set(auth()).expect(400)).body.error.message).toMatch(/^a:/);
    await http().get(`/v1/sessions/${id}/versions/0/diff/999`).set(auth()).expect(404);
    expect((await http().get(`/v1/sessions/${id}/snapshots?limit=0`).set(auth()).expect(400)).body.error.message).toContain('limit');
    // Another tenant sees none of it.
    const other = await api.tenantKey();
    await http().get(`/v1/sessions/${id}/snapshots`).set(auth(other)).expect(404);
    await http().post(`/v1/sessions/${id}/snapshots/${manual.id}/restore`).set(auth(other)).expect(404);
    await http().post(`/v1/sessions/${id}/compactions/${jobs[0]}/undo`).set(auth(other)).expect(404);
  }, 300_000);

  it('goal record: PUT puts the goal block in the context at once, markers in assistant output update it, it feeds compaction; locked decisions unlock only by PUT', async () => {
    const id = `goal-${Date.now().toString(36)}`;
    await http().post(`/v1/sessions/${id}/messages`).set(auth()).send({ model: 'gpt-4o', contextWindow: 16_000, outputReserve: 2_000, format: 'openai', messages: LONG.slice(0, 4) }).expect(201);
    const put = (
      await http()
        .put(`/v1/sessions/${id}/goal`)
        .set(auth())
        .send({ goal: 'Fix the YAML dump of nested sequences', decisions: [{ text: 'Keep the public API unchanged', locked: true }], constraints: ['Python 3.8 must keep working'], nextStep: 'write a failing test' })
        .expect(200)
    ).body;
    expect(put.goalBlock.text).toContain('ACTIVE GOAL: Fix the YAML dump of nested sequences');
    let ctx = await context(id);
    const goalText = JSON.stringify(ctx.messages.filter((m: { tags?: string[] }) => m.tags?.includes('goal')));
    expect(goalText).toContain('Keep the public API unchanged');
    expect(goalText).toContain('Python 3.8 must keep working');

    // A goal marker in the assistant's output updates the record (and a later compaction's goal block).
    await http()
      .post(`/v1/sessions/${id}/messages`)
      .set(auth())
      .send({ format: 'openai', messages: [{ role: 'assistant', content: '[CHECKPOINT] Reproduced the bug - completed\n[DECISION] Use safe_dump everywhere - LOCKED\n[NEXT] patch the representer' }] })
      .expect(201);
    const got = (await http().get(`/v1/sessions/${id}/goal`).set(auth()).expect(200)).body;
    expect(got.decisions).toEqual(expect.arrayContaining([{ text: 'Use safe_dump everywhere', locked: true }, { text: 'Keep the public API unchanged', locked: true }]));
    expect(got.checkpoints).toEqual([{ text: 'Reproduced the bug', status: 'completed' }]);
    expect(got.nextStep).toBe('patch the representer');
    // Frozen until a compaction or an explicit update: the block is still the PUT one.
    ctx = await context(id);
    expect(JSON.stringify(ctx.messages)).not.toContain('🔒 Use safe_dump everywhere');

    const { jobs } = await appendUntil(id, 1, 4);
    expect(jobs).toHaveLength(1);
    ctx = await context(id);
    const block = JSON.stringify(ctx.messages.filter((m: { tags?: string[] }) => m.tags?.includes('goal')));
    expect(block).toContain('Use safe_dump everywhere');
    expect(block).toContain('Keep the public API unchanged');

    const pinnedBlock = (await http().post(`/v1/sessions/${id}/snapshots`).set(auth()).send({ label: 'locked' }).expect(201)).body as Snapshot;
    // Unlock by PUT (the only way); bad bodies name the field.
    const unlocked = (await http().put(`/v1/sessions/${id}/goal`).set(auth()).send({ ...got, sessionId: undefined, goalBlock: undefined, decisions: [{ text: 'Use safe_dump everywhere', locked: false }] }).expect(200)).body;
    expect(unlocked.goalBlock.text).not.toContain('Use safe_dump everywhere');
    // The goal block belongs to the version: restoring the snapshot brings the locked decision back into the context.
    await http().post(`/v1/sessions/${id}/snapshots/${pinnedBlock.id}/restore`).set(auth()).expect(200);
    const back = JSON.stringify((await context(id)).messages.filter((m: { tags?: string[] }) => m.tags?.includes('goal')));
    expect(back).toContain('🔒 Use safe_dump everywhere');
    expect((await http().put(`/v1/sessions/${id}/goal`).set(auth()).send({ checkpoints: [{ text: 'x', status: 'done' }] }).expect(400)).body.error.message).toContain('checkpoints[0].status');
    expect((await http().put(`/v1/sessions/${id}/goal`).set(auth()).send({ extra: 1 }).expect(400)).body.error.message).toMatch(/extra|Unrecognized/);
    const events = (await http().get(`/v1/sessions/${id}/export`).set(auth()).expect(200)).body.events.map((e: { type: string }) => e.type);
    expect(events.filter((t: string) => t === 'goal-updated')).toHaveLength(2);
  }, 300_000);
});
