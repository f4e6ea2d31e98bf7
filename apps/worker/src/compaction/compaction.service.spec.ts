// The compaction use case with its repositories, queue and summarizer mocked (newTestService): what a job does to the
// job row, the head and the queue on each branch. The preset run and its pure finalization (libs/compaction, tested
// there) are stubbed so each branch gets the outcome it needs; every other library function is the real one.
import { CompactionOutcome, FinalizedCompaction, finalizeCompaction, runPreset, sessionBudget, Summarizer, thresholdTokens, ValidationFailed } from '@compactor/compaction';
import { JobQueue, QueueUnavailable } from '@compactor/jobs';
import { CompactionRepository, ContextLoader, JobRecord, JobTakenOver, SessionRecord, SessionRepository } from '@compactor/persistence';
import { jobRecord, sessionRecord } from '@compactor/persistence/testing';
import { newTestService } from '@compactor/testing/unit';
import { Logger } from '@nestjs/common';
import { DelayedError } from 'bullmq';
import { WORKER_CONFIG, WorkerConfig } from '../config/worker-config';
import { CompactionProgress } from './compaction-progress';
import { COMPACTION_ENV_PARAMS, CompactionService, SUMMARIZER } from './compaction.service';
import { SpendCapReached, SpendCaps } from './spend-caps';

jest.mock('@compactor/compaction', () => ({
  ...jest.requireActual<object>('@compactor/compaction'),
  runPreset: jest.fn(),
  finalizeCompaction: jest.fn(),
}));
const runPresetMock = jest.mocked(runPreset);
const finalizeMock = jest.mocked(finalizeCompaction);

const POLICY = { preset: 'balanced' as const, overrides: {} };
/** The head the run starts from: version 3, nothing compacted yet. */
const HEAD = { versionId: 'version-3', number: 3, prefix: { coversThroughSeq: 0, checkpoints: [], treatments: {} } };

function outcome(overrides: Partial<CompactionOutcome> = {}): CompactionOutcome {
  return {
    status: 'succeeded',
    prefix: { coversThroughSeq: 30, checkpoints: [], treatments: {} },
    tokensBefore: 50_000,
    tokensAfter: 20_000,
    steps: ['summarize'],
    usage: { inputTokens: 900, outputTokens: 120, costUsd: 0.01 },
    llmCalls: 1,
    events: [{ type: 'compressed', line: 'Compacted 50,000 → 20,000 tokens' }],
    artifacts: [],
    ...overrides,
  } as CompactionOutcome;
}

function finalized(contextTokens: number): FinalizedCompaction {
  return {
    checkpoints: [],
    ledgerCheck: {} as FinalizedCompaction['ledgerCheck'],
    reliability: { score: 90, contextConfidence: 1 },
    events: [{ type: 'compressed', line: 'Compacted' }],
    artifactIds: [],
    prefixTokens: 1_000,
    contextTokens,
  };
}

const PAYLOAD = { jobId: 'job-1', sessionId: 'session-1', tenantId: 'tenant-1' };
const CONFIG = { COMPACTION_LLM_RETRY_WINDOW_MS: 600_000, COMPACTION_LLM_RETRY_DELAY_MS: 1_000 } as WorkerConfig;
const threshold = (session: SessionRecord) => thresholdTokens(sessionBudget(session), POLICY);

