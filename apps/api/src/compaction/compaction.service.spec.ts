// The API's compaction requests with their repositories, scheduler and context reads mocked (newTestService): the
// watermark's validation and compare-and-swap, job reports, and the dry run's wait for its job.
import { DomainError, ValidationFailed } from '@compactor/compaction';
import { EventPublisher } from '@compactor/jobs';
import { CompactionRepository, HeadPrefix } from '@compactor/persistence';
import { sessionRecord } from '@compactor/persistence/testing';
import { newTestService } from '@compactor/testing/unit';
import { API_CONFIG, ApiConfig } from '../config/api-config';
import { statusOf } from '../errors/domain-exception.filter';
import { ApiErrorCode, JobNotFound } from '../errors/http-errors';
import { ContextService } from '../sessions/context.service';
import { SessionsService } from '../sessions/sessions.service';
import { CompactionScheduler } from './compaction-scheduler';
import { CompactionService } from './compaction.service';

const T = 'tenant-1';

const HEAD: HeadPrefix = { versionId: 'version-3', number: 3, coversThroughSeq: 10, checkpoints: [], treatments: {}, watermarkSeq: 12 };

type JobView = NonNullable<Awaited<ReturnType<CompactionRepository['findJobView']>>>;
function jobView(overrides: Partial<JobView> = {}): JobView {
  const at = new Date('2026-11-01T00:00:00Z');
  return {
    id: 'job-1',
    sessionExternalId: 'ext-1',
    trigger: 'manual',
    status: 'queued',
    dryRun: false,
    reason: null,
    steps: null,
    tokensBefore: null,
    tokensAfter: null,
    llmCalls: 0,
    llmInputTokens: 0,
    llmOutputTokens: 0,
    llmCostUsd: '0.0125',
    durationMs: null,
    error: null,
    resultVersion: null,
    createdAt: at,
    startedAt: null,
    finishedAt: null,
    ...overrides,
  } as JobView;
}

function setup(config: Partial<ApiConfig> = {}) {
  const { sut, mocks } = newTestService(CompactionService, { provide: [[API_CONFIG, { DRY_RUN_TIMEOUT_MS: 5_000, ...config }]] });
  const sessions = mocks.get(SessionsService);
  const publisher = mocks.get(EventPublisher);
  publisher.notify.mockReturnValue(undefined);
  sessions.require.mockResolvedValue(sessionRecord({ lastSeq: 40 }));
  return { sut, sessions, compactions: mocks.get(CompactionRepository), scheduler: mocks.get(CompactionScheduler), contexts: mocks.get(ContextService), publisher };
}

