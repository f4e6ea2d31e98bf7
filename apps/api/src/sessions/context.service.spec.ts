// ContextService with the context loader, the repositories and the counter mocked (newTestService): what a read loads
// (everything once, then only what was appended), what it serves from its cache, and its budget answers (the fallback
// under the budget, 422 with an event when even the protected part does not fit).
import { BudgetTooSmall, CanonicalMessage, DomainError, SessionMessage } from '@compactor/compaction';
import fc from 'fast-check';
import { EventPublisher } from '@compactor/jobs';
import { CompactionRepository, ContextLoader, SessionRecord } from '@compactor/persistence';
import { sessionRecord } from '@compactor/persistence/testing';
import { newTestService } from '@compactor/testing/unit';
import { API_CONFIG } from '../config/api-config';
import { statusOf } from '../errors/domain-exception.filter';
import { ApiErrorCode } from '../errors/http-errors';
import { MessageTokenCounter } from '../tokens/message-token-counter';
import { BodyParts, contextFingerprint } from './context-cache';
import { ContextService } from './context.service';
import { SessionsService } from './sessions.service';

const T = 'tenant-1';

const message = (seq: number, tokens = 10, role: 'user' | 'assistant' | 'system' = seq % 2 ? 'user' : 'assistant'): SessionMessage => ({
  seq,
  message: { role, blocks: [{ type: 'text', text: `message ${seq}` }] },
  tokens,
});
const history = (from: number, to: number, tokens = 10) => Array.from({ length: to - from + 1 }, (_, k) => message(from + k, tokens));

function setup(cacheMb = 16) {
  const { sut, mocks } = newTestService(ContextService, { provide: [[API_CONFIG, { CONTEXT_CACHE_MB: cacheMb }]] });
  const sessions = mocks.get(SessionsService);
  const loader = mocks.get(ContextLoader);
  const counter = mocks.get(MessageTokenCounter);
  const publisher = mocks.get(EventPublisher);
  counter.count.mockImplementation(async (list) => list.map(() => 10));
  loader.head.mockResolvedValue(null);
  publisher.notify.mockReturnValue(undefined);
  return { sut, sessions, loader, counter, publisher, compactions: mocks.get(CompactionRepository) };
}

/** Serves `rows` through the loader as the repository would: the ones in (after, through]. */
function storing(loader: ReturnType<typeof setup>['loader'], rows: SessionMessage[]) {
  loader.messagesBetween.mockImplementation(async (_id, after, through) => rows.filter((m) => m.seq > after && m.seq <= through));
}

const json = (body: BodyParts) => JSON.parse(Buffer.concat(body.parts).toString('utf8')) as { messages: { content: unknown }[]; tokens: number; fallback: string | null; seqs?: number[] };

