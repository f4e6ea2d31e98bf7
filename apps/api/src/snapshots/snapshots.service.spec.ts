// Snapshots, restore, undo and version diffs with the repositories mocked (newTestService): what a restore writes by
// compare-and-swap, how it retries a head that moved, and the 404/409 answers of each path.
import { DomainError } from '@compactor/compaction';
import { EventPublisher } from '@compactor/jobs';
import { CompactionRepository, ContextMessage, HeadPrefix, MessageRepository, SnapshotRecord, SnapshotRepository } from '@compactor/persistence';
import { jobRecord, sessionRecord } from '@compactor/persistence/testing';
import { newTestService } from '@compactor/testing/unit';
import { statusOf } from '../errors/domain-exception.filter';
import { ApiErrorCode, JobNotFound, SessionNotFound } from '../errors/http-errors';
import { SessionsService } from '../sessions/sessions.service';
import { SnapshotNotFound, SnapshotsService } from './snapshots.service';

const T = 'tenant-1';

function snapshotRow(overrides: Partial<SnapshotRecord> = {}): SnapshotRecord {
  return { id: 'snap-1', kind: 'manual', label: 'before refactor', versionId: 'version-2', versionNumber: 2, compactionJobId: null, metadata: { compactions: 1, contextConfidence: 0.8 }, createdAt: new Date('2026-11-01T00:00:00Z'), ...overrides };
}

const checkpoint = (id: string, fromSeq: number, toSeq: number) => ({ id, fromSeq, toSeq, level: 0, text: `Summary of ${fromSeq}-${toSeq}: the build was fixed.`, tokens: 20, originalTokens: 200 });

/** Version 2: messages 1-4 summarized into one checkpoint. */
const VERSION_2: HeadPrefix = {
  versionId: 'version-2',
  number: 2,
  coversThroughSeq: 4,
  checkpoints: [checkpoint('c1', 1, 4)],
  treatments: { 1: { kind: 'summarized', checkpointId: 'c1' }, 2: { kind: 'summarized', checkpointId: 'c1' }, 3: { kind: 'summarized', checkpointId: 'c1' }, 4: { kind: 'summarized', checkpointId: 'c1' } },
};

const rows = (n: number): ContextMessage[] =>
  Array.from({ length: n }, (_, k) => ({ seq: k + 1, role: k % 2 ? 'assistant' : 'user', blocks: [{ type: 'text', text: `message ${k + 1}` }], meta: null, pinned: false, tags: [], tokens: 50 }));

function setup() {
  const { sut, mocks } = newTestService(SnapshotsService);
  const sessions = mocks.get(SessionsService);
  const snapshots = mocks.get(SnapshotRepository);
  const compactions = mocks.get(CompactionRepository);
  const messages = mocks.get(MessageRepository);
  const publisher = mocks.get(EventPublisher);
  publisher.notify.mockReturnValue(undefined);
  return { sut, sessions, snapshots, compactions, messages, publisher };
}

