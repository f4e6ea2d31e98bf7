import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { CheckpointLevel, CompactionStatus, CompactionTrigger, Prisma } from './generated/prisma/client';
import { PrismaService } from './prisma.service';

const LEVELS: CheckpointLevel[] = ['recent', 'old', 'ancient', 'ultra'];

/** A checkpoint as the engine knows it (libs/compaction `Checkpoint`). */
export interface CheckpointData {
  id: string;
  fromSeq: number;
  toSeq: number;
  level: number;
  text: string;
  tokens: number;
  originalTokens: number;
  agedFromId?: string;
}

/** The head version's compacted prefix (libs/compaction `VersionPrefix`). */
export interface HeadPrefix {
  versionId: string;
  number: number;
  coversThroughSeq: number;
  treatments: Record<string, unknown>;
  checkpoints: CheckpointData[];
}

export interface JobRecord {
  id: string;
  sessionId: string;
  tenantId: string;
  trigger: CompactionTrigger;
  status: CompactionStatus;
  reason: string | null;
  steps: unknown;
  tokensBefore: number | null;
  tokensAfter: number | null;
  llmCalls: number;
  llmInputTokens: number;
  llmOutputTokens: number;
  llmCostUsd: string;
  durationMs: number | null;
  error: string | null;
  baseVersionId: string | null;
  resultVersionId: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

export interface CommitRequest {
  sessionId: string;
  tenantId: string;
  jobId: string;
  /** The head the compaction started from; the result applies only if it is still the head (compare-and-swap). */
  baseVersionId: string | null;
  coversThroughSeq: number;
  treatments: Record<string, unknown>;
  checkpoints: CheckpointData[];
  prefixTokens: number;
  contextTokens: number;
  utilization: number;
  budget: number;
  threshold: number;
  events: { type: string; line: string }[];
}

const toJob = (row: Prisma.CompactionJobGetPayload<object>): JobRecord => ({ ...row, llmCostUsd: row.llmCostUsd.toString() });

@Injectable()
export class CompactionRepository {
  constructor(private readonly prisma: PrismaService) {}

  async createJob(data: { sessionId: string; tenantId: string; trigger: CompactionTrigger; policy: Prisma.InputJsonValue; dryRun?: boolean }): Promise<string> {
    const job = await this.prisma.compactionJob.create({ data: { id: randomUUID(), ...data }, select: { id: true } });
    return job.id;
  }

  async findJob(tenantId: string, id: string): Promise<JobRecord | null> {
    const row = await this.prisma.compactionJob.findFirst({ where: { id, tenantId } });
    return row ? toJob(row) : null;
  }

  async startJob(id: string): Promise<JobRecord | null> {
    const { count } = await this.prisma.compactionJob.updateMany({
      where: { id, status: { in: ['queued', 'running'] } },
      data: { status: 'running', startedAt: new Date(), attempts: { increment: 1 } },
    });
    if (count === 0) return null;
    return toJob(await this.prisma.compactionJob.findUniqueOrThrow({ where: { id } }));
  }

  async finishJob(
    id: string,
    data: {
      status: CompactionStatus;
      reason?: string;
      steps?: string[];
      tokensBefore?: number;
      tokensAfter?: number;
      llmCalls?: number;
      llmInputTokens?: number;
      llmOutputTokens?: number;
      llmCostUsd?: number;
      durationMs?: number;
      error?: string;
      baseVersionId?: string | null;
      resultVersionId?: string;
    },
  ): Promise<void> {
    await this.prisma.compactionJob.update({ where: { id }, data: { ...data, finishedAt: new Date() } });
  }

  async event(sessionId: string, tenantId: string, type: string, line: string, data: Prisma.InputJsonValue = {}): Promise<void> {
    await this.prisma.event.create({ data: { sessionId, tenantId, type, line, data } });
  }

