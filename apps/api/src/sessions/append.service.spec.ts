// The append path with its repositories, counter, scheduler and rate limits mocked (newTestService). The append
// repository's stand-in runs the service's plan on the locked row as the real one does (tested on PostgreSQL in the
// int-specs), so these tests see what the plan decides: seqs, usage, the compaction trigger, the refusals.
import { sessionBudget, thresholdTokens, ValidationFailed } from '@compactor/compaction';
import { EventPublisher } from '@compactor/jobs';
import { AppendPlan, AppendRepository, AppendRequest, EventRepository, MessageRepository, SessionRecord, SessionRepository } from '@compactor/persistence';
import { sessionRecord } from '@compactor/persistence/testing';
import { newTestService } from '@compactor/testing/unit';
import { createHash } from 'node:crypto';
import { CompactionScheduler } from '../compaction/compaction-scheduler';
import { statusOf } from '../errors/domain-exception.filter';
import { ApiErrorCode, IdempotencyKeyReused } from '../errors/http-errors';
import { RateLimits } from '../limits/rate-limits';
import { TenantDefaults } from '../tenant/tenant-defaults';
import { MessageTokenCounter } from '../tokens/message-token-counter';
import { AppendBody } from './append.dto';
import { AppendService, HistoryMoved } from './append.service';

const T = 'tenant-1';
const TOKENS_PER_MESSAGE = 10;
const POLICY = { preset: 'balanced' as const, overrides: {} };

const body = (overrides: Partial<AppendBody> = {}): AppendBody => ({
  format: 'anthropic',
  messages: [
    { role: 'user', content: 'Run the tests' },
    { role: 'assistant', content: 'All 12 pass.' },
  ],
  ...overrides,
});

/** The append repository as far as the service sees it: plans on `locked` and writes the plan's rows after its last seq. */
function appendingTo(locked: SessionRecord, created = false) {
  const plans: AppendPlan[] = [];
  const append = async (request: AppendRequest) => {
    const plan = await request.plan(locked, created, async () => []);
    plans.push(plan);
    const firstSeq = locked.lastSeq + 1;
    const lastSeq = locked.lastSeq + plan.rows.length;
    return { kind: 'appended' as const, session: { ...locked, lastSeq, contextTokens: plan.contextTokens }, created, firstSeq, lastSeq, response: plan.respond(firstSeq, lastSeq) };
  };
  return { append, plans };
}

function setup() {
  const { sut, mocks } = newTestService(AppendService);
  const sessions = mocks.get(SessionRepository);
  const appends = mocks.get(AppendRepository);
  const messages = mocks.get(MessageRepository);
  const counter = mocks.get(MessageTokenCounter);
  const scheduler = mocks.get(CompactionScheduler);
  const publisher = mocks.get(EventPublisher);
  const events = mocks.get(EventRepository);
  const tenantDefaults = mocks.get(TenantDefaults);
  const rateLimits = mocks.get(RateLimits);
  const refund = jest.fn();
  counter.count.mockImplementation(async (list) => list.map(() => TOKENS_PER_MESSAGE));
  rateLimits.reserveAppendedTokens.mockResolvedValue(refund);
  publisher.notify.mockReturnValue(undefined);
  return { sut, sessions, appends, messages, counter, scheduler, publisher, events, tenantDefaults, rateLimits, refund };
}