describe('ContextService.contextBody', () => {
  it('loads the history once, then serves the same body while the session row is unchanged', async () => {
    const { sut, sessions, loader } = setup();
    const session = sessionRecord({ lastSeq: 4, headVersionId: null });
    sessions.require.mockResolvedValue(session);
    storing(loader, history(1, 4));

    const first = await sut.contextBody(T, 'ext-1', 'canonical');
    const second = await sut.contextBody(T, 'ext-1', 'canonical');

    expect(second).toBe(first);
    expect(loader.messagesBetween).toHaveBeenCalledTimes(1);
    expect(loader.messagesBetween).toHaveBeenCalledWith('session-1', 0, 4);
    expect(loader.head).toHaveBeenCalledTimes(1);
    expect(json(first)).toMatchObject({ seqs: [1, 2, 3, 4], tokens: 40, fallback: null });
  });

  it('after an append reads only the new messages; a row older than the cache is served its own seqs', async () => {
    const { sut, sessions, loader } = setup();
    storing(loader, history(1, 6));
    sessions.require.mockResolvedValueOnce(sessionRecord({ lastSeq: 4 })).mockResolvedValueOnce(sessionRecord({ lastSeq: 6 })).mockResolvedValueOnce(sessionRecord({ lastSeq: 5 }));

    await sut.contextBody(T, 'ext-1', 'canonical');
    const after = json(await sut.contextBody(T, 'ext-1', 'canonical'));
    const older = json(await sut.contextBody(T, 'ext-1', 'canonical'));

    expect(loader.messagesBetween.mock.calls.map(([, a, b]) => [a, b])).toEqual([
      [0, 4],
      [4, 6],
    ]);
    expect(after.seqs).toEqual([1, 2, 3, 4, 5, 6]);
    expect(older.seqs).toEqual([1, 2, 3, 4, 5]);
  });

  it('a new head version (a compaction, a restore) changes the fingerprint: everything is read again', async () => {
    const { sut, sessions, loader } = setup();
    storing(loader, history(1, 4));
    sessions.require.mockResolvedValueOnce(sessionRecord({ lastSeq: 4, headVersionId: 'version-3' })).mockResolvedValueOnce(sessionRecord({ lastSeq: 4, headVersionId: 'version-4' }));
    await sut.contextBody(T, 'ext-1', 'openai');
    await sut.contextBody(T, 'ext-1', 'openai');
    expect(loader.messagesBetween.mock.calls.map(([, a, b]) => [a, b])).toEqual([
      [0, 4],
      [0, 4],
    ]);
    expect(loader.head).toHaveBeenCalledTimes(2);
  });

  it('with the cache off, every read loads the whole history', async () => {
    const { sut, sessions, loader } = setup(0);
    storing(loader, history(1, 3));
    sessions.require.mockResolvedValue(sessionRecord({ lastSeq: 3 }));
    await sut.contextBody(T, 'ext-1', 'canonical');
    await sut.contextBody(T, 'ext-1', 'canonical');
    expect(loader.messagesBetween.mock.calls.map(([, a, b]) => [a, b])).toEqual([
      [0, 3],
      [0, 3],
    ]);
  });

  it('over the budget, the fallback drops the oldest turns and says so; the context stays within the budget', async () => {
    const { sut, sessions, loader } = setup();
    const session = sessionRecord({ lastSeq: 10, contextWindow: 128_000 });
    sessions.require.mockResolvedValue(session);
    storing(loader, history(1, 10, 20_000));

    const body = json(await sut.contextBody(T, 'ext-1', 'canonical'));

    expect(body.fallback).not.toBeNull();
    expect(body.seqs?.at(-1)).toBe(10);
    // The turns left out leave a note in the place of the first of them (it states the first request, which went with them).
    const notes = body.messages.map((m) => (m as { tags?: string[] }).tags?.includes('note') === true);
    expect(JSON.stringify(body.messages[notes.indexOf(true)])).toContain("TASK (the session's first request)");
    expect(body.seqs?.find((_, k) => !notes[k])).toBeGreaterThan(1);
    expect(body.tokens).toBeLessThanOrEqual(128_000 - session.outputReserve);
  });

  it('a protected part larger than the budget is 422 budget_too_small, recorded as an event and announced', async () => {
    const { sut, sessions, loader, compactions, publisher } = setup();
    sessions.require.mockResolvedValue(sessionRecord({ lastSeq: 2, contextWindow: 8_000, outputReserve: 2_000 }));
    storing(loader, [message(1, 50_000, 'system'), message(2, 10, 'user')]);
    compactions.event.mockResolvedValue(9n);

    const error = await sut.contextBody(T, 'ext-1', 'canonical').catch((e: unknown) => e);

    expect(error).toBeInstanceOf(BudgetTooSmall);
    expect(statusOf((error as DomainError).code as ApiErrorCode)).toBe(422);
    expect(compactions.event).toHaveBeenCalledWith('session-1', T, 'budget-too-small', expect.stringMatching(/^Context read refused: /), { lastSeq: 2 });
    expect(publisher.notify).toHaveBeenCalledWith('session-1', 9n);
  });
});

describe('ContextService.proxyContext and preview', () => {
  it("the proxy's pending messages join this context only, never the cached one", async () => {
    const { sut, sessions, loader } = setup();
    const session: SessionRecord = sessionRecord({ lastSeq: 4, headVersionId: null });
    sessions.require.mockResolvedValue(session);
    storing(loader, history(1, 4));

    const forwarded = await sut.proxyContext(session, 'openai', { maxTokens: 1_000 }, [message(5), message(6)]);
    expect(forwarded).toMatchObject({ compacted: false, contextVersion: null, tokens: 60, fallback: null });
    expect(forwarded.messages.map((m) => m.seq)).toEqual([1, 2, 3, 4, 5, 6]);

    const read = json(await sut.contextBody(T, 'ext-1', 'canonical'));
    expect(read.seqs).toEqual([1, 2, 3, 4]);
    expect(loader.messagesBetween).toHaveBeenCalledTimes(1);
  });

  it("a request's longer system prompt and tool schemas come out of the budget", async () => {
    const { sut, loader } = setup();
    const session = sessionRecord({ lastSeq: 2 });
    storing(loader, history(1, 2));
    const plain = await sut.proxyContext(session, 'openai', {});
    const heavier = await sut.proxyContext(session, 'openai', { toolSchemaTokens: 3_000, extraTokens: 500 });
    expect(plain.budget - heavier.budget).toBe(3_500);
  });

  it('preview applies a prefix through the given seq without touching the cache, and names no version', async () => {
    const { sut, sessions, loader } = setup();
    sessions.require.mockResolvedValue(sessionRecord({ lastSeq: 6 }));
    storing(loader, history(1, 6));
    const prefix = { coversThroughSeq: 2, checkpoints: [], treatments: { 1: { kind: 'dropped' as const, stage: 'test' } } };

    const preview = await sut.preview(T, 'ext-1', prefix, 4, 'canonical');

    expect(loader.messagesBetween).toHaveBeenCalledWith('session-1', 0, 4);
    expect(loader.head).not.toHaveBeenCalled();
    expect(preview).toMatchObject({ contextVersion: null, seqs: [2, 3, 4] });
  });
});