describe('SnapshotsService.restore', () => {
  it('answers 404 for a snapshot the session does not have, and writes nothing', async () => {
    const { sut, sessions, snapshots, compactions } = setup();
    sessions.require.mockResolvedValue(sessionRecord());
    snapshots.find.mockResolvedValue(null);
    const error = await sut.restore(T, 'ext-1', 'snap-9').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SnapshotNotFound);
    expect(statusOf((error as DomainError).code as ApiErrorCode)).toBe(404);
    expect(snapshots.find).toHaveBeenCalledWith('session-1', 'snap-9');
    expect(compactions.commit).not.toHaveBeenCalled();
  });

  it("passes the session's 404 through (another tenant's session looks missing)", async () => {
    const { sut, sessions, snapshots } = setup();
    sessions.require.mockRejectedValue(new SessionNotFound('ext-1'));
    await expect(sut.restore('tenant-2', 'ext-1', 'snap-1')).rejects.toBeInstanceOf(SessionNotFound);
    expect(sessions.require).toHaveBeenCalledWith('tenant-2', 'ext-1');
    expect(snapshots.find).not.toHaveBeenCalled();
  });

  it("writes the snapshot's version as the new head by compare-and-swap on the head it read, keeping later messages live", async () => {
    const { sut, sessions, snapshots, compactions, messages, publisher } = setup();
    const session = sessionRecord({ lastSeq: 6, headVersionId: 'version-5' });
    sessions.require.mockResolvedValueOnce(session).mockResolvedValueOnce(sessionRecord({ lastSeq: 6, headVersionId: 'version-6', contextTokens: 140 }));
    snapshots.find.mockResolvedValue(snapshotRow());
    snapshots.versionArtifactIds.mockResolvedValue(['artifact-1']);
    compactions.head.mockImplementation(async (_sessionId, versionId) => (versionId === 'version-2' ? VERSION_2 : { ...VERSION_2, versionId: 'version-6', number: 6 }));
    messages.forContext.mockResolvedValue(rows(6));
    compactions.commit.mockResolvedValue('version-6');

    await expect(sut.restore(T, 'ext-1', 'snap-1')).resolves.toEqual({ snapshotId: 'snap-1', restoredVersion: 2, version: 6, contextTokens: 140 });

    expect(compactions.commit).toHaveBeenCalledTimes(1);
    const [commit] = compactions.commit.mock.calls[0];
    expect(commit).toMatchObject({
      sessionId: 'session-1',
      tenantId: T,
      cause: 'restore',
      restoredFromId: 'version-2',
      baseVersionId: 'version-5',
      coversThroughSeq: 4,
      treatments: VERSION_2.treatments,
      checkpoints: VERSION_2.checkpoints,
      artifactIds: ['artifact-1'],
      prefixTokens: 20,
      loadedThroughSeq: 6,
      compactionsInForce: 1,
      reliability: { contextConfidence: 0.8 },
    });
    // The checkpoint stands in for messages 1-4; 5 and 6 (50 tokens each) stay verbatim.
    expect(commit.contextTokens).toBeGreaterThan(100);
    expect(commit.contextTokens).toBeLessThan(6 * 50);
    expect(commit.events).toEqual([expect.objectContaining({ type: 'snapshot-restored', line: expect.stringContaining('messages after 4 live') })]);
    expect(messages.forContext).toHaveBeenCalledWith('session-1', 0, 6);
    expect(publisher.notify).toHaveBeenCalledWith('session-1');
  });

  it('restoring the uncompacted history (no version) writes the empty prefix: every message verbatim, confidence 1', async () => {
    const { sut, sessions, snapshots, compactions, messages } = setup();
    sessions.require.mockResolvedValue(sessionRecord({ lastSeq: 3 }));
    snapshots.find.mockResolvedValue(snapshotRow({ versionId: null, versionNumber: 0, metadata: { compactions: 0, contextConfidence: 0.5 } }));
    messages.forContext.mockResolvedValue(rows(3));
    compactions.commit.mockResolvedValue('version-4');
    compactions.head.mockResolvedValue(null);

    await sut.restore(T, 'ext-1', 'snap-1');

    expect(snapshots.versionArtifactIds).not.toHaveBeenCalled();
    const [commit] = compactions.commit.mock.calls[0];
    expect(commit).toMatchObject({ restoredFromId: undefined, coversThroughSeq: 0, checkpoints: [], treatments: {}, artifactIds: [], prefixTokens: 0, contextTokens: 150, compactionsInForce: 0, reliability: { contextConfidence: 1 } });
  });

  it('a head that moved meanwhile (compare-and-swap lost) is read again and the restore retried on it', async () => {
    const { sut, sessions, snapshots, compactions, messages } = setup();
    sessions.require
      .mockResolvedValueOnce(sessionRecord({ lastSeq: 6, headVersionId: 'version-5' }))
      .mockResolvedValueOnce(sessionRecord({ lastSeq: 8, headVersionId: 'version-6' }))
      .mockResolvedValueOnce(sessionRecord({ lastSeq: 8, headVersionId: 'version-7' }));
    snapshots.find.mockResolvedValue(snapshotRow());
    snapshots.versionArtifactIds.mockResolvedValue([]);
    compactions.head.mockResolvedValue(VERSION_2);
    messages.forContext.mockImplementation(async (_id, _after, through) => rows(through ?? 0));
    compactions.commit.mockResolvedValueOnce(null).mockResolvedValueOnce('version-7');

    await expect(sut.restore(T, 'ext-1', 'snap-1')).resolves.toMatchObject({ snapshotId: 'snap-1', restoredVersion: 2 });

    expect(compactions.commit.mock.calls.map(([c]) => [c.baseVersionId, c.loadedThroughSeq])).toEqual([
      ['version-5', 6],
      ['version-6', 8],
    ]);
    expect(messages.forContext).toHaveBeenLastCalledWith('session-1', 0, 8);
  });

  it('gives up with 409 conflict after three lost compare-and-swaps, and announces nothing', async () => {
    const { sut, sessions, snapshots, compactions, messages, publisher } = setup();
    sessions.require.mockResolvedValue(sessionRecord({ lastSeq: 2 }));
    snapshots.find.mockResolvedValue(snapshotRow());
    snapshots.versionArtifactIds.mockResolvedValue([]);
    compactions.head.mockResolvedValue(VERSION_2);
    messages.forContext.mockResolvedValue(rows(2));
    compactions.commit.mockResolvedValue(null);

    const error = await sut.restore(T, 'ext-1', 'snap-1').catch((e: unknown) => e);

    expect(error).toBeInstanceOf(DomainError);
    expect(statusOf((error as DomainError).code as ApiErrorCode)).toBe(409);
    expect(compactions.commit).toHaveBeenCalledTimes(3);
    expect(publisher.notify).not.toHaveBeenCalled();
  });
});