describe('AppendService.append', () => {
  it('creates a session with the tenant default policy, reserves the counted tokens and answers seqs and usage', async () => {
    const s = setup();
    s.sessions.find.mockResolvedValue(null);
    s.tenantDefaults.policy.mockResolvedValue({ preset: 'factor3', overrides: {} });
    const fresh = sessionRecord({ lastSeq: 0, contextTokens: 0, historyTokens: 0, lastRole: null, policy: { preset: 'factor3', overrides: {} }, model: 'gpt-4o' });
    const repo = appendingTo(fresh, true);
    s.appends.append.mockImplementation(repo.append);

    const answer = await s.sut.append(T, 'ext-1', body({ model: 'gpt-4o' }));

    const [request] = s.appends.append.mock.calls[0];
    expect(request).toMatchObject({ tenantId: T, externalId: 'ext-1', create: { model: 'gpt-4o', policy: { preset: 'factor3', overrides: {} } }, observed: null, idempotency: undefined });
    expect(s.rateLimits.reserveAppendedTokens).toHaveBeenCalledWith(T, 2 * TOKENS_PER_MESSAGE);
    expect(s.refund).not.toHaveBeenCalled();
    expect(answer).toMatchObject({ sessionId: 'ext-1', firstSeq: 1, lastSeq: 2, usage: { contextTokens: 2 * TOKENS_PER_MESSAGE }, compaction: { scheduled: false, reason: 'below-threshold' } });
    expect(repo.plans[0].rows.map((r) => [r.role, r.tokens, r.format])).toEqual([
      ['user', TOKENS_PER_MESSAGE, 'anthropic'],
      ['assistant', TOKENS_PER_MESSAGE, 'anthropic'],
    ]);
    expect(repo.plans[0].lastRole).toBe('assistant');
    expect(s.scheduler.schedule).not.toHaveBeenCalled();
  });

  it('warns that creation-only fields were ignored on an existing session, and never asks for the tenant default', async () => {
    const s = setup();
    const existing = sessionRecord({ lastSeq: 4, contextTokens: 100, lastRole: 'assistant' });
    s.sessions.find.mockResolvedValue(existing);
    s.appends.append.mockImplementation(appendingTo(existing).append);

    const answer = await s.sut.append(T, 'ext-1', body({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'next' }] }));

    expect(s.tenantDefaults.policy).not.toHaveBeenCalled();
    expect(answer.firstSeq).toBe(5);
    expect(answer.warnings).toEqual([expect.stringContaining('model applies only when an append creates the session')]);
    // Counted for the session's model, not the one the body names.
    expect(s.counter.count.mock.calls[0][1].id).toBe(existing.model);
  });

  it('refuses a top-level system prompt with OpenAI messages, naming the field, before counting or storing anything', async () => {
    const s = setup();
    s.sessions.find.mockResolvedValue(null);
    const error = await s.sut.append(T, 'ext-1', body({ format: 'openai', system: 'Be brief', messages: [{ role: 'user', content: 'hi' }] })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationFailed);
    expect((error as ValidationFailed).details).toMatchObject({ fields: [{ field: 'system' }] });
    expect(statusOf((error as ValidationFailed).code as ApiErrorCode)).toBe(400);
    expect(s.counter.count).not.toHaveBeenCalled();
    expect(s.appends.append).not.toHaveBeenCalled();
  });

  it('refuses a tool result that answers no tool call (plan on the locked row) and gives the reserved tokens back', async () => {
    const s = setup();
    const existing = sessionRecord({ lastSeq: 2, lastRole: 'assistant', openToolUseIds: [] });
    s.sessions.find.mockResolvedValue(existing);
    s.appends.append.mockImplementation(appendingTo(existing).append);
    const stray = { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_missing', content: 'ok' }] };

    const error = await s.sut.append(T, 'ext-1', body({ messages: [stray] })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationFailed);
    expect((error as ValidationFailed).details).toMatchObject({ fields: [{ field: expect.stringMatching(/^messages\[0\]/) }] });
    expect(s.refund).toHaveBeenCalled();
  });

  it('idempotency: sends the key with the body hash; a key reused for another body is 409 and refunds', async () => {
    const s = setup();
    s.sessions.find.mockResolvedValue(sessionRecord());
    s.appends.append.mockResolvedValue({ kind: 'key-reused' });
    const posted = body();

    const error = await s.sut.append(T, 'ext-1', posted, 'key-1').catch((e: unknown) => e);

    expect(error).toBeInstanceOf(IdempotencyKeyReused);
    expect(statusOf((error as IdempotencyKeyReused).code as ApiErrorCode)).toBe(409);
    expect(s.appends.append.mock.calls[0][0].idempotency).toEqual({ key: 'key-1', requestHash: createHash('sha256').update(JSON.stringify(posted)).digest('hex') });
    expect(s.refund).toHaveBeenCalledTimes(1);
  });

  it('idempotency: a replay answers the stored response, refunds, and makes sure the job it named is recorded', async () => {
    const s = setup();
    const existing = sessionRecord();
    s.sessions.find.mockResolvedValue(existing);
    const stored = { sessionId: 'ext-1', firstSeq: 41, lastSeq: 42, usage: {}, compaction: { scheduled: true, jobId: 'job-9' } };
    s.appends.append.mockResolvedValue({ kind: 'replayed', response: stored });
    s.scheduler.ensureRecorded.mockResolvedValue(undefined);

    await expect(s.sut.append(T, 'ext-1', body(), 'key-1')).resolves.toBe(stored);

    expect(s.scheduler.ensureRecorded).toHaveBeenCalledWith(existing, 'job-9');
    expect(s.scheduler.schedule).not.toHaveBeenCalled();
    expect(s.refund).toHaveBeenCalledTimes(1);
  });

  it("compare-and-append: a history that moved past the expected seq is HistoryMoved (409), nothing stored, tokens refunded", async () => {
    const s = setup();
    const existing = sessionRecord({ lastSeq: 7 });
    s.appends.append.mockImplementation(appendingTo(existing).append);

    const error = await s.sut.append(T, 'ext-1', body(), undefined, { session: existing, expectLastSeq: 5 }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(HistoryMoved);
    expect(statusOf((error as HistoryMoved).code as ApiErrorCode)).toBe(409);
    expect(s.sessions.find).not.toHaveBeenCalled();
    expect(s.refund).toHaveBeenCalled();
  });

  it('crossing the threshold schedules a compaction under the job id the answer names', async () => {
    const s = setup();
    const near = sessionRecord({ lastSeq: 10 });
    const threshold = thresholdTokens(sessionBudget(near), POLICY);
    const existing = { ...near, contextTokens: threshold - 5 };
    s.sessions.find.mockResolvedValue(existing);
    s.appends.append.mockImplementation(appendingTo(existing).append);
    s.scheduler.schedule.mockImplementation(async (_session, _trigger, options) => ({ jobId: options?.jobId ?? 'unexpected', queued: true }));

    const answer = await s.sut.append(T, 'ext-1', body());

    expect(answer.compaction).toEqual({ scheduled: true, jobId: expect.any(String) });
    const jobId = (answer.compaction as { jobId: string }).jobId;
    expect(s.scheduler.schedule).toHaveBeenCalledWith(existing, 'threshold', { jobId });
  });

  it('still answers the append when Redis is away: the compaction waits for the sweep (queue-unavailable)', async () => {
    const s = setup();
    const near = sessionRecord();
    const existing = { ...near, contextTokens: thresholdTokens(sessionBudget(near), POLICY) };
    s.sessions.find.mockResolvedValue(existing);
    s.appends.append.mockImplementation(appendingTo(existing).append);
    s.scheduler.schedule.mockResolvedValue({ jobId: 'job-1', queued: false });

    await expect(s.sut.append(T, 'ext-1', body())).resolves.toMatchObject({ lastSeq: 42, compaction: { scheduled: false, reason: 'queue-unavailable' } });
  });

  it('a held session over its threshold is not compacted again: the answer says until when', async () => {
    const s = setup();
    const near = sessionRecord();
    const threshold = thresholdTokens(sessionBudget(near), POLICY);
    const existing = { ...near, contextTokens: threshold + 100, compactionHoldTokens: threshold + 10_000 };
    s.sessions.find.mockResolvedValue(existing);
    s.appends.append.mockImplementation(appendingTo(existing).append);

    await expect(s.sut.append(T, 'ext-1', body())).resolves.toMatchObject({ compaction: { scheduled: false, reason: `held-until:${threshold + 10_000}` } });
    expect(s.scheduler.schedule).not.toHaveBeenCalled();
  });

  it("the proxy's charge mode counts the tokens once stored instead of reserving them", async () => {
    const s = setup();
    const existing = sessionRecord();
    s.appends.append.mockImplementation(appendingTo(existing).append);
    s.rateLimits.chargeAppendedTokens.mockResolvedValue(undefined);
    const onAppended = jest.fn();

    await s.sut.append(T, 'ext-1', body(), undefined, { session: existing, appendedTokens: 'charge', onAppended, precounted: { model: existing.model, tokens: [7] } });

    expect(s.rateLimits.reserveAppendedTokens).not.toHaveBeenCalled();
    // The precounted last message is not counted again: only the first one is.
    expect(s.counter.count.mock.calls[0][0]).toHaveLength(1);
    expect(s.rateLimits.chargeAppendedTokens).toHaveBeenCalledWith(T, TOKENS_PER_MESSAGE + 7);
    expect(onAppended).toHaveBeenCalledWith(expect.objectContaining({ id: 'session-1', lastSeq: 42 }));
  });

  it('counts again for the locked row when the model changed between the read and the lock', async () => {
    const s = setup();
    const read = sessionRecord({ model: 'gpt-4o' });
    s.sessions.find.mockResolvedValue(read);
    s.appends.append.mockImplementation(appendingTo({ ...read, model: 'claude-sonnet-4-5' }).append);

    await s.sut.append(T, 'ext-1', body());

    expect(s.counter.count.mock.calls.map(([, spec]) => spec.id)).toEqual(['gpt-4o', 'claude-sonnet-4-5']);
  });

  it('a session created for a model the catalog does not know gets a model-unknown event', async () => {
    const s = setup();
    s.sessions.find.mockResolvedValue(null);
    s.tenantDefaults.policy.mockResolvedValue(undefined);
    s.appends.append.mockImplementation(appendingTo(sessionRecord({ lastSeq: 0, contextTokens: 0, lastRole: null, model: 'acme-9000' }), true).append);
    s.events.record.mockResolvedValue({ id: 77n } as never);

    await s.sut.append(T, 'ext-1', body({ model: 'acme-9000' }));

    expect(s.events.record).toHaveBeenCalledWith('session-1', T, 'model-unknown', expect.any(String), expect.objectContaining({ model: 'acme-9000' }));
    expect(s.publisher.notify).toHaveBeenCalledWith('session-1', 77n);
  });
  it("an agent loop's next append to a session takes the row its last append left, without reading it again", async () => {
    const s = setup();
    const first = sessionRecord({ lastSeq: 4, rowVersion: '100' });
    s.sessions.find.mockResolvedValue(first);
    s.appends.append.mockImplementation(async (request: AppendRequest) => {
      const observed = request.observed!;
      const plan = await request.plan(observed, false, async () => []);
      const lastSeq = observed.lastSeq + plan.rows.length;
      // The row as the write returned it: a new version each time.
      return { kind: 'appended' as const, session: { ...observed, lastSeq, rowVersion: String(Number(observed.rowVersion) + 1) }, created: false, firstSeq: observed.lastSeq + 1, lastSeq, response: plan.respond(observed.lastSeq + 1, lastSeq) };
    });

    await s.sut.append(T, 'ext-1', body());
    const second = await s.sut.append(T, 'ext-1', body());

    expect(s.sessions.find).toHaveBeenCalledTimes(1);
    const requests = s.appends.append.mock.calls.map(([request]) => request);
    expect(requests.map((r) => [r.observed?.lastSeq, r.observed?.rowVersion, r.observedRemembered])).toEqual([
      [4, '100', false],
      [6, '101', true],
    ]);
    expect(second).toMatchObject({ firstSeq: 7, lastSeq: 8 });
    // Another session of the tenant, or the same name in another tenant, is read.
    await s.sut.append(T, 'ext-2', body());
    await s.sut.append('tenant-2', 'ext-1', body());
    expect(s.sessions.find).toHaveBeenCalledTimes(3);
  });

  it('a remembered row that changed since (stale) stores nothing: the tokens go back and the append starts again from a fresh read', async () => {
    const s = setup();
    const remembered = sessionRecord({ lastSeq: 4, rowVersion: '100' });
    const current = sessionRecord({ lastSeq: 9, rowVersion: '205' });
    s.sessions.find.mockResolvedValueOnce(remembered).mockResolvedValueOnce(current);
    const repo = appendingTo(current);
    s.appends.append
      .mockImplementationOnce(appendingTo(remembered).append)
      .mockResolvedValueOnce({ kind: 'stale' })
      .mockImplementationOnce(repo.append);

    await s.sut.append(T, 'ext-1', body());
    const answer = await s.sut.append(T, 'ext-1', body());

    expect(s.appends.append.mock.calls.map(([request]) => [request.observed?.lastSeq, request.observedRemembered])).toEqual([
      [4, false],
      [6, true],
      [9, false],
    ]);
    expect(s.sessions.find).toHaveBeenCalledTimes(2);
    // One reservation given back (the stale attempt), none for the stored ones.
    expect(s.refund).toHaveBeenCalledTimes(1);
    expect(answer).toMatchObject({ firstSeq: 10, lastSeq: 11 });
  });

  it('a tool result answering a call still open on the session row is not looked up in the history', async () => {
    const s = setup();
    const open = sessionRecord({ lastRole: 'assistant', openToolUseIds: ['toolu_1'] });
    s.sessions.find.mockResolvedValue(open);
    const lookups: string[][] = [];
    s.appends.append.mockImplementation(async (request: AppendRequest) => {
      const plan = await request.plan(open, false, async (ids) => {
        lookups.push(ids);
        return ids.filter((id) => id === 'toolu_0');
      });
      return { kind: 'appended' as const, session: open, created: false, firstSeq: 43, lastSeq: 43, response: plan.respond(43, 43) };
    });
    const result = (id: string) => body({ messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: 'ok' }] }] });

    await s.sut.append(T, 'ext-1', result('toolu_1'));
    expect(lookups).toEqual([]);
    // An answered call's id (not open any more) is still looked up, and accepted when the history has it.
    await s.sut.append(T, 'ext-2', result('toolu_0'));
    expect(lookups).toEqual([['toolu_0']]);
    await expect(s.sut.append(T, 'ext-3', result('toolu_9'))).rejects.toBeInstanceOf(ValidationFailed);
  });
});