describe('ContextService.proxyContext, turn after turn of a proxied conversation', () => {
  /** A turn's new messages: an answer that may call tools (an id may come back), then the client's results and text. */
  const turnMessages = (firstSeq: number, calls: number[], answered: boolean[]): SessionMessage[] => {
    const call: CanonicalMessage = {
      role: 'assistant',
      blocks: [{ type: 'text', text: `answer ${firstSeq}` }, ...calls.map((id) => ({ type: 'tool_use' as const, id: `call_${id}`, name: 'read', input: { id } }))],
    };
    const results: CanonicalMessage = {
      role: 'user',
      blocks: [
        ...calls.flatMap((id, k) => (answered[k] ?? true ? [{ type: 'tool_result' as const, toolUseId: `call_${id}`, content: `result ${id}`, isError: false }] : [])),
        { type: 'text', text: `next ${firstSeq}` },
      ],
    };
    return [call, results].map((m, k) => ({ seq: firstSeq + k, message: m, tokens: 10 }));
  };

  it('gives what a process without a cache gives for the same history, after accepted and refused turns and id reuse', async () => {
    let fitted = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({ calls: fc.array(fc.nat(6), { maxLength: 2 }), answered: fc.array(fc.boolean(), { maxLength: 2 }), accepted: fc.boolean(), recorded: fc.boolean() }),
          { minLength: 1, maxLength: 10 },
        ),
        // A window the history outgrows too: the fallback then fits it (the same way with and without the cache).
        fc.constantFrom(128_000, 1_350, 1_400, 1_450),
        async (turns, contextWindow) => {
          const cached = setup();
          const uncached = setup(0);
          const outcome = (p: Promise<Awaited<ReturnType<ContextService['proxyContext']>>>) => p.then((c) => ({ messages: c.messages, tokens: c.tokens, fallback: c.fallback }), (e: Error) => ({ error: e.name }));
          let stored: SessionMessage[] = [message(1, 10, 'user')];
          for (const turn of turns) {
            let pending = turnMessages(stored.length + 1, turn.calls, turn.answered);
            // The usual turn: the proxy recorded the answer after the last response, the request adds the client's results.
            if (turn.recorded && stored[stored.length - 1].message.role === 'user') {
              stored = [...stored, pending[0]];
              pending = pending.slice(1);
            }
            const session = sessionRecord({ lastSeq: stored.length, headVersionId: null, contextWindow, outputReserve: 1_000 });
            storing(cached.loader, stored);
            storing(uncached.loader, stored);
            const got = await outcome(cached.sut.proxyContext(session, 'anthropic', { maxTokens: 1_000 }, pending));
            const want = await outcome(uncached.sut.proxyContext(session, 'anthropic', { maxTokens: 1_000 }, pending));
            expect(got).toEqual(want);
            if ('fallback' in want && want.fallback) fitted += 1;
            // An accepted turn's messages are stored (read back as other objects); a refused one's never are.
            if (turn.accepted) stored = [...stored, ...pending.map((m) => ({ ...m, message: structuredClone(m.message) }))];
          }
        },
      ),
      { numRuns: 200 },
    );
    expect(fitted).toBeGreaterThan(0);
  });

  it("keeps the pass over a turn's stored messages for the next turn, never one that reaches into its pending messages", async () => {
    const { sut, loader } = setup();
    const stored = [message(1, 10, 'user'), ...turnMessages(2, [1], [true])];
    storing(loader, stored);
    const cache = (sut as unknown as { cache: { get(id: string, fingerprint: string): { valid?: { prefix: { end: number } } } | undefined } }).cache;
    const kept = (lastSeq: number) => cache.get('session-1', contextFingerprint(sessionRecord({ lastSeq, headVersionId: null })))?.valid?.prefix.end;
    // The request adds the client's tool results: the final part ends before the last stored assistant message (index 1).
    await sut.proxyContext(sessionRecord({ lastSeq: 2, headVersionId: null }), 'anthropic', {}, stored.slice(2));
    expect(kept(2)).toBe(1);
    // The request adds an answer and results: its final part ends before the pending answer (index 3), which may never be
    // stored; the earlier part stays.
    await sut.proxyContext(sessionRecord({ lastSeq: 3, headVersionId: null }), 'anthropic', {}, turnMessages(4, [3], [true]));
    expect(kept(3)).toBe(1);
  });
});