function setup(session: SessionRecord = sessionRecord(), job: JobRecord = jobRecord()) {
  const summarizer: Summarizer = { provider: 'openai', model: 'gpt-4o-mini', contextWindow: 128_000, deterministic: false, summarize: jest.fn() } as unknown as Summarizer;
  const { sut, mocks } = newTestService(CompactionService, {
    provide: [
      [SUMMARIZER, summarizer],
      [COMPACTION_ENV_PARAMS, {}],
      [WORKER_CONFIG, CONFIG],
    ],
  });
  const compactions = mocks.get(CompactionRepository);
  const sessions = mocks.get(SessionRepository);
  const loader = mocks.get(ContextLoader);
  const progress = mocks.get(CompactionProgress);
  const queue = mocks.get(JobQueue);
  compactions.startJob.mockResolvedValue(job);
  compactions.finishJob.mockResolvedValue(true as never);
  compactions.ledger.mockResolvedValue(null);
  compactions.saveLedger.mockResolvedValue(undefined as never);
  compactions.intermediate.mockResolvedValue({});
  compactions.deleteUnreferencedArtifacts.mockResolvedValue(undefined as never);
  sessions.findById.mockResolvedValue(session);
  sessions.holdCompactions.mockResolvedValue(undefined as never);
  loader.head.mockResolvedValue(HEAD);
  loader.messagesBetween.mockResolvedValue([
    { seq: 1, message: { role: 'user', blocks: [{ type: 'text', text: 'Fix the failing build in src/app.ts' }] }, tokens: 12 },
    { seq: 2, message: { role: 'assistant', blocks: [{ type: 'text', text: 'Looking at src/app.ts now.' }] }, tokens: 9 },
  ]);
  progress.started.mockResolvedValue(undefined);
  progress.record.mockResolvedValue(undefined);
  progress.committed.mockReturnValue(undefined);
  progress.announcing.mockImplementation((inner) => inner);
  return { sut, compactions, sessions, loader, progress, queue, spendCaps: mocks.get(SpendCaps), summarizer };
}

/** The data of the job row's last finishJob call. */
function lastFinish(compactions: ReturnType<typeof setup>['compactions']) {
  const call = compactions.finishJob.mock.calls.at(-1);
  if (!call) throw new Error('finishJob was not called');
  return { jobId: call[0], data: call[1], attempt: call[2] };
}

/**
 * The session's hold (set or lifted) was written before the job row read as finished: a client that waits for the job and
 * then appends finds it (written after, the quality bench's next append raced it and scheduled a run or not by timing).
 */
function expectHoldBeforeFinish(sessions: ReturnType<typeof setup>['sessions'], compactions: ReturnType<typeof setup>['compactions']) {
  const hold = sessions.holdCompactions.mock.invocationCallOrder.at(-1);
  const finished = compactions.finishJob.mock.invocationCallOrder.at(-1);
  expect(hold).toBeDefined();
  expect(finished).toBeDefined();
  expect(hold!).toBeLessThan(finished!);
}

beforeAll(() => Logger.overrideLogger(false));
beforeEach(() => {
  runPresetMock.mockReset();
  finalizeMock.mockReset();
});