describe('SnapshotsService.undo', () => {
  it("answers 404 for a job that is missing or another session's", async () => {
    for (const job of [null, jobRecord({ id: 'job-7', sessionId: 'session-2', status: 'succeeded' })]) {
      const { sut, sessions, compactions, snapshots } = setup();
      sessions.require.mockResolvedValue(sessionRecord());
      compactions.findJob.mockResolvedValue(job);
      const error = await sut.undo(T, 'ext-1', 'job-7').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(JobNotFound);
      expect(statusOf((error as DomainError).code as ApiErrorCode)).toBe(404);
      expect(compactions.findJob).toHaveBeenCalledWith(T, 'job-7');
      expect(snapshots.beforeJob).not.toHaveBeenCalled();
    }
  });

  it('answers 409 naming the status for a compaction that changed nothing (skipped, or no snapshot before it)', async () => {
    const skipped = setup();
    skipped.sessions.require.mockResolvedValue(sessionRecord());
    skipped.compactions.findJob.mockResolvedValue(jobRecord({ status: 'skipped', dryRun: true }));
    const error = await skipped.sut.undo(T, 'ext-1', 'job-1').catch((e: unknown) => e);
    expect(statusOf((error as DomainError).code as ApiErrorCode)).toBe(409);
    expect((error as DomainError).message).toContain('status skipped, dry run');
    expect(skipped.snapshots.beforeJob).not.toHaveBeenCalled();

    const noSnapshot = setup();
    noSnapshot.sessions.require.mockResolvedValue(sessionRecord());
    noSnapshot.compactions.findJob.mockResolvedValue(jobRecord({ status: 'succeeded' }));
    noSnapshot.snapshots.beforeJob.mockResolvedValue(null);
    await expect(noSnapshot.sut.undo(T, 'ext-1', 'job-1')).rejects.toMatchObject({ code: ApiErrorCode.Conflict });
    expect(noSnapshot.compactions.commit).not.toHaveBeenCalled();
  });

  it('restores the snapshot taken right before the compaction', async () => {
    const { sut, sessions, compactions, snapshots, messages } = setup();
    sessions.require.mockResolvedValue(sessionRecord({ lastSeq: 2 }));
    compactions.findJob.mockResolvedValue(jobRecord({ status: 'succeeded' }));
    snapshots.beforeJob.mockResolvedValue(snapshotRow({ id: 'snap-pre', kind: 'pre_compaction' }));
    snapshots.versionArtifactIds.mockResolvedValue([]);
    compactions.head.mockResolvedValue(VERSION_2);
    messages.forContext.mockResolvedValue(rows(2));
    compactions.commit.mockResolvedValue('version-9');

    await expect(sut.undo(T, 'ext-1', 'job-1')).resolves.toMatchObject({ snapshotId: 'snap-pre', restoredVersion: 2 });
    expect(snapshots.beforeJob).toHaveBeenCalledWith('session-1', 'job-1');
    expect(compactions.commit.mock.calls[0][0].events?.[0].line).toMatch(/^Undid compaction job-1: restored version 2/);
  });
});