  /** The head version's prefix with its checkpoints in order, or null before the first compaction. */
  async head(sessionId: string, headVersionId: string | null): Promise<HeadPrefix | null> {
    if (!headVersionId) return null;
    const version = await this.prisma.contextVersion.findFirst({
      where: { id: headVersionId, sessionId },
      include: { checkpoints: { orderBy: { position: 'asc' }, include: { checkpoint: true } } },
    });
    if (!version) return null;
    return {
      versionId: version.id,
      number: version.number,
      coversThroughSeq: version.coversThroughSeq,
      treatments: version.treatments as Record<string, unknown>,
      checkpoints: version.checkpoints.map(({ checkpoint: c }) => ({
        id: c.contentId,
        fromSeq: c.fromSeq,
        toSeq: c.toSeq,
        level: LEVELS.indexOf(c.level),
        text: c.text,
        tokens: c.tokens,
        originalTokens: c.originalTokens,
      })),
    };
  }

  /**
   * Writes the new version and swaps the head, only if the head is still the one the
   * compaction started from (Guarantee 6). Returns the new version id, or null when the head
   * moved meanwhile (nothing is written then).
   */
  async commit(request: CommitRequest): Promise<string | null> {
    return this.prisma.$transaction(async (tx) => {
      const [session] = await tx.$queryRaw<{ head: string | null }[]>`
        SELECT head_version_id AS head FROM sessions WHERE id = ${request.sessionId}::uuid FOR UPDATE`;
      if (!session || session.head !== request.baseVersionId) return null;
      const last = await tx.contextVersion.findFirst({ where: { sessionId: request.sessionId }, orderBy: { number: 'desc' }, select: { number: true } });
      const versionId = randomUUID();
      const rowIds: string[] = [];
      for (const c of request.checkpoints) {
        const existing = await tx.checkpoint.findUnique({ where: { sessionId_contentId: { sessionId: request.sessionId, contentId: c.id } }, select: { id: true } });
        if (existing) {
          rowIds.push(existing.id);
          continue;
        }
        const agedFrom = c.agedFromId
          ? await tx.checkpoint.findUnique({ where: { sessionId_contentId: { sessionId: request.sessionId, contentId: c.agedFromId } }, select: { id: true } })
          : null;
        const row = await tx.checkpoint.create({
          data: {
            id: randomUUID(),
            sessionId: request.sessionId,
            contentId: c.id,
            fromSeq: c.fromSeq,
            toSeq: c.toSeq,
            level: LEVELS[Math.min(c.level, LEVELS.length - 1)],
            text: c.text,
            tokens: c.tokens,
            originalTokens: c.originalTokens,
            agedFromId: agedFrom?.id ?? null,
            compactionJobId: request.jobId,
          },
          select: { id: true },
        });
        rowIds.push(row.id);
      }
      await tx.contextVersion.create({
        data: {
          id: versionId,
          sessionId: request.sessionId,
          number: (last?.number ?? 0) + 1,
          parentId: request.baseVersionId,
          cause: 'compaction',
          coversThroughSeq: request.coversThroughSeq,
          treatments: request.treatments as Prisma.InputJsonValue,
          prefixTokens: request.prefixTokens,
          compactionJobId: request.jobId,
          checkpoints: { create: rowIds.map((checkpointId, position) => ({ checkpointId, position })) },
        },
      });
      const now = new Date();
      const lastSeq = await tx.session.update({
        where: { id: request.sessionId },
        data: { headVersionId: versionId, contextTokens: request.contextTokens, utilization: request.utilization, compactions: { increment: 1 } },
        select: { lastSeq: true },
      });
      await tx.usagePoint.create({
        data: {
          sessionId: request.sessionId,
          kind: 'compaction',
          seq: lastSeq.lastSeq,
          contextTokens: request.contextTokens,
          budget: request.budget,
          threshold: request.threshold,
          compactionJobId: request.jobId,
          createdAt: now,
        },
      });
      if (request.events.length) {
        await tx.event.createMany({
          data: request.events.map((e) => ({ sessionId: request.sessionId, tenantId: request.tenantId, type: e.type, line: e.line, data: { jobId: request.jobId }, createdAt: now })),
        });
      }
      return versionId;
    });
  }
}