describe('CompactionService.compact', () => {
  it('answers already-finished and touches nothing when the job row is no longer startable', async () => {
    const { sut, compactions, sessions } = setup();
    compactions.startJob.mockResolvedValue(null);
    await expect(sut.compact(PAYLOAD)).resolves.toEqual({ status: 'already-finished' });
    expect(sessions.findById).not.toHaveBeenCalled();
    expect(compactions.finishJob).not.toHaveBeenCalled();
  });

  it('skips a deleted session (session-deleted) without running the preset', async () => {
    const { sut, compactions, sessions } = setup();
    sessions.findById.mockResolvedValue(null);
    await expect(sut.compact(PAYLOAD)).resolves.toEqual({ status: 'skipped' });
    expect(lastFinish(compactions)).toMatchObject({ jobId: 'job-1', data: { status: 'skipped', reason: 'session-deleted' }, attempt: 1 });
    expect(runPresetMock).not.toHaveBeenCalled();
  });

  it('skips a preset that is not implemented, naming it', async () => {
    const { sut, compactions } = setup(sessionRecord({ policy: { preset: 'no-such-preset', overrides: {} } }));
    await expect(sut.compact(PAYLOAD)).resolves.toEqual({ status: 'skipped' });
    expect(lastFinish(compactions).data).toMatchObject({ status: 'skipped', reason: 'preset-not-implemented:no-such-preset' });
  });

  it('commits a succeeded run by compare-and-swap on the head it read, and finishes the job with the new version', async () => {
    const session = sessionRecord();
    const { sut, compactions, sessions, loader, progress, queue } = setup(session);
    runPresetMock.mockResolvedValue(outcome());
    finalizeMock.mockReturnValue(finalized(threshold(session) - 1));
    compactions.commit.mockResolvedValue('version-4');

    await expect(sut.compact(PAYLOAD)).resolves.toEqual({ status: 'succeeded', versionId: 'version-4' });

    const [commit] = compactions.commit.mock.calls[0];
    expect(commit).toMatchObject({ sessionId: 'session-1', jobId: 'job-1', attempt: 1, baseVersionId: 'version-3', coversThroughSeq: 30, loadedThroughSeq: 40, contextTokens: threshold(session) - 1 });
    expect(commit.snapshotBefore?.metadata).toMatchObject({ lastSeq: 40, contextTokens: 50_000, versionNumber: 3 });
    // The run covers the session's seqs as read at its start, and the preset runs on the head's prefix.
    expect(loader.messagesBetween).toHaveBeenCalledWith('session-1', 0, 40);
    expect(runPresetMock.mock.calls[0][1].prefix).toBe(HEAD.prefix);
    expect(runPresetMock.mock.calls[0][1]).toMatchObject({ budget: sessionBudget(session).budget, trigger: 'threshold' });
    expect(lastFinish(compactions).data).toMatchObject({ status: 'succeeded', resultVersionId: 'version-4', tokensBefore: 50_000, tokensAfter: 20_000, llmCalls: 1, baseVersionId: 'version-3' });
    expect(progress.committed).toHaveBeenCalledWith('session-1');
    expect(compactions.deleteUnreferencedArtifacts).toHaveBeenCalledWith('session-1');
    // Below the trigger afterwards and no appends meanwhile: no hold, no new job.
    expect(sessions.holdCompactions).not.toHaveBeenCalled();
    expect(compactions.createJob).not.toHaveBeenCalled();
    expect(queue.enqueueCompaction).not.toHaveBeenCalled();
  });

  it('saves the facts ledger through the messages it read before the preset runs', async () => {
    const { sut, compactions } = setup();
    runPresetMock.mockResolvedValue(outcome({ status: 'skipped', reason: 'unchanged' }));
    await sut.compact(PAYLOAD);
    expect(compactions.saveLedger).toHaveBeenCalledWith('session-1', 2, expect.anything());
    expect(compactions.saveLedger.mock.invocationCallOrder[0]).toBeLessThan(runPresetMock.mock.invocationCallOrder[0]);
  });

  it('ends skipped with the preset reason and commits nothing when the run changed nothing', async () => {
    const session = sessionRecord({ contextTokens: 1_000 });
    const { sut, compactions, sessions, progress } = setup(session);
    runPresetMock.mockResolvedValue(outcome({ status: 'skipped', reason: 'unchanged', events: [{ type: 'compression-skipped', line: 'Nothing to compact' }] }));

    await expect(sut.compact(PAYLOAD)).resolves.toEqual({ status: 'skipped' });

    expect(compactions.commit).not.toHaveBeenCalled();
    expect(finalizeMock).not.toHaveBeenCalled();
    expect(lastFinish(compactions).data).toMatchObject({ status: 'skipped', reason: 'unchanged', error: undefined });
    expect(progress.record).toHaveBeenCalledWith('session-1', 'tenant-1', [{ type: 'compression-skipped', line: 'Nothing to compact', data: { jobId: 'job-1' } }]);
    // Under its trigger: automatic compactions are not held.
    expect(sessions.holdCompactions).not.toHaveBeenCalled();
  });

  it('holds automatic compactions when a threshold run over the trigger could not compact (no compaction loop)', async () => {
    const over = sessionRecord({ contextTokens: 200_000 });
    const { sut, compactions, sessions, progress } = setup(over);
    runPresetMock.mockResolvedValue(outcome({ status: 'skipped', reason: 'history-too-short' }));

    await sut.compact(PAYLOAD);

    expect(lastFinish(compactions).data).toMatchObject({ status: 'skipped', reason: 'history-too-short' });
    const [sessionId, until] = sessions.holdCompactions.mock.calls[0];
    expect(sessionId).toBe('session-1');
    expect(until).toBeGreaterThan(200_000);
    expect(progress.record).toHaveBeenLastCalledWith('session-1', 'tenant-1', [expect.objectContaining({ type: 'compaction-held', data: expect.objectContaining({ contextTokens: 200_000, threshold: threshold(over) }) })]);
    expectHoldBeforeFinish(sessions, compactions);
  });

  it('does not hold after a manual run that could not compact', async () => {
    const { sut, sessions } = setup(sessionRecord({ contextTokens: 200_000 }), jobRecord({ trigger: 'manual' }));
    runPresetMock.mockResolvedValue(outcome({ status: 'skipped', reason: 'history-too-short' }));
    await sut.compact(PAYLOAD);
    expect(sessions.holdCompactions).not.toHaveBeenCalled();
  });

  it('lost the head compare-and-swap: ends skipped (head-moved), records why, and queues a run on the new head', async () => {
    const session = sessionRecord();
    const { sut, compactions, progress, queue } = setup(session);
    runPresetMock.mockResolvedValue(outcome());
    finalizeMock.mockReturnValue(finalized(10_000));
    compactions.commit.mockResolvedValue(null);
    compactions.createJob.mockResolvedValue('job-2');
    queue.enqueueCompaction.mockResolvedValue({ kind: 'enqueued' });

    await expect(sut.compact(PAYLOAD)).resolves.toEqual({ status: 'skipped' });

    expect(lastFinish(compactions).data).toMatchObject({ status: 'skipped', reason: 'head-moved' });
    expect(progress.record).toHaveBeenCalledWith('session-1', 'tenant-1', [expect.objectContaining({ type: 'compression-skipped' })]);
    expect(compactions.createJob).toHaveBeenCalledWith({ sessionId: 'session-1', tenantId: 'tenant-1', trigger: 'threshold', policy: POLICY });
    expect(queue.enqueueCompaction).toHaveBeenCalledWith({ jobId: 'job-2', sessionId: 'session-1', tenantId: 'tenant-1' });
    expect(progress.committed).not.toHaveBeenCalled();
    expect(compactions.deleteUnreferencedArtifacts).not.toHaveBeenCalled();
  });

  it('re-queues after a commit when appends meanwhile put the session over its trigger again', async () => {
    const session = sessionRecord();
    const { sut, compactions, sessions, queue } = setup(session);
    runPresetMock.mockResolvedValue(outcome());
    finalizeMock.mockReturnValue(finalized(10_000));
    compactions.commit.mockResolvedValue('version-4');
    const grown = sessionRecord({ lastSeq: 55, contextTokens: threshold(session) + 5_000, headVersionId: 'version-4' });
    sessions.findById.mockResolvedValueOnce(session).mockResolvedValueOnce(grown);
    compactions.createJob.mockResolvedValue('job-2');
    queue.enqueueCompaction.mockResolvedValue({ kind: 'folded', into: 'job-0' });
    compactions.supersede.mockResolvedValue(undefined as never);

    await expect(sut.compact(PAYLOAD)).resolves.toEqual({ status: 'succeeded', versionId: 'version-4' });

    expect(compactions.createJob).toHaveBeenCalledWith(expect.objectContaining({ sessionId: 'session-1', trigger: 'threshold' }));
    // Folded into a job already waiting: the new row says which one answers it.
    expect(compactions.supersede).toHaveBeenCalledWith('job-2', 'job-0');
  });

  it('does not re-queue when the appends meanwhile stay under the trigger, or when there were none', async () => {
    for (const after of [sessionRecord({ lastSeq: 41, contextTokens: 10_000 }), sessionRecord({ contextTokens: 500_000 })]) {
      const { sut, compactions, sessions } = setup();
      runPresetMock.mockResolvedValue(outcome());
      finalizeMock.mockReturnValue(finalized(10_000));
      compactions.commit.mockResolvedValue('version-4');
      sessions.findById.mockResolvedValueOnce(sessionRecord()).mockResolvedValueOnce(after);
      await sut.compact(PAYLOAD);
      expect(compactions.createJob).not.toHaveBeenCalled();
    }
  });

  it('holds when the committed context is still over the trigger, and lifts an earlier hold when it is not', async () => {
    const session = sessionRecord();
    const held = setup(session);
    runPresetMock.mockResolvedValue(outcome());
    finalizeMock.mockReturnValue(finalized(threshold(session) + 100));
    held.compactions.commit.mockResolvedValue('version-4');
    await held.sut.compact(PAYLOAD);
    expect(held.sessions.holdCompactions).toHaveBeenCalledWith('session-1', expect.any(Number), null);
    expectHoldBeforeFinish(held.sessions, held.compactions);

    const lifted = setup(sessionRecord({ compactionHoldTokens: 90_000 }));
    finalizeMock.mockReturnValue(finalized(10_000));
    lifted.compactions.commit.mockResolvedValue('version-4');
    await lifted.sut.compact(PAYLOAD);
    expect(lifted.sessions.holdCompactions).toHaveBeenCalledWith('session-1', null);
    expectHoldBeforeFinish(lifted.sessions, lifted.compactions);
  });

  it('a re-queue while Redis is away leaves the new row queued for the sweep instead of failing the job', async () => {
    const { sut, compactions, queue } = setup();
    runPresetMock.mockResolvedValue(outcome());
    finalizeMock.mockReturnValue(finalized(10_000));
    compactions.commit.mockResolvedValue(null);
    compactions.createJob.mockResolvedValue('job-2');
    queue.enqueueCompaction.mockRejectedValue(new QueueUnavailable(new Error('connect ECONNREFUSED')));
    await expect(sut.compact(PAYLOAD)).resolves.toEqual({ status: 'skipped' });
    expect(compactions.supersede).not.toHaveBeenCalled();
  });

  it('a dry run stores its result on the job and never commits, saves the ledger or announces progress', async () => {
    const { sut, compactions, progress } = setup(sessionRecord(), jobRecord({ dryRun: true, trigger: 'manual' }));
    runPresetMock.mockResolvedValue(outcome());
    compactions.saveIntermediate.mockResolvedValue(undefined as never);

    await expect(sut.compact(PAYLOAD)).resolves.toEqual({ status: 'dry-run' });

    expect(compactions.commit).not.toHaveBeenCalled();
    expect(compactions.saveLedger).not.toHaveBeenCalled();
    expect(progress.started).not.toHaveBeenCalled();
    const [jobId, key, value] = compactions.saveIntermediate.mock.calls[0];
    expect([jobId, key]).toEqual(['job-1', 'dryRun']);
    expect(value).toMatchObject({ status: 'succeeded', throughSeq: 40, prefix: { coversThroughSeq: 30 } });
    expect(lastFinish(compactions).data).toMatchObject({ status: 'succeeded', tokensAfter: 20_000 });
  });

  it('an invalid policy override fails the job with invalid-policy and is not retried', async () => {
    const { sut, compactions, progress } = setup();
    runPresetMock.mockRejectedValue(new ValidationFailed([{ field: 'policy.params.keepRecent', message: 'must be a number' }]));
    await expect(sut.compact(PAYLOAD)).resolves.toEqual({ status: 'failed' });
    expect(lastFinish(compactions).data.status).toBe('failed');
    expect(lastFinish(compactions).data.error).toMatch(/^invalid-policy: /);
    expect(progress.record).toHaveBeenCalledWith('session-1', 'tenant-1', [expect.objectContaining({ type: 'compression-error' })]);
  });

  it('the spend cap ends the job skipped (spend-cap) with what it spent, and holds a threshold run over its trigger', async () => {
    const { sut, compactions, sessions, progress } = setup(sessionRecord({ contextTokens: 200_000 }));
    runPresetMock.mockRejectedValue(new SpendCapReached('summarizerTokensPerDay', 100_000, 100_500));
    await expect(sut.compact(PAYLOAD)).resolves.toEqual({ status: 'skipped' });
    expect(lastFinish(compactions).data).toMatchObject({ status: 'skipped', reason: 'spend-cap', llmInputTokens: 0, llmCostUsd: 0 });
    expect(progress.record).toHaveBeenCalledWith('session-1', 'tenant-1', [expect.objectContaining({ type: 'spend-cap', data: { jobId: 'job-1', limit: 'summarizerTokensPerDay', cap: 100_000, spent: 100_500 } })]);
    expect(sessions.holdCompactions).toHaveBeenCalledWith('session-1', expect.any(Number), null);
    expectHoldBeforeFinish(sessions, compactions);
  });

  it('an LLM outage within the retry window puts the job back in the queue (retryLater) before finishing the row', async () => {
    const { sut, compactions, progress } = setup();
    runPresetMock.mockResolvedValue(outcome({ status: 'failed', reason: 'llm-timeout' }));
    const retryLater = jest.fn(async (_delayMs: number): Promise<never> => {
      throw new DelayedError();
    });

    await expect(sut.compact(PAYLOAD, { retryLater })).rejects.toBeInstanceOf(DelayedError);

    const [delay] = retryLater.mock.calls[0];
    expect(delay).toBeGreaterThanOrEqual(CONFIG.COMPACTION_LLM_RETRY_DELAY_MS / 2);
    expect(delay).toBeLessThanOrEqual(CONFIG.COMPACTION_LLM_RETRY_DELAY_MS);
    expect(progress.record).toHaveBeenCalledWith('session-1', 'tenant-1', [expect.objectContaining({ type: 'warning' })]);
    // Delayed, not failed: the row is left running for the next run.
    expect(compactions.finishJob).not.toHaveBeenCalled();
  });

  it('an LLM outage past the retry window, or a non-outage failure, ends the job failed with the reason', async () => {
    for (const [job, reason] of [
      [jobRecord({ createdAt: new Date(Date.now() - CONFIG.COMPACTION_LLM_RETRY_WINDOW_MS - 1_000) }), 'llm-timeout'],
      [jobRecord(), 'llm-auth'],
    ] as const) {
      const { sut, compactions } = setup(sessionRecord({ contextTokens: 1_000 }), job);
      runPresetMock.mockResolvedValue(outcome({ status: 'failed', reason }));
      const retryLater = jest.fn(async (): Promise<never> => {
        throw new DelayedError();
      });
      await expect(sut.compact(PAYLOAD, { retryLater })).resolves.toEqual({ status: 'failed' });
      expect(retryLater).not.toHaveBeenCalled();
      expect(lastFinish(compactions).data).toMatchObject({ status: 'failed', reason, error: reason });
    }
  });

  it('a threshold run that an LLM outage failed past the retry window holds with reason llm-outage (the sweep lifts it); another failure holds without one', async () => {
    for (const [reason, holdReason] of [
      ['llm-network', 'llm-outage'],
      ['llm-server', 'llm-outage'],
      ['llm-auth', null],
    ] as const) {
      const over = sessionRecord({ contextTokens: 200_000 });
      const { sut, sessions, progress } = setup(over, jobRecord({ createdAt: new Date(Date.now() - CONFIG.COMPACTION_LLM_RETRY_WINDOW_MS - 1_000) }));
      runPresetMock.mockResolvedValue(outcome({ status: 'failed', reason }));
      await expect(sut.compact(PAYLOAD)).resolves.toEqual({ status: 'failed' });
      expect([reason, sessions.holdCompactions.mock.calls[0]]).toEqual([reason, ['session-1', expect.any(Number), holdReason]]);
      expect(progress.record).toHaveBeenLastCalledWith('session-1', 'tenant-1', [
        expect.objectContaining({ type: 'compaction-held', data: holdReason ? expect.objectContaining({ reason: holdReason }) : expect.not.objectContaining({ reason: expect.anything() }) }),
      ]);
    }
  });

  it('a success after a lifted llm-outage hold ends the run of holds (count back to 0)', async () => {
    const { sut, sessions, compactions } = setup(sessionRecord({ compactionHoldTokens: null, compactionHoldReason: null, compactionHoldCount: 2 }));
    compactions.commit.mockResolvedValue('version-4');
    runPresetMock.mockResolvedValue(outcome());
    finalizeMock.mockReturnValue(finalized(1_000));
    await sut.compact(PAYLOAD);
    expect(sessions.holdCompactions).toHaveBeenCalledWith('session-1', null);
  });

  it('an infrastructure error is rethrown for BullMQ to retry; only the final attempt marks the row failed', async () => {
    const notFinal = setup();
    notFinal.loader.messagesBetween.mockRejectedValue(new Error('connection terminated'));
    await expect(notFinal.sut.compact(PAYLOAD, { finalAttempt: false })).rejects.toThrow('connection terminated');
    expect(notFinal.compactions.finishJob).not.toHaveBeenCalled();

    const final = setup(sessionRecord(), jobRecord({ attempts: 3 }));
    final.loader.messagesBetween.mockRejectedValue(new Error('connection terminated'));
    await expect(final.sut.compact(PAYLOAD, { finalAttempt: true })).rejects.toThrow('connection terminated');
    const finished = lastFinish(final.compactions);
    expect(finished).toMatchObject({ jobId: 'job-1', data: { status: 'failed' }, attempt: 3 });
    // The row, which tenants read, carries the failure's code, not the raw message.
    expect(finished.data.error).not.toContain('connection terminated');
  });

  it('a run taken over by another worker stops quietly: no failure on the row, nothing rethrown', async () => {
    const { sut, compactions } = setup(sessionRecord(), jobRecord({ attempts: 2 }));
    runPresetMock.mockRejectedValue(new JobTakenOver('job-1', 2));
    await expect(sut.compact(PAYLOAD, { finalAttempt: true })).resolves.toEqual({ status: 'taken-over' });
    expect(compactions.finishJob).not.toHaveBeenCalled();
  });

  it('before each paid summarizer call, checks it still owns the job and the tenant has spend left; saves each summary', async () => {
    const { sut, compactions, spendCaps, summarizer } = setup();
    compactions.ownsJob.mockResolvedValueOnce(true).mockResolvedValueOnce(false);
    compactions.saveIntermediate.mockResolvedValue(undefined as never);
    spendCaps.check.mockResolvedValue(undefined);
    const answer = { text: 'summary', usage: { inputTokens: 10, outputTokens: 2, costUsd: 0 }, provider: 'openai', model: 'gpt-4o-mini', attempts: 1 };
    jest.mocked(summarizer.summarize).mockResolvedValue(answer);
    runPresetMock.mockImplementation(async (_policy, input) => {
      await input.summarizer.summarize({ messages: [], instructions: 'first' } as never);
      await input.summarizer.summarize({ messages: [], instructions: 'second' } as never);
      return outcome();
    });

    await expect(sut.compact(PAYLOAD)).resolves.toEqual({ status: 'taken-over' });

    expect(compactions.ownsJob).toHaveBeenNthCalledWith(1, 'job-1', 1);
    expect(spendCaps.check).toHaveBeenCalledTimes(1);
    // Given the run's running spend (the object the summarizer keeps adding to: 12 tokens once the first call answered).
    expect(spendCaps.check).toHaveBeenCalledWith('tenant-1', { tokens: 12, costUsd: 0 });
    // The second call was fenced off before it was paid for; the first one's summary is saved on the job.
    expect(summarizer.summarize).toHaveBeenCalledTimes(1);
    expect(compactions.saveIntermediate).toHaveBeenCalledWith('job-1', expect.stringMatching(/^summary:/), answer);
    expect(compactions.commit).not.toHaveBeenCalled();
  });
});