describe('SnapshotsService.list and diff', () => {
  it('pages by a cursor snapshot, 404 for a cursor the session does not have', async () => {
    const { sut, sessions, snapshots } = setup();
    sessions.require.mockResolvedValue(sessionRecord());
    snapshots.find.mockResolvedValueOnce(null);
    await expect(sut.list(T, 'ext-1', 2, 'snap-gone')).rejects.toBeInstanceOf(SnapshotNotFound);

    const cursor = snapshotRow({ id: 'snap-5' });
    snapshots.find.mockResolvedValueOnce(cursor);
    snapshots.list.mockResolvedValue([snapshotRow({ id: 'snap-4' }), snapshotRow({ id: 'snap-3', kind: 'pre_compaction' }), snapshotRow({ id: 'snap-2' })]);
    const page = await sut.list(T, 'ext-1', 2, 'snap-5');
    // One more row than the page asked for: there is a next page, starting after its last item.
    expect(snapshots.list).toHaveBeenCalledWith('session-1', 3, { createdAt: cursor.createdAt, id: 'snap-5' });
    expect(page.snapshots.map((s) => [s.id, s.kind])).toEqual([
      ['snap-4', 'manual'],
      ['snap-3', 'pre-compaction'],
    ]);
    expect(page.nextCursor).toBe('snap-3');
  });

  it('answers 404 naming the field of a version the session does not have', async () => {
    const { sut, sessions, snapshots } = setup();
    sessions.require.mockResolvedValue(sessionRecord());
    snapshots.versionId.mockImplementation(async (_id, n) => (n === 0 ? null : undefined));
    await expect(sut.diff(T, 'ext-1', 0, 7)).rejects.toMatchObject({ code: ApiErrorCode.NotFound, details: { field: 'b' } });
  });

  it('classifies what changed per message between two versions, and the checkpoints added and removed', async () => {
    const { sut, sessions, snapshots, compactions } = setup();
    sessions.require.mockResolvedValue(sessionRecord());
    const masked = { kind: 'masked', message: { role: 'tool', blocks: [] }, tokens: 3 };
    const a: HeadPrefix = { versionId: 'va', number: 1, coversThroughSeq: 3, checkpoints: [checkpoint('c0', 1, 1)], treatments: { 1: { kind: 'summarized', checkpointId: 'c0' }, 2: masked, 3: masked } };
    const b: HeadPrefix = { versionId: 'vb', number: 2, coversThroughSeq: 4, checkpoints: [checkpoint('c1', 1, 2)], treatments: { 1: { kind: 'summarized', checkpointId: 'c1' }, 2: { kind: 'summarized', checkpointId: 'c1' }, 3: masked, 4: masked } };
    snapshots.versionId.mockImplementation(async (_id, n) => (n === 1 ? 'va' : 'vb'));
    compactions.head.mockImplementation(async (_id, versionId) => (versionId === 'va' ? a : b));

    const diff = await sut.diff(T, 'ext-1', 1, 2);

    expect(diff.messages).toEqual({
      masked: [{ seq: 4, was: null }],
      offloaded: [],
      summarized: [
        { seq: 1, was: 'summarized', checkpointId: 'c1' },
        { seq: 2, was: 'masked', checkpointId: 'c1' },
      ],
      compressed: [],
      dropped: [],
      restored: [],
    });
    expect(diff.checkpoints.added.map((c) => c.id)).toEqual(['c1']);
    expect(diff.checkpoints.removed.map((c) => c.id)).toEqual(['c0']);
    expect(diff.coversThroughSeq).toEqual({ a: 3, b: 4 });

    // The other way round, what b treats and a does not is restored.
    const back = await sut.diff(T, 'ext-1', 2, 1);
    expect(back.messages.restored).toEqual([{ seq: 4, was: 'masked' }]);
  });
});
