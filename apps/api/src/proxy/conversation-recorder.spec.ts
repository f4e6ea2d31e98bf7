// The proxy's ConversationRecorder with the append path, the conversation store, the lock and the logger mocked
// (newTestService): where a request's messages and its answer are written, under which name and expected seq, what a
// lost race does (nothing, quietly), and the recalibration from the upstream's reported tokens.
import { SessionRepository } from '@compactor/persistence';
import { sessionRecord } from '@compactor/persistence/testing';
import { newTestService } from '@compactor/testing/unit';
import type { Logger } from 'pino';
import { LOGGER } from '../logging/logger';
import { AppendService, HistoryMoved } from '../sessions/append.service';
import { AppendMessagesResponse } from '../sessions/append.dto';
import { Committed, ConversationRecorder } from './conversation-recorder';
import { ConversationStore } from './conversation-store';
import { KeyedLock } from './session-lock';

const T = 'tenant-1';
const ANSWER = { role: 'assistant', content: [{ type: 'text', text: 'Done: the tests pass.' }] };

function setup() {
  const { sut, mocks } = newTestService(ConversationRecorder);
  const appends = mocks.get(AppendService);
  const store = mocks.get(ConversationStore);
  const sessions = mocks.get(SessionRepository);
  const locks = mocks.get(KeyedLock);
  const logger = mocks.get<Logger>(LOGGER);
  // The lock runs its task at once; the test waits for what it started.
  const tasks: Promise<unknown>[] = [];
  locks.run.mockImplementation((_key, task) => {
    const running = task();
    tasks.push(running);
    return running;
  });
  store.extend.mockReturnValue(undefined);
  const settled = () => Promise.all(tasks);
  return { sut, appends, store, sessions, locks, logger, settled };
}

const appended = (firstSeq: number, lastSeq: number) => ({ sessionId: 'ext-1', firstSeq, lastSeq }) as AppendMessagesResponse;

describe('ConversationRecorder.target', () => {
  it("commits a request's pending messages only when the upstream accepted it, and settles the lock's release either way", async () => {
    const { sut } = setup();
    const committed: Committed = { session: sessionRecord(), afterSeq: 42 };
    const write = jest.fn(async () => committed);
    const accepted = sut.pendingWrite([], 'ext-1', write);
    await expect(sut.target({ session: sessionRecord(), pending: accepted }, true)).resolves.toBe(committed);
    await expect(accepted.release.promise).resolves.toBe(committed);
    expect(write).toHaveBeenCalledTimes(1);

    const refusedWrite = jest.fn(async () => committed);
    const refused = sut.pendingWrite([], 'ext-1', refusedWrite);
    await expect(sut.target({ session: sessionRecord(), pending: refused }, false)).resolves.toBeUndefined();
    await expect(refused.release.promise).resolves.toBeUndefined();
    expect(refusedWrite).not.toHaveBeenCalled();
  });

  it('records after the seq the resolver named, or nowhere when it named none', async () => {
    const { sut } = setup();
    const session = sessionRecord();
    await expect(sut.target({ session, recordAfterSeq: 40 }, true)).resolves.toEqual({ session, afterSeq: 40 });
    expect(sut.target({ session }, true)).toBeUndefined();
  });

  it('a pending write that fails leaves the answer unrecorded: logged, unless the history moved (a lost race)', async () => {
    const { sut, logger } = setup();
    const lost = sut.pendingWrite([], 'ext-1', async () => {
      throw new HistoryMoved(40, 41);
    });
    await expect(lost.commit()).resolves.toBeUndefined();
    expect(logger.warn).not.toHaveBeenCalled();

    const broken = sut.pendingWrite([], 'ext-1', async () => {
      throw new Error('deadlock detected');
    });
    await expect(broken.commit()).resolves.toBeUndefined();
    expect(logger.warn).toHaveBeenCalledWith({ sessionId: 'ext-1', reason: 'deadlock detected' }, 'proxy: new messages not stored');
  });
});