describe('CompactionService (API)', () => {
  it('job: 404 for a job the tenant does not have; else its report with the cost as a number', async () => {
    const { sut, compactions } = setup();
    compactions.findJobView.mockResolvedValueOnce(null).mockResolvedValueOnce(jobView({ steps: ['mask', 'summarize'] }));
    const error = await sut.job(T, 'job-9').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobNotFound);
    expect(statusOf((error as DomainError).code as ApiErrorCode)).toBe(404);
    expect(compactions.findJobView).toHaveBeenCalledWith(T, 'job-9');
    await expect(sut.job(T, 'job-1')).resolves.toMatchObject({ id: 'job-1', sessionId: 'ext-1', steps: ['mask', 'summarize'], llmCostUsd: 0.0125, startedAt: null, createdAt: '2026-11-01T00:00:00.000Z' });
  });

  it('compact: schedules a manual run and answers its job at once', async () => {
    const { sut, scheduler, compactions } = setup();
    scheduler.schedule.mockResolvedValue({ jobId: 'job-1', queued: true });
    compactions.findJobView.mockResolvedValue(jobView());
    await expect(sut.compact(T, 'ext-1', { dryRun: false, format: 'canonical' })).resolves.toEqual({ job: expect.objectContaining({ id: 'job-1', status: 'queued' }) });
    expect(scheduler.schedule).toHaveBeenCalledWith(expect.objectContaining({ id: 'session-1' }), 'manual', { dryRun: false });
  });

  it('compact (dry run): waits for the job, then previews the context it would give and the tokens it would save', async () => {
    const { sut, scheduler, compactions, contexts } = setup();
    scheduler.schedule.mockResolvedValue({ jobId: 'job-1', queued: true });
    compactions.findJobView.mockResolvedValueOnce(jobView({ dryRun: true, status: 'running' })).mockResolvedValue(jobView({ dryRun: true, status: 'succeeded', tokensBefore: 50_000, tokensAfter: 20_000 }));
    const prefix = { coversThroughSeq: 30, checkpoints: [], treatments: {} };
    compactions.intermediate.mockResolvedValue({ dryRun: { status: 'succeeded', throughSeq: 40, prefix, ledger: null } });
    contexts.preview.mockResolvedValue({ messages: [] } as never);

    const answer = await sut.compact(T, 'ext-1', { dryRun: true, format: 'openai' });

    expect(contexts.preview).toHaveBeenCalledWith(T, 'ext-1', prefix, 40, 'openai');
    expect(answer).toEqual({ job: expect.objectContaining({ status: 'succeeded' }), savedTokens: 30_000, context: { messages: [] } });
    expect(compactions.findJobView).toHaveBeenCalledTimes(2);
  });

  it('compact (dry run): a job that did not succeed is answered as it is, without a preview', async () => {
    const { sut, scheduler, compactions, contexts } = setup();
    scheduler.schedule.mockResolvedValue({ jobId: 'job-1', queued: true });
    compactions.findJobView.mockResolvedValue(jobView({ dryRun: true, status: 'failed', error: 'invalid-policy' }));
    await expect(sut.compact(T, 'ext-1', { dryRun: true, format: 'openai' })).resolves.toEqual({ job: expect.objectContaining({ status: 'failed' }) });
    expect(compactions.intermediate).not.toHaveBeenCalled();
    expect(contexts.preview).not.toHaveBeenCalled();
  });

  it('advanceWatermark: refuses a seq outside the session (400 naming seq) before reading the head', async () => {
    const { sut, compactions } = setup();
    for (const seq of [0, 41]) {
      const error = await sut.advanceWatermark(T, 'ext-1', seq).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationFailed);
      expect((error as ValidationFailed).details).toMatchObject({ fields: [{ field: 'seq', message: 'must be a message of the session (1..40)' }] });
    }
    expect(compactions.head).not.toHaveBeenCalled();
  });

  it('advanceWatermark: only advances; one at or before the current watermark changes nothing', async () => {
    const { sut, compactions, scheduler } = setup();
    compactions.head.mockResolvedValue(HEAD);
    await expect(sut.advanceWatermark(T, 'ext-1', 12)).resolves.toMatchObject({ advanced: false, watermarkSeq: 12, jobId: null });
    expect(compactions.commit).not.toHaveBeenCalled();
    expect(scheduler.schedule).not.toHaveBeenCalled();
  });

  it('advanceWatermark: writes a version with the watermark by compare-and-swap, then schedules a watermark compaction', async () => {
    const { sut, compactions, scheduler, publisher } = setup();
    compactions.head.mockResolvedValue(HEAD);
    compactions.commit.mockResolvedValue('version-4');
    scheduler.schedule.mockResolvedValue({ jobId: 'job-2', queued: true });

    await expect(sut.advanceWatermark(T, 'ext-1')).resolves.toEqual({ advanced: true, reason: null, watermarkSeq: 40, jobId: 'job-2' });

    expect(compactions.commit).toHaveBeenCalledWith(expect.objectContaining({ cause: 'watermark', baseVersionId: 'version-3', watermarkSeq: 40, coversThroughSeq: 10, loadedThroughSeq: 40 }));
    expect(compactions.commit.mock.calls[0][0].events).toEqual([{ type: 'watermark-advanced', line: 'Watermark advanced to message 40 (was 12)' }]);
    expect(publisher.notify).toHaveBeenCalledWith('session-1');
    expect(scheduler.schedule).toHaveBeenCalledWith(expect.objectContaining({ id: 'session-1' }), 'watermark');
  });

  it('advanceWatermark: a head that moved meanwhile is 409, and nothing is scheduled', async () => {
    const { sut, compactions, scheduler, publisher } = setup();
    compactions.head.mockResolvedValue(HEAD);
    compactions.commit.mockResolvedValue(null);
    const error = await sut.advanceWatermark(T, 'ext-1', 20).catch((e: unknown) => e);
    expect(statusOf((error as DomainError).code as ApiErrorCode)).toBe(409);
    expect(scheduler.schedule).not.toHaveBeenCalled();
    expect(publisher.notify).not.toHaveBeenCalled();
  });
});
