import request from 'supertest';
import { startTestApi, TestApi } from '../test-app';

/** Sessions, append, history and context through HTTP on the real PostgreSQL, with two tenants. */
describe('sessions over REST', () => {
  let api: TestApi;
  let keyA: string;
  let keyB: string;
  let readOnlyA: string;
  const sid = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}`;

  beforeAll(async () => {
    api = await startTestApi();
    keyA = await api.tenantKey(['ingest', 'read', 'admin'], 'tenant-a');
    readOnlyA = await api.tenantKey(['read'], 'tenant-a');
    keyB = await api.tenantKey(['ingest', 'read', 'admin'], 'tenant-b');
  });
  afterAll(() => api.close());

  const http = () => request(api.app.getHttpServer());
  const as = (key: string) => ({ Authorization: `Bearer ${key}` });
  const append = (key: string, id: string, body: object, headers: Record<string, string> = {}) =>
    http().post(`/v1/sessions/${id}/messages`).set({ ...as(key), ...headers }).send(body);
  const historyOf = async (key: string, id: string) => (await http().get(`/v1/sessions/${id}/messages?limit=1000`).set(as(key)).expect(200)).body;

  describe('authentication and scopes', () => {
    it('requires a bearer key on every /v1 route', async () => {
      const res = await http().get('/v1/sessions').expect(401);
      expect(res.body.error.code).toBe('unauthorized');
      await http().get('/v1/sessions').set({ Authorization: 'Bearer ck_nope' }).expect(401);
      await http().get('/v1/sessions').set({ Authorization: 'Basic abc' }).expect(401);
    });

    it('lets a read key read but not append, create keys or delete', async () => {
      const id = sid('scopes');
      await append(keyA, id, { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).expect(201);
      await http().get(`/v1/sessions/${id}`).set(as(readOnlyA)).expect(200);
      const denied = await append(readOnlyA, id, { messages: [{ role: 'user', content: 'x' }] }).expect(403);
      expect(denied.body.error).toEqual({ code: 'forbidden', message: "This API key lacks the 'ingest' scope" });
      await http().post('/v1/keys').set(as(readOnlyA)).send({ name: 'x', scopes: ['read'] }).expect(403);
      await http().delete(`/v1/sessions/${id}`).set(as(readOnlyA)).expect(403);
    });

    it('creates, lists and revokes keys; a revoked key gets 401; the key is shown once and stored hashed', async () => {
      const created = await http().post('/v1/keys').set(as(keyA)).send({ name: 'fleet', scopes: ['ingest'] }).expect(201);
      expect(created.body.key).toMatch(/^ck_[A-Za-z0-9]{40}$/);
      const list = await http().get('/v1/keys').set(as(keyA)).expect(200);
      const listed = list.body.keys.find((k: { id: string }) => k.id === created.body.id);
      expect(listed).toMatchObject({ name: 'fleet', scopes: ['ingest'], revokedAt: null });
      expect(JSON.stringify(list.body)).not.toContain(created.body.key);
      await http().get('/v1/sessions').set(as(created.body.key)).expect(200);
      await http().delete(`/v1/keys/${created.body.id}`).set(as(keyA)).expect(200);
      await http().get('/v1/sessions').set(as(created.body.key)).expect(401);
      // Another tenant cannot revoke tenant A's keys.
      await http().delete(`/v1/keys/${listed.id}`).set(as(keyB)).expect(404);
    });

    it('names the bad field of a key request', async () => {
      const res = await http().post('/v1/keys').set(as(keyA)).send({ name: '', scopes: ['root'] }).expect(400);
      expect(res.body.error.code).toBe('validation_failed');
      expect(res.body.error.message).toContain('name:');
      expect(res.body.error.message).toContain('scopes[0]:');
    });
  });

  describe('append', () => {
    it('appends Anthropic messages, creating the session, and answers in the shape SPEC.md fixes', async () => {
      const id = sid('anthropic');
      const res = await append(keyA, id, {
        model: 'claude-sonnet-4-5',
        system: [{ type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } }],
        messages: [
          { role: 'user', content: 'Fix the failing test in src/app.ts' },
          { role: 'assistant', content: [{ type: 'text', text: 'Reading it.' }, { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'src/app.ts' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'export const x = 1;' }] },
        ],
      }).expect(201);
      expect(Object.keys(res.body).sort()).toEqual(['compaction', 'firstSeq', 'lastSeq', 'sessionId', 'usage']);
      expect(res.body).toMatchObject({ sessionId: id, firstSeq: 1, lastSeq: 4, compaction: { scheduled: false, reason: 'below-threshold' } });
      expect(Object.keys(res.body.usage).sort()).toEqual(['available', 'budget', 'contextTokens', 'threshold', 'utilization']);
      expect(res.body.usage.contextTokens).toBeGreaterThan(20);
      expect(res.body.usage.budget).toBeGreaterThan(150_000);
      expect(res.body.usage.threshold).toBe(Math.floor(res.body.usage.budget * 0.9));
      // Where the handler's time went, for clients and the ingest benchmark.
      expect(res.headers['server-timing']).toMatch(/^append;dur=[\d.]+;desc="Compactor append handler", count;dur=[\d.]+, write;dur=[\d.]+, schedule;dur=[\d.]+$/);

      const next = await append(keyA, id, { messages: [{ role: 'assistant', content: 'Fixed.' }] }).expect(201);
      expect(next.body).toMatchObject({ firstSeq: 5, lastSeq: 5 });
      expect(next.body.usage.contextTokens).toBeGreaterThan(res.body.usage.contextTokens);
    });

    it('returns the full history exactly as appended, with gap-free seqs', async () => {
      const id = sid('history');
      const batch1 = [
        { role: 'system', content: 'Be terse.' },
        { role: 'user', content: [{ type: 'text', text: 'ls' }] },
        { role: 'assistant', content: null, tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'sh', arguments: '{"cmd":"ls"}' } },
          { id: 'call_b', type: 'function', function: { name: 'sh', arguments: '{"cmd":"pwd"}' } },
        ] },
        { role: 'tool', tool_call_id: 'call_a', content: 'a.txt\nb.txt' },
        { role: 'tool', tool_call_id: 'call_b', content: '/work' },
      ];
      await append(keyA, id, { model: 'gpt-4o', messages: batch1 }).expect(201);
      const batch2 = [{ role: 'assistant', content: 'Two files.', refusal: null }];
      await append(keyA, id, { messages: batch2 }).expect(201);
      const history = await historyOf(keyA, id);
      expect(history.messages.map((m: { seq: number }) => m.seq)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(history.messages.map((m: { message: unknown }) => m.message)).toEqual([...batch1, ...batch2]);
      expect(history.messages.every((m: { format: string }) => m.format === 'openai')).toBe(true);
      expect(history.nextAfter).toBeNull();

      const page1 = (await http().get(`/v1/sessions/${id}/messages?limit=4`).set(as(keyA)).expect(200)).body;
      expect(page1.messages).toHaveLength(4);
      expect(page1.nextAfter).toBe(4);
      const page2 = (await http().get(`/v1/sessions/${id}/messages?after=4&limit=4`).set(as(keyA)).expect(200)).body;
      expect(page2.messages.map((m: { seq: number }) => m.seq)).toEqual([5, 6]);
      expect(page2.nextAfter).toBeNull();
    });

    it('applies a retried request with the same Idempotency-Key once and returns the first response', async () => {
      const id = sid('idem');
      const body = { model: 'gpt-4o', messages: [{ role: 'user', content: 'once' }] };
      const first = await append(keyA, id, body, { 'Idempotency-Key': 'k-1' }).expect(201);
      const retry = await append(keyA, id, body, { 'Idempotency-Key': 'k-1' }).expect(201);
      expect(retry.body).toEqual(first.body);
      expect((await historyOf(keyA, id)).messages).toHaveLength(1);
      const reused = await append(keyA, id, { messages: [{ role: 'user', content: 'other' }] }, { 'Idempotency-Key': 'k-1' }).expect(409);
      expect(reused.body.error.code).toBe('idempotency_key_reused');
      // Concurrent retries too: exactly one applies.
      const concurrent = { messages: [{ role: 'assistant', content: 'racing' }] };
      const results = await Promise.all([1, 2, 3].map(() => append(keyA, id, concurrent, { 'Idempotency-Key': 'k-2' })));
      expect(results.map((r) => r.status)).toEqual([201, 201, 201]);
      expect(new Set(results.map((r) => JSON.stringify(r.body))).size).toBe(1);
      expect((await historyOf(keyA, id)).messages).toHaveLength(2);
    });

    it('keeps seqs gap-free under concurrent appends', async () => {
      const id = sid('concurrent');
      await append(keyA, id, { model: 'gpt-4o', messages: [{ role: 'user', content: 'start' }] }).expect(201);
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => append(keyA, id, { messages: [{ role: 'assistant', content: `a${i}` }, { role: 'user', content: `u${i}` }] })),
      );
      expect(results.every((r) => r.status === 201)).toBe(true);
      const seqs = (await historyOf(keyA, id)).messages.map((m: { seq: number }) => m.seq);
      expect(seqs).toEqual(Array.from({ length: 17 }, (_, i) => i + 1));
    });

    it('accepts a 5 MB tool result and counts it', async () => {
      const id = sid('big');
      const big = 'line of build output with some numbers 12345\n'.repeat(Math.ceil((5 * 1024 * 1024) / 45));
      const res = await append(keyA, id, {
        model: 'gpt-4o',
        messages: [
          { role: 'user', content: 'build it' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_big', name: 'sh', input: { cmd: 'make' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_big', content: big }] },
        ],
      }).expect(201);
      expect(res.body.usage.contextTokens).toBeGreaterThan(500_000);
      const history = await historyOf(keyA, id);
      expect(history.messages[2].message.content[0].content).toBe(big);
    });

    it('answers 413 to an append over 32 MB and stores nothing', async () => {
      const id = sid('too-big');
      const huge = 'x'.repeat(33 * 1024 * 1024);
      const res = await append(keyA, id, { model: 'gpt-4o', messages: [{ role: 'user', content: huge }] }).expect(413);
      expect(res.body.error.code).toBe('payload_too_large');
      await http().get(`/v1/sessions/${id}`).set(as(keyA)).expect(404);
    });

    it('warns about an unknown model and uses the documented default', async () => {
      const res = await append(keyA, sid('unknown-model'), { model: 'my-private-model-v9', messages: [{ role: 'user', content: 'hi' }] }).expect(201);
      expect(res.body.warnings).toEqual([expect.stringContaining('my-private-model-v9')]);
    });

    it('rejects structural errors naming the field, and stores nothing of the request', async () => {
      const id = sid('rejected');
      const orphan = await append(keyA, id, {
        model: 'gpt-4o',
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_missing', content: 'x' }] },
        ],
      }).expect(400);
      expect(orphan.body.error.code).toBe('validation_failed');
      expect(orphan.body.error.message).toMatch(/messages\[1\]/);
      expect(orphan.body.error.message).toContain('toolu_missing');
      // The session the append would have created does not exist.
      await http().get(`/v1/sessions/${id}`).set(as(keyA)).expect(404);

      const badTypes = await append(keyA, id, { messages: [{ role: 'user', content: 42 }] }).expect(400);
      expect(badTypes.body.error.message).toContain('messages[0]');
      const empty = await append(keyA, id, { messages: [] }).expect(400);
      expect(empty.body.error.message).toContain('messages: must contain at least 1 message');
      const tooMany = await append(keyA, id, { messages: Array.from({ length: 501 }, () => ({ role: 'user', content: 'x' })) }).expect(400);
      expect(tooMany.body.error.message).toContain('at most 500');
      const badId = await append(keyA, 'bad id!', { messages: [{ role: 'user', content: 'x' }] }).expect(400);
      expect(badId.body.error.message).toMatch(/^sessionId: /);
      const longId = await append(keyA, 'x'.repeat(129), { messages: [{ role: 'user', content: 'x' }] }).expect(400);
      expect(longId.body.error.message).toMatch(/^sessionId: /);
      const unknownField = await append(keyA, id, { messages: [{ role: 'user', content: 'x' }], colour: 'red' }).expect(400);
      expect(unknownField.body.error.message).toContain('colour');
      await http().get(`/v1/sessions/${id}`).set(as(keyA)).expect(404);
    });

    it('accepts a tool_result whose tool_use is in the stored history', async () => {
      const id = sid('split');
      await append(keyA, id, {
        model: 'claude-sonnet-4-5',
        messages: [
          { role: 'user', content: 'go' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_s', name: 'sh', input: {} }] },
        ],
      }).expect(201);
      await append(keyA, id, { messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_s', content: 'ok', is_error: true }] }] }).expect(201);
    });

    it('keeps unknown block types as opaque instead of rejecting them', async () => {
      const id = sid('opaque');
      const doc = { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'spec' }, title: 'Spec' };
      await append(keyA, id, { model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: [doc, { type: 'text', text: 'summarize' }] }] }).expect(201);
      const history = await historyOf(keyA, id);
      expect(history.messages[0].blocks[0]).toEqual({ type: 'opaque', provider: 'anthropic', raw: doc });
    });
  });

  describe('context', () => {
    it('is valid for the provider: a trailing tool_use without its result is left out', async () => {
      const id = sid('ctx');
      await append(keyA, id, {
        model: 'gpt-4o',
        messages: [
          { role: 'system', content: 'You are helpful.' },
          { role: 'user', content: 'run ls' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'sh', arguments: '{"cmd":"ls"}' } }] },
        ],
      }).expect(201);
      const anthropic = (await http().get(`/v1/sessions/${id}/context?format=anthropic`).set(as(keyA)).expect(200)).body;
      expect(anthropic.system).toBe('You are helpful.');
      expect(anthropic.messages).toEqual([{ role: 'user', content: 'run ls' }]);
      expect(anthropic.leftOut).toEqual([{ seq: 3, reason: expect.any(String) }]);
      expect(anthropic.tokens).toBeGreaterThan(0);
      expect(anthropic.usage.budget).toBeGreaterThan(100_000);

      await append(keyA, id, { messages: [{ role: 'tool', tool_call_id: 'call_1', content: 'a.txt' }] }).expect(201);
      const openai = (await http().get(`/v1/sessions/${id}/context?format=openai`).set(as(keyA)).expect(200)).body;
      expect(openai.messages).toEqual([
        { role: 'system', content: 'You are helpful.' },
        { role: 'user', content: 'run ls' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'sh', arguments: '{"cmd":"ls"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'a.txt' },
      ]);
      expect(openai.leftOut).toEqual([]);
      const anthropicNow = (await http().get(`/v1/sessions/${id}/context`).set(as(keyA)).expect(200)).body;
      expect(anthropicNow.messages[1]).toEqual({ role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'sh', input: { cmd: 'ls' } }] });
      expect(anthropicNow.messages[2]).toEqual({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'a.txt' }] });
      const canonical = (await http().get(`/v1/sessions/${id}/context?format=canonical`).set(as(keyA)).expect(200)).body;
      expect(canonical.messages.map((m: { role: string }) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
      // The dashboard lines the context up with the history by these seqs; balanced protects the latest 6 messages.
      expect(canonical.seqs).toEqual([1, 2, 3, 4]);
      expect(canonical.protection).toEqual({ latestFromSeq: 1, userTextSeqs: [2] });
      expect(openai.seqs).toBeUndefined();
      await http().get(`/v1/sessions/${id}/context?format=xml`).set(as(keyA)).expect(400);
    });
  });

  describe('context cache', () => {
    it('serves what was appended after a cached read, and follows a config change', async () => {
      const id = sid('cached');
      const ctx = async (format = 'anthropic') => (await http().get(`/v1/sessions/${id}/context?format=${format}`).set(as(keyA)).expect(200)).body;
      await append(keyA, id, { model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'one' }] }).expect(201);
      const first = await ctx();
      expect(await ctx()).toEqual(first);
      await append(keyA, id, { messages: [{ role: 'assistant', content: 'two' }, { role: 'user', content: 'three' }] }).expect(201);
      const second = await ctx();
      expect(second.messages.map((m: { content: string }) => m.content)).toEqual(['one', 'two', 'three']);
      expect(second.tokens).toBeGreaterThan(first.tokens);
      expect((await ctx('openai')).messages).toHaveLength(3);
      // Concurrent reads and appends: every read is a prefix of the history, never a mix.
      const reads = await Promise.all([
        ctx(),
        append(keyA, id, { messages: [{ role: 'assistant', content: 'four' }] }),
        ctx(),
        append(keyA, id, { messages: [{ role: 'user', content: 'five' }] }),
        ctx(),
      ]);
      for (const r of [reads[0], reads[2], reads[4]] as { messages: { content: string }[] }[]) {
        expect(['one', 'two', 'three', 'four', 'five'].slice(0, r.messages.length)).toEqual(r.messages.map((m) => m.content));
      }
      expect((await ctx()).messages).toHaveLength(5);
      // A model change recounts the history: the cached context follows.
      const before = await ctx();
      await http().patch(`/v1/sessions/${id}`).set(as(keyA)).send({ model: 'gpt-4o', contextWindow: 50_000 }).expect(200);
      const after = await ctx();
      expect(after.usage.budget).toBeLessThan(before.usage.budget);
      expect(after.tokens).not.toBe(before.tokens);
    });
  });

  describe('sessions CRUD and tenants', () => {
    it("answers another tenant's session exactly as a missing one", async () => {
      const id = sid('private');
      await append(keyA, id, { model: 'gpt-4o', messages: [{ role: 'user', content: 'secret' }] }).expect(201);
      const theirs = await http().get(`/v1/sessions/${id}`).set(as(keyB)).expect(404);
      const missing = await http().get(`/v1/sessions/${id}-nope`).set(as(keyB)).expect(404);
      expect(theirs.body.error.code).toBe(missing.body.error.code);
      expect(theirs.body.error.message.replace(id, 'X')).toBe(missing.body.error.message.replace(`${id}-nope`, 'X'));
      for (const path of ['messages', 'context']) await http().get(`/v1/sessions/${id}/${path}`).set(as(keyB)).expect(404);
      await http().delete(`/v1/sessions/${id}`).set(as(keyB)).expect(404);
      await http().patch(`/v1/sessions/${id}`).set(as(keyB)).send({ contextWindow: 50_000 }).expect(404);
      // Tenant B appending to the same id gets its own session, and tenant A's history is untouched.
      await append(keyB, id, { messages: [{ role: 'user', content: 'mine' }] }).expect(201);
      expect((await historyOf(keyA, id)).messages.map((m: { message: { content: string } }) => m.message.content)).toEqual(['secret']);
      const listB = (await http().get('/v1/sessions?limit=200').set(as(keyB)).expect(200)).body;
      expect(listB.sessions.every((s: { id: string }) => !s.id.startsWith('anthropic-'))).toBe(true);
    });

    it('searches a substring of the session id, case-insensitive, its wildcards taken literally', async () => {
      const key = await api.tenantKey(['ingest', 'read']);
      for (const id of ['srch.a_b-1', 'srch.axb-2', 'Srch.Other-3']) await append(key, id, { messages: [{ role: 'user', content: id }] }).expect(201);
      const ids = async (term: string) =>
        (await http().get(`/v1/sessions?search=${encodeURIComponent(term)}`).set(as(key)).expect(200)).body.sessions.map((s: { id: string }) => s.id);
      // Newest activity first, as without a search.
      expect(await ids('SRCH.')).toEqual(['Srch.Other-3', 'srch.axb-2', 'srch.a_b-1']);
      expect(await ids('a_b')).toEqual(['srch.a_b-1']);
      expect(await ids('xb')).toEqual(['srch.axb-2']); // shorter than a trigram: still found
      expect(await ids('other-3')).toEqual(['Srch.Other-3']);
      expect(await ids('%')).toEqual([]);
      expect(await ids('srch\\')).toEqual([]);
    });

    it('a search with the other filters and the cursor pages through exactly the sessions the whole list says match, newest activity first', async () => {
      // Few matches: the repository collects them through the trigram index before ordering (listFromSearchMatches).
      const key = await api.tenantKey(['ingest', 'read']);
      for (let i = 0; i < 14; i += 1) {
        const id = `${i % 3 === 0 ? 'other' : 'Pick'}.${i}`;
        const model = i % 2 === 0 ? 'gpt-4o' : 'gpt-4o-mini';
        await append(key, id, { model, contextWindow: 20_000, outputReserve: 0, messages: [{ role: 'user', content: 'word '.repeat(i % 4 === 0 ? 12_000 : 10) }] }).expect(201);
      }
      type Listed = { id: string; model: string; usage: { utilization: number } };
      const all: Listed[] = (await http().get('/v1/sessions?limit=200').set(as(key)).expect(200)).body.sessions;
      expect(all).toHaveLength(14);
      const pages = async (query: string) => {
        const out: string[] = [];
        let cursor: string | null = null;
        do {
          const body: { sessions: Listed[]; nextCursor: string | null } = (
            await http().get(`/v1/sessions?limit=2&${query}${cursor ? `&cursor=${cursor}` : ''}`).set(as(key)).expect(200)
          ).body;
          out.push(...body.sessions.map((x) => x.id));
          cursor = body.nextCursor;
        } while (cursor);
        return out;
      };
      const picked = (x: Listed) => x.id.toLowerCase().includes('ick.');
      expect(await pages('search=ICK.')).toEqual(all.filter(picked).map((x) => x.id));
      expect(await pages('search=ick.&model=gpt-4o')).toEqual(all.filter((x) => picked(x) && x.model === 'gpt-4o').map((x) => x.id));
      expect(await pages('search=ick.&minUtilization=0.5')).toEqual(all.filter((x) => picked(x) && x.usage.utilization >= 0.5).map((x) => x.id));
      expect(all.filter((x) => picked(x) && x.usage.utilization >= 0.5).length).toBeGreaterThan(0);
      expect(await pages('search=ick.&maxUtilization=0.5&model=gpt-4o-mini')).toEqual(
        all.filter((x) => picked(x) && x.usage.utilization <= 0.5 && x.model === 'gpt-4o-mini').map((x) => x.id),
      );
    });

    it('creates, lists with filters and cursor, updates and deletes', async () => {
      const key = await api.tenantKey(['ingest', 'read', 'admin']);
      const created = await http().post('/v1/sessions').set(as(key)).send({ id: 'crud-1', model: 'gpt-4o-mini', policy: 'factor3' }).expect(201);
      expect(created.body).toMatchObject({ id: 'crud-1', model: 'gpt-4o-mini', policy: { preset: 'factor3', overrides: {} }, tokenCounting: 'exact', messageCount: 0 });
      await http().post('/v1/sessions').set(as(key)).send({ id: 'crud-1' }).expect(409);
      await http().post('/v1/sessions').set(as(key)).send({ id: 'crud-2', model: 'claude-sonnet-4-5', policy: { preset: 'nope' } }).expect(400);
      for (const i of [2, 3, 4]) await append(key, `crud-${i}`, { model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: `m${i}` }] }).expect(201);

      const byModel = (await http().get('/v1/sessions?model=gpt-4o-mini').set(as(key)).expect(200)).body;
      expect(byModel.sessions.map((s: { id: string }) => s.id)).toEqual(['crud-1']);
      const search = (await http().get('/v1/sessions?search=RUD-3').set(as(key)).expect(200)).body;
      expect(search.sessions.map((s: { id: string }) => s.id)).toEqual(['crud-3']);
      const page1 = (await http().get('/v1/sessions?limit=2').set(as(key)).expect(200)).body;
      expect(page1.sessions.map((s: { id: string }) => s.id)).toEqual(['crud-4', 'crud-3']);
      const page2 = (await http().get(`/v1/sessions?limit=2&cursor=${page1.nextCursor}`).set(as(key)).expect(200)).body;
      expect(page2.sessions.map((s: { id: string }) => s.id)).toEqual(['crud-2', 'crud-1']);
      expect(page2.nextCursor).toBeNull();
      const busy = (await http().get('/v1/sessions?minUtilization=0.00001').set(as(key)).expect(200)).body;
      expect(busy.sessions.map((s: { id: string }) => s.id).sort()).toEqual(['crud-2', 'crud-3', 'crud-4']);
      await http().get('/v1/sessions?limit=0').set(as(key)).expect(400);
      await http().get('/v1/sessions?cursor=garbage').set(as(key)).expect(400);

      const before = (await http().get('/v1/sessions/crud-2').set(as(key)).expect(200)).body;
      const patched = (await http().patch('/v1/sessions/crud-2').set(as(key)).send({ model: 'gpt-4o', policy: 'balanced' }).expect(200)).body;
      expect(patched).toMatchObject({ model: 'gpt-4o', tokenCounting: 'exact', policy: { preset: 'balanced' } });
      expect(before.tokenCounting).toBe('approx');
      expect(patched.historyTokens).toBeGreaterThan(0);
      await http().patch('/v1/sessions/crud-2').set(as(key)).send({}).expect(400);

      await http().delete('/v1/sessions/crud-3').set(as(key)).expect(200, { id: 'crud-3', deleted: true });
      await http().get('/v1/sessions/crud-3').set(as(key)).expect(404);
      await http().get('/v1/sessions/crud-3/messages').set(as(key)).expect(404);
      await http().delete('/v1/sessions/crud-3').set(as(key)).expect(404);
    });
  });
});
