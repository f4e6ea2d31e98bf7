import { FaultStack, RunningApp, startFaultStack } from '@compactor/testing';
import { randomBytes } from 'node:crypto';
import { example } from '../examples/append-context-compact-undo';
import { Compactor, CompactorApiError } from './index';

/**
 * The README's example (append → context → compact → undo) run as written against the built API
 * and worker processes, as `npm start` runs them, on a test database of their own.
 */
describe('@compactor/client against the real API', () => {
  let stack: FaultStack;
  let baseUrl: string;
  let worker: RunningApp;

  beforeAll(async () => {
    stack = await startFaultStack('client_ts');
    baseUrl = (await stack.startApi()).url;
    worker = await stack.startWorker();
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
  }, 60_000);

  it('the README example: append → context → compact → undo', async () => {
    const sessionId = `client-ts-${randomBytes(4).toString('hex')}`;
    const lines: string[] = [];
    const log = jest.spyOn(console, 'log').mockImplementation((line: string) => void lines.push(line));
    let result: Awaited<ReturnType<typeof example>>;
    try {
      result = await example(baseUrl, stack.key, sessionId);
    } finally {
      log.mockRestore();
    }
    const { appended, before, compacted, after, undone, restored } = result;
    expect(appended).toMatchObject({ sessionId, firstSeq: 1, lastSeq: 10, compaction: { scheduled: false } });
    expect(before.messages).toHaveLength(10);
    expect(before.contextVersion).toBeNull();
    expect(compacted).toMatchObject({ status: 'succeeded', trigger: 'manual', sessionId });
    expect(compacted.tokensAfter!).toBeLessThan(compacted.tokensBefore!);
    expect(after.contextVersion).toBe(compacted.resultVersion);
    expect(after.tokens).toBeLessThan(before.tokens);
    expect(undone.restoredVersion).toBe(0);
    expect(undone.version).toBeGreaterThan(compacted.resultVersion!);
    expect(restored.contextVersion).toBe(undone.version);
    expect(restored.messages).toEqual(before.messages);
    expect(lines.at(-1)).toMatch(/^404 session_not_found: /);
  }, 120_000);

  it('waitForJob on a trigger folded into a job that had not started waits for that job and returns it', async () => {
    // No worker for a moment: the first compaction waits in BullMQ, and the second folds into it.
    await worker.stop();
    const compactor = new Compactor({ baseUrl, apiKey: stack.key });
    const sessionId = `client-ts-fold-${randomBytes(4).toString('hex')}`;
    const log = (replica: string) => Array.from({ length: 150 }, (_, i) => `${replica} ${i} INFO request served in ${(i * 37) % 250} ms`).join('\n');
    const messages: Record<string, unknown>[] = [{ role: 'user', content: 'Which replica is slowest?' }];
    for (const replica of ['api-1', 'api-2', 'api-3', 'api-4']) {
      messages.push({ role: 'assistant', content: null, tool_calls: [{ id: `call_${replica}`, type: 'function', function: { name: 'read_log', arguments: '{}' } }] });
      messages.push({ role: 'tool', tool_call_id: `call_${replica}`, content: log(replica) });
    }
    messages.push({ role: 'assistant', content: 'api-3.' });
    await compactor.append(sessionId, { model: 'gpt-4o', contextWindow: 16_000, outputReserve: 2_000, policy: { preset: 'balanced', overrides: { maskKeepLatestTurns: 2 } }, format: 'openai', messages });
    const { job: first } = await compactor.compact(sessionId);
    const { job: second } = await compactor.compact(sessionId);
    expect(second).toMatchObject({ status: 'skipped', reason: `superseded-by:${first.id}`, supersededBy: first.id });
    expect(await compactor.job(first.id)).toMatchObject({ status: 'queued', supersededBy: null });

    const waiting = compactor.waitForJob(second.id, { intervalMs: 50 });
    worker = await stack.startWorker();
    const done = await waiting;
    expect(done).toMatchObject({ id: first.id, status: 'succeeded', supersededBy: null });
    expect((await compactor.context(sessionId, 'openai')).contextVersion).toBe(done.resultVersion);
  }, 120_000);

  it('sessions list, snapshot and restore; errors carry the API’s error body', async () => {
    const compactor = new Compactor({ baseUrl: `${baseUrl}/`, apiKey: stack.key });
    const sessionId = `client-ts-list-${randomBytes(4).toString('hex')}`;
    await compactor.append(sessionId, { model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
    const page = await compactor.sessions({ search: sessionId });
    expect(page.sessions.map((s) => s.id)).toEqual([sessionId]);
    expect((await compactor.session(sessionId)).id).toBe(sessionId);

    const snapshot = await compactor.snapshot(sessionId, 'before nothing');
    expect(snapshot).toMatchObject({ kind: 'manual', label: 'before nothing', version: 0 });
    expect((await compactor.snapshots(sessionId)).snapshots.map((s) => s.id)).toContain(snapshot.id);
    expect(await compactor.restore(sessionId, snapshot.id)).toMatchObject({ snapshotId: snapshot.id, restoredVersion: 0 });

    // Same Idempotency-Key: applied once, the retry gets the first answer.
    const once = await compactor.append(sessionId, { messages: [{ role: 'assistant', content: 'hi' }] }, { idempotencyKey: 'retry-1' });
    expect(await compactor.append(sessionId, { messages: [{ role: 'assistant', content: 'hi' }] }, { idempotencyKey: 'retry-1' })).toEqual(once);

    // `waitMs` reaches the API: within range a context (nothing to wait for here), out of range a 400 naming it.
    expect((await compactor.context(sessionId, 'openai', { waitMs: 1_000 })).fallback).toBeNull();
    const tooLong = await compactor.context(sessionId, 'openai', { waitMs: 60_001 }).catch((e: unknown) => e);
    expect((tooLong as CompactorApiError).body).toMatchObject({ error: { details: { fields: [{ field: 'waitMs' }] } } });

    const invalid = await compactor.append(sessionId, { messages: [{ role: 'nobody', content: 'x' }] }).catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(CompactorApiError);
    expect(invalid).toMatchObject({ status: 400, code: 'validation_failed' });
    expect((invalid as CompactorApiError).body).toMatchObject({ error: { code: 'validation_failed', message: expect.any(String) } });

    const unauthorized = await new Compactor({ baseUrl, apiKey: 'ck_wrong' }).sessions().catch((e: unknown) => e);
    expect(unauthorized).toMatchObject({ status: 401, code: expect.any(String) });
  }, 60_000);
});
