import { Injectable } from '@nestjs/common';
import { Prisma, SnapshotKind } from './generated/prisma/client';
import { insertSessionEvents } from './event.repository';
import { PrismaService } from './prisma.service';
import { ReadReplica, ReadSource } from './read-replica.service';

export interface SnapshotRecord {
  id: string;
  kind: SnapshotKind;
  label: string | null;
  /** The version it pins; null = the uncompacted history (before the first compaction). */
  versionId: string | null;
  versionNumber: number;
  compactionJobId: string | null;
  metadata: Record<string, unknown>;
  createdAt: Date;
}

const SELECT = { id: true, kind: true, label: true, versionId: true, compactionJobId: true, metadata: true, createdAt: true, version: { select: { number: true } } } as const;
type Row = Prisma.SnapshotGetPayload<{ select: typeof SELECT }>;
const toRecord = (r: Row): SnapshotRecord => ({
  id: r.id,
  kind: r.kind,
  label: r.label,
  versionId: r.versionId,
  versionNumber: r.version?.number ?? 0,
  compactionJobId: r.compactionJobId,
  metadata: (r.metadata ?? {}) as Record<string, unknown>,
  createdAt: r.createdAt,
});

/** Snapshots (SPEC.md "Snapshot"): immutable pointers to context versions, and the versions' lookups restores and diffs need. */
@Injectable()
export class SnapshotRepository {
  constructor(
    private readonly prisma: PrismaService,
    private readonly replica: ReadReplica,
  ) {}

  /** Newest first; `before` is a snapshot id to page from. */
  async list(sessionId: string, limit: number, before?: { createdAt: Date; id: string }): Promise<SnapshotRecord[]> {
    const rows = await this.prisma.snapshot.findMany({
      where: {
        sessionId,
        ...(before ? { OR: [{ createdAt: { lt: before.createdAt } }, { createdAt: before.createdAt, id: { lt: before.id } }] } : {}),
      },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: limit,
      select: SELECT,
    });
    return rows.map(toRecord);
  }

  async find(sessionId: string, id: string): Promise<SnapshotRecord | null> {
    const row = await this.prisma.snapshot.findFirst({ where: { sessionId, id }, select: SELECT });
    return row ? toRecord(row) : null;
  }

  /** The snapshot taken before a compaction's result was applied. */
  async beforeJob(sessionId: string, jobId: string): Promise<SnapshotRecord | null> {
    const row = await this.prisma.snapshot.findFirst({ where: { sessionId, compactionJobId: jobId, kind: 'pre_compaction' }, select: SELECT });
    return row ? toRecord(row) : null;
  }

  /** A manual snapshot of the head, with its event, in one transaction. */
  async create(data: { sessionId: string; tenantId: string; versionId: string | null; label: string | null; metadata: Prisma.InputJsonValue; line: string }): Promise<SnapshotRecord> {
    return this.prisma.$transaction(async (tx) => {
      const row = await tx.snapshot.create({
        data: { sessionId: data.sessionId, versionId: data.versionId, kind: 'manual', label: data.label, metadata: data.metadata },
        select: SELECT,
      });
      // Through the session row lock, so event ids follow commit order (SSE resumes by id).
      await insertSessionEvents(tx, data.sessionId, data.tenantId, [{ type: 'snapshot-created', line: data.line, data: { snapshotId: row.id } }]);
      return toRecord(row);
    });
  }

  /** The id of a session's version by number (0 = none, the uncompacted history). */
  async versionId(sessionId: string, number: number): Promise<string | null | undefined> {
    if (number === 0) return null;
    const v = await this.prisma.contextVersion.findFirst({ where: { sessionId, number }, select: { id: true } });
    return v ? v.id : undefined;
  }

  /** The artifacts a version refers to. */
  async versionArtifactIds(versionId: string): Promise<string[]> {
    const rows = await this.prisma.versionArtifact.findMany({ where: { versionId }, select: { artifactId: true } });
    return rows.map((r) => r.artifactId);
  }

  /** Every checkpoint row of the session (aged ones too), oldest span first, with whether the head uses it. */
  async checkpoints(sessionId: string, headVersionId: string | null) {
    const [rows, head] = await Promise.all([
      this.prisma.checkpoint.findMany({
        where: { sessionId },
        orderBy: [{ fromSeq: 'asc' }, { createdAt: 'asc' }],
        include: { agedFrom: { select: { contentId: true } } },
      }),
      headVersionId ? this.prisma.versionCheckpoint.findMany({ where: { versionId: headVersionId }, select: { checkpointId: true } }) : Promise.resolve([]),
    ]);
    const inHead = new Set(head.map((h) => h.checkpointId));
    return rows.map((c) => ({ ...c, inHead: inHead.has(c.id) }));
  }

  /**
   * Where an export reads (ReadReplica.exportSource): the read replica once it has replayed every write the
   * primary had committed when the export began, else the primary. Ask after reading the session, so its
   * lastSeq is covered.
   */
  exportSource(): Promise<ReadSource> {
    return this.replica.exportSource();
  }

  /**
   * The export's small parts, read before its history is streamed (versions, checkpoints,
   * snapshots, jobs), and the last event id then, so the streamed pages stop at the same instant.
   */
  async exportMeta(sessionId: string, source: ReadSource) {
    const [versions, checkpoints, snapshots, jobs, lastEvent] = await this.replica.prisma(source, (db) => Promise.all([
      db.contextVersion.findMany({
        where: { sessionId },
        orderBy: { number: 'asc' },
        select: {
          number: true,
          cause: true,
          coversThroughSeq: true,
          treatments: true,
          watermarkSeq: true,
          goalBlock: true,
          prefixTokens: true,
          compactionJobId: true,
          createdAt: true,
          parent: { select: { number: true } },
          restoredFromId: true,
          checkpoints: { orderBy: { position: 'asc' }, select: { checkpoint: { select: { contentId: true } } } },
        },
      }),
      db.checkpoint.findMany({ where: { sessionId }, orderBy: [{ fromSeq: 'asc' }, { createdAt: 'asc' }] }),
      db.snapshot.findMany({ where: { sessionId }, orderBy: { createdAt: 'asc' }, select: SELECT }),
      db.compactionJob.findMany({ where: { sessionId }, orderBy: { createdAt: 'asc' }, omit: { intermediate: true } }),
      db.event.findFirst({ where: { sessionId }, orderBy: { id: 'desc' }, select: { id: true } }),
    ]));
    return { versions, checkpoints, snapshots: snapshots.map(toRecord), jobs, lastEventId: lastEvent?.id ?? 0n };
  }

  /** One page of the export's history: messages after `afterSeq` up to `throughSeq`, by seq (the (session_id, seq) key). */
  async exportMessages(sessionId: string, afterSeq: number, throughSeq: number, limit: number, source: ReadSource) {
    return this.replica.prisma(source, (db) => db.message.findMany({
      where: { sessionId, seq: { gt: afterSeq, lte: throughSeq } },
      orderBy: { seq: 'asc' },
      take: limit,
      select: { seq: true, role: true, raw: true, format: true, blocks: true, pinned: true, tags: true, tokens: true, createdAt: true },
    }));
  }

  /** One page of the export's events: ids after `afterId` up to `throughId` (the (session_id, id) index). */
  async exportEvents(sessionId: string, afterId: bigint, throughId: bigint, limit: number, source: ReadSource) {
    return this.replica.prisma(source, (db) => db.event.findMany({ where: { sessionId, id: { gt: afterId, lte: throughId } }, orderBy: { id: 'asc' }, take: limit }));
  }
}
