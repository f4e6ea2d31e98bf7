import { BuiltApi, FaultStack, pollUntil, startFaultStack } from '@compactor/testing';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const DATA = path.resolve(__dirname, '../../../../testdata/swe-agent-trajectories');
// A real SWE-agent run (OpenAI shape): tool calls, their outputs, the agent's text.
const HISTORY = (JSON.parse(readFileSync(path.join(DATA, 'ctf_web_i_got_id.traj'), 'utf8')) as { history: Record<string, unknown>[] }).history.map(
  ({ agent: _a, message_type: _t, thought: _th, action: _ac, cache_control: _c, tool_call_ids, ...rest }) => (Array.isArray(tool_call_ids) ? { ...rest, tool_call_id: tool_call_ids[0] } : rest),
);

/**
 * Issue #21's cache correctness across replicas: two built API processes, each with its own context
 * cache (sources, the final part of the provider-valid pass and of the serialized body), serve the
 * same bytes after any append, compaction or restore made through the other; a third process with no
 * cache (CONTEXT_CACHE_MB=0) assembles every read whole and is the reference.
 */
describe('context reads across API processes (per-process caches keyed by head version and last seq)', () => {
  let stack: FaultStack;
  let a: BuiltApi;
  let b: BuiltApi;
  let reference: BuiltApi;
  const id = `replicas-${Date.now().toString(36)}`;
  const call = async (api: BuiltApi, method: string, route: string, body?: unknown) => {
    const res = await fetch(`${api.url}${route}`, {
      method,
      headers: { authorization: `Bearer ${stack.key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${route}: ${res.status} ${text.slice(0, 400)}`);
    return text;
  };
  /** Every process's body for every format, compared byte for byte with the uncached reference's. */
  const expectSameEverywhere = async (step: string) => {
    for (const format of ['anthropic', 'openai', 'canonical', 'responses']) {
      const route = `/v1/sessions/${id}/context?format=${format}`;
      // Read twice on the caching processes: the first read fills or extends the cache, the second is served from it.
      const [fromA, fromB, again, want] = [await call(a, 'GET', route), await call(b, 'GET', route), await call(a, 'GET', route), await call(reference, 'GET', route)];
      expect({ step, format, body: fromA }).toEqual({ step, format, body: want });
      expect({ step, format, body: fromB }).toEqual({ step, format, body: want });
      expect({ step, format, body: again }).toEqual({ step, format, body: want });
    }
  };

  beforeAll(async () => {
    stack = await startFaultStack('ctxreplicas');
    [a, b, reference] = await Promise.all([stack.startApi(), stack.startApi(), stack.startApi({ CONTEXT_CACHE_MB: '0' })]);
    await stack.startWorker();
  }, 90_000);
  afterAll(async () => {
    await stack?.close();
  });

  it('serves the same bytes from either process after appends, a compaction, an append after it, and an undo', async () => {
    // Appends alternate between the processes, one to three messages at a time (the agent loop), each followed by reads on both.
    let at = 0;
    let turn = 0;
    while (at < HISTORY.length) {
      const size = 1 + (turn % 3);
      const body = at === 0 ? { model: 'gpt-4o', contextWindow: 32_000, policy: { preset: 'balanced', overrides: { summarizeAbove: 0.1, summarizeDownTo: 0.1 } }, format: 'openai', messages: HISTORY.slice(0, size) } : { format: 'openai', messages: HISTORY.slice(at, at + size) };
      await call(turn % 2 === 0 ? a : b, 'POST', `/v1/sessions/${id}/messages`, body);
      at += size;
      turn += 1;
      await expectSameEverywhere(`after append ${turn} (through message ${at})`);
    }

    // A compaction made through b (the policy summarizes from 10% of the budget on): a new head version on both.
    const job = JSON.parse(await call(b, 'POST', `/v1/sessions/${id}/compact`, {})).job.id as string;
    const done = await pollUntil(
      async () => {
        const j = JSON.parse(await call(a, 'GET', `/v1/jobs/${job}`)) as { status: string; reason?: string };
        return ['succeeded', 'skipped', 'failed'].includes(j.status) ? j : undefined;
      },
      { timeoutMs: 60_000, what: `compaction ${job}` },
    );
    expect({ status: done.status, reason: done.reason }).toEqual({ status: 'succeeded', reason: done.reason });
    await expectSameEverywhere('after the compaction');
    expect(JSON.parse(await call(a, 'GET', `/v1/sessions/${id}/context?format=canonical`)).contextVersion).not.toBeNull();

    await call(a, 'POST', `/v1/sessions/${id}/messages`, { format: 'openai', messages: [{ role: 'user', content: 'One more thing: keep the changelog entry short.' }] });
    await expectSameEverywhere('after an append to the compacted session');

    await call(b, 'POST', `/v1/sessions/${id}/compactions/${job}/undo`);
    await expectSameEverywhere('after the undo');
  }, 240_000);

  it("an API process's remembered session row never outlives a change made through the other: appends, settings, deletion", async () => {
    // Each process remembers the row its own last append left (issue #21: the next append skips reading it); every
    // change below is made through the other process, and each append after it must see the current row.
    const sid = `remembered-${Date.now().toString(36)}`;
    const append = async (api: BuiltApi, content: string, extra: Record<string, unknown> = {}) =>
      JSON.parse(await call(api, 'POST', `/v1/sessions/${sid}/messages`, { format: 'openai', ...extra, messages: [{ role: 'user', content }] })) as {
        firstSeq: number;
        usage: { budget: number };
        warnings?: string[];
      };
    const texts = async () =>
      (JSON.parse(await call(b, 'GET', `/v1/sessions/${sid}/messages`)) as { messages: { seq: number; message: { content: string } }[] }).messages.map((m) => [m.seq, m.message.content]);

    expect((await append(a, 'one', { model: 'gpt-4o', contextWindow: 32_000 })).firstSeq).toBe(1);
    expect((await append(a, 'two')).firstSeq).toBe(2);
    expect((await append(b, 'three')).firstSeq).toBe(3);
    // a remembers the row at seq 2; b moved it on.
    expect((await append(a, 'four')).firstSeq).toBe(4);
    expect(await texts()).toEqual([
      [1, 'one'],
      [2, 'two'],
      [3, 'three'],
      [4, 'four'],
    ]);

    // A settings change through b: a's next append is planned on the new window.
    const before = (await append(a, 'five')).usage.budget;
    await call(b, 'PATCH', `/v1/sessions/${sid}`, { contextWindow: 64_000 });
    const after = await append(a, 'six');
    expect(after.firstSeq).toBe(6);
    expect(after.usage.budget).toBeGreaterThan(before);

    // Deleted through b: a's next append creates the session anew (seq 1, and its creation fields are not "ignored").
    await call(b, 'DELETE', `/v1/sessions/${sid}`);
    const recreated = await append(a, 'seven', { model: 'gpt-4o', contextWindow: 16_000 });
    expect(recreated).toMatchObject({ firstSeq: 1 });
    expect(recreated.warnings).toBeUndefined();
    expect(await texts()).toEqual([[1, 'seven']]);
    expect((await append(a, 'eight')).firstSeq).toBe(2);
  }, 60_000);

  it('a key revoked through one process is refused there at once, and by the other within API_KEY_CACHE_MS (1 s)', async () => {
    const created = JSON.parse(await call(a, 'POST', '/v1/keys', { name: `remembered-${Date.now().toString(36)}`, scopes: ['read'] })) as { id: string; key: string };
    const status = async (api: BuiltApi) => (await fetch(`${api.url}/v1/sessions`, { headers: { authorization: `Bearer ${created.key}` } })).status;
    // Both processes have looked it up (and remember it).
    expect([await status(a), await status(b), await status(b)]).toEqual([200, 200, 200]);
    await call(a, 'DELETE', `/v1/keys/${created.id}`);
    const revokedAt = Date.now();
    expect(await status(a)).toBe(401);
    await pollUntil(async () => ((await status(b)) === 401 ? true : undefined), { timeoutMs: 5_000, what: 'the other process to refuse the revoked key' });
    // Within the 1 s it may remember the key, plus a loaded machine's request time.
    expect(Date.now() - revokedAt).toBeLessThan(3_000);
    expect(await status(b)).toBe(401);
  }, 30_000);
});