describe('ConversationRecorder.answerRecorder', () => {
  it("appends a complete answer after the request's messages, on the conversation's lock, and extends the stored keys", async () => {
    const { sut, appends, store, locks, settled } = setup();
    appends.append.mockResolvedValue(appended(43, 43));
    const into: Committed = { session: sessionRecord(), afterSeq: 42 };

    sut.answerRecorder('anthropic', 'lock-key', T, true, Promise.resolve(into), 1_000).onEnd(ANSWER, 200, false);
    await settled();

    expect(locks.run).toHaveBeenCalledWith('lock-key', expect.any(Function));
    expect(appends.append).toHaveBeenCalledWith(T, 'ext-1', { messages: [ANSWER], format: 'anthropic' }, undefined, { expectLastSeq: 42, expectSessionId: 'session-1', appendedTokens: 'charge' });
    expect(store.extend).toHaveBeenCalledWith('session-1', 42, [expect.anything()]);
  });

  it('records nothing for an answer that was not complete, a client that went away, or a request not stored', async () => {
    const { sut, appends, locks, settled } = setup();
    const into = Promise.resolve({ session: sessionRecord(), afterSeq: 42 });
    sut.answerRecorder('anthropic', 'k', T, false, into, 1_000).onEnd(undefined, 200, false);
    sut.answerRecorder('anthropic', 'k', T, false, into, 1_000).onEnd(ANSWER, 200, true);
    expect(locks.run).not.toHaveBeenCalled();

    sut.answerRecorder('anthropic', 'k', T, false, Promise.resolve(undefined), 1_000).onEnd(ANSWER, 200, false);
    await settled();
    expect(appends.append).not.toHaveBeenCalled();
  });

  it('appends under the new name of a session moved aside meanwhile (the append checks the internal id)', async () => {
    const { sut, appends, settled } = setup();
    appends.append.mockResolvedValue(appended(43, 43));
    sut.moved('session-1', 'ext-1~oneshot');
    sut.answerRecorder('anthropic', 'k', T, false, Promise.resolve({ session: sessionRecord(), afterSeq: 42 }), 1_000).onEnd(ANSWER, 200, false);
    await settled();
    expect(appends.append.mock.calls[0][1]).toBe('ext-1~oneshot');
    expect(appends.append.mock.calls[0][4]).toMatchObject({ expectSessionId: 'session-1' });
  });

  it('an answer another request of the conversation already stored (HistoryMoved) is dropped quietly; other failures are logged', async () => {
    const { sut, appends, store, logger, settled } = setup();
    const into = Promise.resolve({ session: sessionRecord(), afterSeq: 42 });
    appends.append.mockRejectedValueOnce(new HistoryMoved(42, 44)).mockRejectedValueOnce(new Error('pool exhausted'));
    sut.answerRecorder('anthropic', 'k', T, false, into, 1_000).onEnd(ANSWER, 200, false);
    await settled();
    expect(logger.warn).not.toHaveBeenCalled();

    sut.answerRecorder('anthropic', 'k', T, false, into, 1_000).onEnd(ANSWER, 200, false);
    await settled();
    expect(logger.warn).toHaveBeenCalledWith({ sessionId: 'ext-1', reason: 'pool exhausted' }, 'proxy: the answer was not recorded');
    expect(store.extend).not.toHaveBeenCalled();
  });

  it("stores a Responses answer's output items as canonical messages; output that does not parse is logged, not appended", async () => {
    const { sut, appends, logger, settled } = setup();
    appends.append.mockResolvedValue(appended(43, 43));
    const into = Promise.resolve({ session: sessionRecord(), afterSeq: 42 });
    const output = [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Done.' }] }];
    sut.answerRecorder('responses', 'k', T, false, into, 1_000).onEnd({ output }, 200, false);
    await settled();
    expect(appends.append.mock.calls[0][2]).toMatchObject({ format: 'canonical', messages: [expect.objectContaining({ role: 'assistant' })] });

    sut.answerRecorder('responses', 'k', T, false, into, 1_000).onEnd({ output: [42] }, 200, false);
    await settled();
    expect(appends.append).toHaveBeenCalledTimes(1);
    expect(logger.warn).toHaveBeenCalledWith(expect.objectContaining({ reason: expect.stringContaining("the answer's output items do not parse") }), 'proxy: the answer was not recorded');
  });

  it("recalibrates the session from the upstream's reported prompt tokens, only when it moves by 2% or more", async () => {
    const { sut, appends, sessions, settled } = setup();
    appends.append.mockResolvedValue(appended(43, 43));
    sessions.recalibrate.mockResolvedValue(undefined as never);
    const session = sessionRecord({ model: 'claude-sonnet-4-5', calibration: 1 });
    const into = Promise.resolve({ session, afterSeq: 42 });

    sut.answerRecorder('anthropic', 'k', T, false, into, 1_000).onEnd(ANSWER, 200, false, 1_200);
    await settled();
    expect(sessions.recalibrate).toHaveBeenCalledWith('session-1', 1.1);

    sut.answerRecorder('anthropic', 'k', T, false, into, 1_000).onEnd(ANSWER, 200, false, 1_010);
    sut.answerRecorder('anthropic', 'k', T, false, into, 1_000).onEnd(ANSWER, 200, false);
    await settled();
    expect(sessions.recalibrate).toHaveBeenCalledTimes(1);
  });
});

describe('ConversationRecorder.appendAll', () => {
  it('appends 500 messages at a time, each batch expecting the last seq the previous one left; creation fields only on the first', async () => {
    const { sut, appends } = setup();
    const rows = Array.from({ length: 1_200 }, (_, k) => ({ role: k % 2 ? 'assistant' : 'user', content: `m${k}` }));
    let lastSeq = 0;
    appends.append.mockImplementation(async (_t, _e, body, _key, options) => {
      const firstSeq = lastSeq + 1;
      lastSeq += body.messages.length;
      options?.onAppended?.(sessionRecord({ lastSeq }));
      return appended(firstSeq, lastSeq);
    });

    const result = await sut.appendAll(T, 'ext-1', 'anthropic', rows, { expectLastSeq: 0, session: null, model: 'gpt-4o', policy: { preset: 'factor3', overrides: {} }, system: 'Be brief', precounted: { model: 'gpt-4o', tokens: [5] } });

    expect(result).toMatchObject({ firstSeq: 1, session: { lastSeq: 1_200 } });
    const calls = appends.append.mock.calls.map(([, , body, , options]) => ({ n: body.messages.length, model: body.model, system: body.system, expect: options?.expectLastSeq, precounted: options?.precounted }));
    expect(calls).toEqual([
      { n: 500, model: 'gpt-4o', system: 'Be brief', expect: 0, precounted: undefined },
      { n: 500, model: undefined, system: undefined, expect: 500, precounted: undefined },
      { n: 200, model: undefined, system: undefined, expect: 1_000, precounted: undefined },
    ]);
  });

  it('passes the precounted tokens when the append is one batch', async () => {
    const { sut, appends } = setup();
    appends.append.mockImplementation(async (_t, _e, _body, _key, options) => {
      options?.onAppended?.(sessionRecord({ lastSeq: 2 }));
      return appended(1, 2);
    });
    await sut.appendAll(T, 'ext-1', 'openai', [{}, {}], { expectLastSeq: 0, session: null, precounted: { model: 'gpt-4o', tokens: [5] } });
    expect(appends.append.mock.calls[0][4]).toMatchObject({ precounted: { model: 'gpt-4o', tokens: [5] }, appendedTokens: 'charge' });
  });

  it('HistoryMoved when no append reported the session (nothing was stored)', async () => {
    const { sut, appends } = setup();
    appends.append.mockResolvedValue(appended(1, 1));
    await expect(sut.appendAll(T, 'ext-1', 'openai', [{}], { expectLastSeq: 3, session: null })).rejects.toBeInstanceOf(HistoryMoved);
  });
});
