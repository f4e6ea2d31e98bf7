// SessionsService with its repositories mocked (newTestService): the 404 and 409 answers, what create records for a
// model the catalog does not know, and the list's cursor.
import { DomainError } from '@compactor/compaction';
import { EventPublisher } from '@compactor/jobs';
import { EventRepository, SessionRepository } from '@compactor/persistence';
import { sessionRecord } from '@compactor/persistence/testing';
import { newTestService } from '@compactor/testing/unit';
import { statusOf } from '../errors/domain-exception.filter';
import { ApiErrorCode, SessionExists, SessionNotFound } from '../errors/http-errors';
import { resolveSessionConfig } from './session-config';
import { decodeCursor, SessionsService } from './sessions.service';

const T = 'tenant-1';

function setup() {
  const { sut, mocks } = newTestService(SessionsService);
  const publisher = mocks.get(EventPublisher);
  publisher.notify.mockReturnValue(undefined);
  return { sut, sessions: mocks.get(SessionRepository), events: mocks.get(EventRepository), publisher };
}

const statusOfError = (error: unknown) => statusOf((error as DomainError).code as ApiErrorCode);

describe('SessionsService', () => {
  it("require: the tenant's session, else 404 session_not_found naming the id", async () => {
    const { sut, sessions } = setup();
    sessions.find.mockResolvedValueOnce(sessionRecord()).mockResolvedValueOnce(null);
    await expect(sut.require(T, 'ext-1')).resolves.toMatchObject({ id: 'session-1' });
    const error = await sut.require(T, 'ext-2').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SessionNotFound);
    expect(statusOfError(error)).toBe(404);
    expect((error as Error).message).toContain("'ext-2'");
    expect(sessions.find).toHaveBeenLastCalledWith(T, 'ext-2');
  });

  it('detail: the view, the budget the worker compacts to, and the fork links', async () => {
    const { sut, sessions } = setup();
    sessions.find.mockResolvedValue(sessionRecord({ requestMaxTokens: 8_000, toolSchemaTokens: 1_200, compactionHoldTokens: 90_000 }));
    sessions.lineage.mockResolvedValue({ forkedFrom: 'ext-0', forks: ['ext-1b'] });
    const detail = await sut.detail(T, 'ext-1');
    expect(sessions.lineage).toHaveBeenCalledWith('session-1');
    expect(detail).toMatchObject({ id: 'ext-1', messageCount: 40, forkedFrom: 'ext-0', forks: ['ext-1b'], budget: { window: 128_000, requestMaxTokens: 8_000, toolSchemaTokens: 1_200, compactionHoldTokens: 90_000 } });
    // A hold with no recorded reason: a compaction that could not bring the context under its trigger.
    expect(detail.compactionHold).toEqual({ reason: 'context-still-over-trigger', since: null, untilTokens: 90_000, consecutive: 0 });
    expect(detail.budget.budget).toBeLessThan(128_000 - 1_200);
  });

  it('create: 409 session_exists when the id is taken; no event for a known model', async () => {
    const { sut, sessions, events } = setup();
    sessions.create.mockResolvedValue(null);
    const config = resolveSessionConfig({ model: 'gpt-4o' });
    const error = await sut.create(T, 'ext-1', config).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SessionExists);
    expect(statusOfError(error)).toBe(409);
    // The stored policy is the JSON form; the warnings are not stored.
    expect(sessions.create).toHaveBeenCalledWith(T, 'ext-1', { model: 'gpt-4o', contextWindow: config.contextWindow, outputReserve: config.outputReserve, policy: expect.objectContaining({ preset: config.policy.preset }) });
    expect(events.record).not.toHaveBeenCalled();
  });

  it('create: a model the catalog does not know gets a model-unknown event with the warnings, announced to the streams', async () => {
    const { sut, sessions, events, publisher } = setup();
    sessions.create.mockResolvedValue(sessionRecord({ model: 'acme-9000' }));
    events.record.mockResolvedValue({ id: 5n } as never);
    const config = resolveSessionConfig({ model: 'acme-9000' });
    await sut.create(T, 'ext-1', config);
    expect(events.record).toHaveBeenCalledWith('session-1', T, 'model-unknown', config.warnings.join('; '), { model: 'acme-9000', contextWindow: config.contextWindow });
    expect(publisher.notify).toHaveBeenCalledWith('session-1', 5n);
  });

  it('list: asks for one row more than the page; a next cursor only when it came, which decodes to the last row', async () => {
    const { sut, sessions } = setup();
    const rows = [1, 2, 3].map((n) => sessionRecord({ id: `0000000${n}-0000-0000-0000-000000000000`, externalId: `ext-${n}`, lastActivityAt: new Date(`2026-11-0${n}T00:00:00Z`) }));
    sessions.list.mockResolvedValueOnce(rows).mockResolvedValueOnce(rows.slice(0, 2));

    const full = await sut.list(T, { limit: 2, model: 'gpt-4o' });
    expect(sessions.list).toHaveBeenCalledWith({ tenantId: T, limit: 3, model: 'gpt-4o', after: undefined });
    expect(full.sessions.map((s) => s.id)).toEqual(['ext-1', 'ext-2']);
    expect(decodeCursor(full.nextCursor!)).toEqual({ lastActivityAt: rows[1].lastActivityAt, id: rows[1].id });

    const last = await sut.list(T, { limit: 2 });
    expect(last.nextCursor).toBeNull();
  });

  it('decodeCursor refuses what it did not make', () => {
    expect(decodeCursor('not-a-cursor')).toBeUndefined();
    expect(decodeCursor(Buffer.from('2026-11-01T00:00:00.000Z|not-a-uuid').toString('base64url'))).toBeUndefined();
  });

  it('delete: 404 when nothing was deleted', async () => {
    const { sut, sessions } = setup();
    sessions.delete.mockResolvedValueOnce(true).mockResolvedValueOnce(false);
    await expect(sut.delete(T, 'ext-1')).resolves.toBeUndefined();
    await expect(sut.delete(T, 'ext-1')).rejects.toBeInstanceOf(SessionNotFound);
  });
});
