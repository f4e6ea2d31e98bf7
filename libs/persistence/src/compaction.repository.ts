import { Injectable } from '@nestjs/common';
import { EMPTY_PREFIX, type VersionPrefix } from '@compactor/compaction';
import { createHash, randomUUID } from 'node:crypto';
import { CheckpointLevel, CompactionStatus, CompactionTrigger, Prisma } from './generated/prisma/client';
import { PgPoolService } from './pg-pool.service';
import { PrismaService } from './prisma.service';
import { insertSessionEvents } from './event.repository';
import { utcDayStart } from './tenant-limits';

const LEVELS: CheckpointLevel[] = ['recent', 'old', 'ancient', 'ultra'];
/** A trigger folded into another job ends `skipped` with this reason and that job's id (GET /v1/jobs/:id's `supersededBy`). */
export const SUPERSEDED_BY = 'superseded-by:';

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
  /** The Facts section (ledger entries the summary lacked). */
  facts?: string;
  /** Seed 004's extracted facts, stored with a new checkpoint row. */
  keyDecisions?: string[];
  /** The pinned-facts ledger of the span it compacted, and the share of it that survived in the new context. */
  factsLedger?: Prisma.InputJsonValue;
  factsSurvived?: number;
  filesModified?: string[];
  nextSteps?: string[];
}

/** The head version's compacted prefix (libs/compaction `VersionPrefix`). */
export interface HeadPrefix {
  versionId: string;
  number: number;
  coversThroughSeq: number;
  treatments: Record<string, unknown>;
  checkpoints: CheckpointData[];
  watermarkSeq?: number;
  goalBlock?: { text: string; tokens: number };
}

/** The head as the engine reads it (`VersionPrefix`); the empty prefix before the first compaction. */
export function prefixOf(head: HeadPrefix | null): VersionPrefix {
  if (!head) return EMPTY_PREFIX;
  return {
    coversThroughSeq: head.coversThroughSeq,
    checkpoints: head.checkpoints,
    treatments: head.treatments as VersionPrefix['treatments'],
    ...(head.watermarkSeq !== undefined ? { watermarkSeq: head.watermarkSeq } : {}),
    ...(head.goalBlock ? { goalBlock: head.goalBlock } : {}),
  };
}

export interface JobRecord {
  id: string;
  sessionId: string;
  tenantId: string;
  trigger: CompactionTrigger;
  dryRun: boolean;
  status: CompactionStatus;
  reason: string | null;
  steps: unknown;
  tokensBefore: number | null;
  tokensAfter: number | null;
  llmCalls: number;
  llmInputTokens: number;
  llmOutputTokens: number;
  llmCostUsd: string;
  /** Runs started so far; the current run's number fences its writes (a run taken over writes nothing more). */
  attempts: number;
  durationMs: number | null;
  error: string | null;
  baseVersionId: string | null;
  resultVersionId: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** Offloaded content a compaction produced (libs/compaction `ArtifactOutput`). */
export interface ArtifactData {
  id: string;
  seq: number;
  toolUseId?: string;
  toolName?: string;
  content: string;
  tokens: number;
}

export interface CommitRequest {
  sessionId: string;
  tenantId: string;
  /** The compaction job that wrote the version (none for a watermark advanced over the API). */
  jobId?: string;
  /** The job's run (startJob's `attempts`): a run that was taken over meanwhile commits nothing (JobTakenOver). */
  attempt?: number;
  /** Default `compaction`. */
  cause?: 'compaction' | 'watermark' | 'restore' | 'goal_update';
  /** A restore: the version whose prefix the new one repeats. */
  restoredFromId?: string;
  /** A compaction: the snapshot of the head it replaces, so the compaction can be undone (SPEC.md "Snapshot"). */
  snapshotBefore?: { metadata: Prisma.InputJsonValue; line: string };
  /** The reliability score after this version (0–100) and its context confidence (SPEC.md "Reliability score"). */
  reliability?: { score: number; contextConfidence: number };
  /** A restore: how many compactions the restored version holds (the reliability score's count); default: one more for a compaction. */
  compactionsInForce?: number;
  /** The head the compaction started from; the result applies only if it is still the head (compare-and-swap). */
  baseVersionId: string | null;
  coversThroughSeq: number;
  treatments: Record<string, unknown>;
  checkpoints: CheckpointData[];
  watermarkSeq?: number;
  goalBlock?: { text: string; tokens: number };
  /** New offloaded content, stored byte-exact (through the pg pool just before the transaction when the repository has one). */
  artifacts?: ArtifactData[];
  /** Every artifact the new version refers to (new and earlier ones). */
  artifactIds?: string[];
  prefixTokens: number;
  /** Tokens of the new context through `loadedThroughSeq`; messages appended since are added in the same statement. Undefined keeps the session's count. */
  contextTokens?: number;
  loadedThroughSeq: number;
  budget: number;
  threshold: number;
  events: { type: string; line: string; data?: Record<string, unknown> }[];
}

const isGoalBlock = (v: unknown): v is { text: string; tokens: number } =>
  typeof v === 'object' && v !== null && typeof (v as { text?: unknown }).text === 'string' && typeof (v as { tokens?: unknown }).tokens === 'number';

/** A compaction run that BullMQ handed to another worker meanwhile (this one stalled or lost its lock): it must stop and write nothing. */
export class JobTakenOver extends Error {
  constructor(
    readonly jobId: string,
    readonly attempt: number,
  ) {
    super(`compaction ${jobId}: run ${attempt} was taken over by a later run`);
  }
}

const toJob = (row: Prisma.CompactionJobGetPayload<object>): JobRecord => ({ ...row, llmCostUsd: row.llmCostUsd.toString() });

/** createJob with the id of a job already recorded (two replays of one answer at once). */
export class JobAlreadyRecorded extends Error {
  constructor(readonly jobId: string) {
    super(`compaction job ${jobId} is already recorded`);
  }
}

@Injectable()
export class CompactionRepository {
  constructor(
    private readonly prisma: PrismaService,
    /** Plain `pg` for the hot statements (createJob) and the artifacts (writeArtifacts). */
    private readonly pg: PgPoolService,
  ) {}

  /**
   * Writes artifacts through the pg pool, one INSERT each with the content as a binary parameter (issue #15, the
   * 30 MB tool result): Prisma's createMany with a Bytes column held the worker's event loop 1.2–1.4 s for a 30 MB
   * artifact, this 40–65 ms. Content-addressed and idempotent (ON CONFLICT DO NOTHING); returns the ids now stored.
   */
  private async writeArtifacts(pg: PgPoolService, sessionId: string, artifacts: ArtifactData[]): Promise<Set<string>> {
    for (const a of artifacts) {
      const content = Buffer.from(a.content, 'utf8');
      await pg.pool.query(
        `INSERT INTO artifacts (session_id, id, seq, tool_use_id, tool_name, content, bytes, tokens, sha256)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
        [sessionId, a.id, a.seq, a.toolUseId ?? null, a.toolName ?? null, content, content.length, a.tokens, createHash('sha256').update(content).digest('hex')],
      );
    }
    return new Set(artifacts.map((a) => a.id));
  }

  /**
   * Records a job (queued). Plain `pg`, a named statement: an append over its session's threshold records one on
   * every turn until a compaction brings the context under it, on the request path; the ORM's create cost more CPU
   * than the append itself, and Prisma's $executeRaw 0.34 ms of client CPU an insert against 0.09 ms here (docs/benchmarks.md, ingest).
   */
  async createJob(data: { id?: string; sessionId: string; tenantId: string; trigger: CompactionTrigger; policy: Prisma.InputJsonValue; dryRun?: boolean }): Promise<string> {
    const id = data.id ?? randomUUID();
    try {
      await this.pg.pool.query({
        ...(this.pg.preparedStatements ? { name: 'compaction-job-create' } : {}),
        text: `INSERT INTO compaction_jobs (id, session_id, tenant_id, trigger, policy, dry_run)
          VALUES ($1::uuid, $2::uuid, $3::uuid, $4::"CompactionTrigger", $5::jsonb, $6)`,
        values: [id, data.sessionId, data.tenantId, data.trigger, JSON.stringify(data.policy), data.dryRun ?? false],
      });
    } catch (error) {
      // The job's id is taken (a replay recording the job its first answer named, twice at once).
      if ((error as { code?: string }).code === '23505' && (error as { constraint?: string }).constraint === 'compaction_jobs_pkey') throw new JobAlreadyRecorded(id);
      throw error;
    }
    return id;
  }

  async findJob(tenantId: string, id: string): Promise<JobRecord | null> {
    const row = await this.prisma.compactionJob.findFirst({ where: { id, tenantId } });
    return row ? toJob(row) : null;
  }

  /** A job with the names a client knows it by: the session's id and the result's version number. */
  async findJobView(tenantId: string, id: string): Promise<(JobRecord & { sessionExternalId: string; resultVersion: number | null }) | null> {
    const row = await this.prisma.compactionJob.findFirst({ where: { id, tenantId }, include: { session: { select: { externalId: true } } } });
    if (!row) return null;
    const { session, ...job } = row;
    const version = job.resultVersionId ? await this.prisma.contextVersion.findUnique({ where: { id: job.resultVersionId }, select: { number: true } }) : null;
    return { ...toJob(job), sessionExternalId: session.externalId, resultVersion: version?.number ?? null };
  }

  /**
   * Starts a run of the job: a queued row, or a running one whose run BullMQ handed over (its
   * worker died or lost the lock). The returned `attempts` is this run's number: the run it took
   * over is fenced out, its later writes (intermediate results, commit, finish) change nothing.
   */
  async startJob(id: string): Promise<JobRecord | null> {
    const [started] = await this.prisma.$queryRaw<{ attempts: number }[]>`
      UPDATE compaction_jobs SET status = 'running', started_at = now(), attempts = attempts + 1
      WHERE id = ${id}::uuid AND status IN ('queued', 'running') RETURNING attempts`;
    if (!started) return null;
    const job = toJob(await this.prisma.compactionJob.findUniqueOrThrow({ where: { id } }));
    // Triggers that BullMQ folded into this run (deduplication keeps only the latest) are answered by it.
    if (job.dryRun) return job;
    await this.prisma.compactionJob.updateMany({
      where: { sessionId: job.sessionId, status: 'queued', dryRun: false, createdAt: { lte: job.createdAt }, id: { not: id } },
      data: { status: 'skipped', reason: `${SUPERSEDED_BY}${id}`, finishedAt: new Date() },
    });
    return { ...job, attempts: started.attempts };
  }

  /** Whether run `attempt` still owns the job (it is running and nobody took it over). */
  async ownsJob(id: string, attempt: number): Promise<boolean> {
    const n = await this.prisma.compactionJob.count({ where: { id, status: 'running', attempts: attempt } });
    return n === 1;
  }

  /**
   * What the tenant's compactions recorded as summarizer usage today (UTC; the spend caps of issue
   * #15): tokens in and out and cost, over jobs created since the day began. A run in flight adds its own.
   */
  async spendToday(tenantId: string): Promise<{ since: Date; tokens: number; costUsd: number }> {
    const since = utcDayStart();
    const rows = await this.prisma.$queryRaw<{ tokens: bigint | null; cost: Prisma.Decimal | null }[]>`
      SELECT SUM(llm_input_tokens + llm_output_tokens)::bigint AS tokens, SUM(llm_cost_usd) AS cost
      FROM compaction_jobs WHERE tenant_id = ${tenantId}::uuid AND created_at >= ${since}`;
    return { since, tokens: Number(rows[0]?.tokens ?? 0), costUsd: Number(rows[0]?.cost ?? 0) };
  }

  async jobExists(id: string): Promise<boolean> {
    return (await this.prisma.compactionJob.count({ where: { id } })) === 1;
  }

  /** Whether an automatic or manual compaction (not a dry run) of the session is queued or running. */
  async hasPendingJob(sessionId: string): Promise<boolean> {
    const { rows } = await this.pg.pool.query<{ pending: boolean }>({
      ...(this.pg.preparedStatements ? { name: 'compaction-job-pending' } : {}),
      text: `SELECT EXISTS (SELECT 1 FROM compaction_jobs WHERE session_id = $1::uuid AND dry_run = false AND status IN ('queued', 'running')) AS pending`,
      values: [sessionId],
    });
    return rows[0]?.pending === true;
  }

  /** A queued trigger that BullMQ folded into a job that has not started: that job answers it. */
  async supersede(id: string, by: string): Promise<void> {
    // Plain `pg` like createJob: an append that folds into the queued job pays it on the request path.
    await this.pg.pool.query({
      ...(this.pg.preparedStatements ? { name: 'compaction-job-supersede' } : {}),
      text: `UPDATE compaction_jobs SET status = 'skipped', reason = $2, finished_at = $3 WHERE id = $1::uuid AND status = 'queued'`,
      values: [id, `${SUPERSEDED_BY}${by}`, new Date()],
    });
  }

  /**
   * Ends a job whose run BullMQ ended outside the handler (attempts used up, stalled too often,
   * lost from Redis): only a row still queued or running changes. Returns whether it did.
   */
  async failUnfinished(id: string, error: string): Promise<boolean> {
    const { count } = await this.prisma.compactionJob.updateMany({ where: { id, status: { in: ['queued', 'running'] } }, data: { status: 'failed', error, finishedAt: new Date() } });
    return count === 1;
  }

  /** Rows the sweep checks against BullMQ: queued or running since before `before`, oldest first. */
  async unfinishedSince(before: Date, limit: number): Promise<{ id: string; sessionId: string; tenantId: string; status: CompactionStatus; dryRun: boolean }[]> {
    return this.prisma.compactionJob.findMany({
      where: { status: { in: ['queued', 'running'] }, OR: [{ startedAt: { lt: before } }, { startedAt: null, createdAt: { lt: before } }] },
      orderBy: { createdAt: 'asc' },
      take: limit,
      select: { id: true, sessionId: true, tenantId: true, status: true, dryRun: true },
    });
  }

  /**
   * Sessions last active between `since` and `before` that may be over their threshold with no compaction to answer
   * it: none queued or running, and none created since their last append (that one's outcome, a
   * hold or a failure, stands) unless the sweep declared it lost. The caller checks the threshold.
   */
  async sessionsWithoutPendingCompaction(since: Date, before: Date, limit: number): Promise<{ id: string }[]> {
    return this.prisma.$queryRaw<{ id: string }[]>`
      SELECT s.id FROM sessions s
      WHERE s.last_activity_at >= ${since} AND s.last_activity_at < ${before} AND s.context_tokens > 0
        AND NOT EXISTS (
          SELECT 1 FROM compaction_jobs j WHERE j.session_id = s.id AND j.dry_run = false
            AND (j.status IN ('queued', 'running') OR (j.created_at >= s.last_activity_at AND COALESCE(j.error, '') NOT LIKE 'lost:%')))
      ORDER BY s.last_activity_at DESC LIMIT ${limit}`;
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
    /** The run that finishes: only while it still owns the job (see startJob). Omitted: any unfinished row (a job that never started). */
    attempt?: number,
  ): Promise<boolean> {
    const { count } = await this.prisma.compactionJob.updateMany({
      where: { id, ...(attempt === undefined ? { status: { in: ['queued', 'running'] } } : { status: 'running', attempts: attempt }) },
      data: { ...data, finishedAt: new Date() },
    });
    return count === 1;
  }

  /**
   * Deletes the session's artifacts that nothing refers to any more (seed 003's "delete the
   * offload files", under SPEC.md's rule): no version refers to them. Returns how many went.
   */
  async deleteUnreferencedArtifacts(sessionId: string): Promise<number> {
    return this.prisma.$executeRaw`
      DELETE FROM artifacts a WHERE a.session_id = ${sessionId}::uuid
        AND NOT EXISTS (SELECT 1 FROM version_artifacts va WHERE va.session_id = a.session_id AND va.artifact_id = a.id)`;
  }

  /** An artifact of one of the tenant's sessions, byte-exact. */
  async findArtifact(tenantId: string, id: string) {
    return this.prisma.artifact.findFirst({
      where: { id, session: { tenantId } },
      select: { id: true, content: true, mediaType: true, bytes: true, sha256: true, seq: true, toolUseId: true, toolName: true, session: { select: { externalId: true } } },
    });
  }

  /** The session's facts ledger as the workers last left it (null before the first run). */
  async ledger(sessionId: string): Promise<{ throughSeq: number; state: unknown } | null> {
    return this.prisma.sessionLedger.findUnique({ where: { sessionId }, select: { throughSeq: true, state: true } });
  }

  /** Saves the ledger when it reaches further than the stored one (a slower run never moves it back). */
  async saveLedger(sessionId: string, throughSeq: number, state: Prisma.InputJsonValue): Promise<void> {
    await this.prisma.$executeRaw`
      INSERT INTO session_ledgers (session_id, through_seq, state, updated_at) VALUES (${sessionId}::uuid, ${throughSeq}, ${JSON.stringify(state)}::jsonb, now())
      ON CONFLICT (session_id) DO UPDATE SET through_seq = EXCLUDED.through_seq, state = EXCLUDED.state, updated_at = now()
      WHERE session_ledgers.through_seq < EXCLUDED.through_seq`;
  }

  /** Outputs of expensive steps saved during a run (LLM summaries by request hash), so a retry never pays twice. */
  async intermediate(id: string): Promise<Record<string, unknown>> {
    const job = await this.prisma.compactionJob.findUnique({ where: { id }, select: { intermediate: true } });
    return (job?.intermediate as Record<string, unknown> | undefined) ?? {};
  }

  /** Adds one key to the job's saved outputs in a single statement (concurrent keys never overwrite each other). */
  async saveIntermediate(id: string, key: string, value: Prisma.InputJsonValue): Promise<void> {
    await this.prisma.$executeRaw`
      UPDATE compaction_jobs SET intermediate = intermediate || jsonb_build_object(${key}::text, ${JSON.stringify(value)}::jsonb) WHERE id = ${id}::uuid`;
  }

  /** Records one event (under the session row lock, see insertSessionEvents); returns its id, null when the session is gone. Publish after it returns. */
  async event(sessionId: string, tenantId: string, type: string, line: string, data: Prisma.InputJsonValue = {}): Promise<bigint | null> {
    const [row] = await insertSessionEvents(this.prisma, sessionId, tenantId, [{ type, line, data }]);
    return row?.id ?? null;
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
      ...(version.watermarkSeq !== null ? { watermarkSeq: version.watermarkSeq } : {}),
      ...(isGoalBlock(version.goalBlock) ? { goalBlock: version.goalBlock } : {}),
      checkpoints: version.checkpoints.map(({ checkpoint: c }) => ({
        id: c.contentId,
        fromSeq: c.fromSeq,
        toSeq: c.toSeq,
        level: LEVELS.indexOf(c.level),
        text: c.text,
        ...(c.facts ? { facts: c.facts } : {}),
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
    // The artifacts go first, outside the transaction, through the pg pool (writeArtifacts). A commit that then returns
    // null (head moved) or fails leaves them unreferenced until the session's next deleteUnreferencedArtifacts.
    const written = request.artifacts?.length ? await this.writeArtifacts(this.pg, request.sessionId, request.artifacts) : new Set<string>();
    return this.prisma.$transaction(async (tx) => {
      if (request.jobId && request.attempt !== undefined) {
        // Fencing: the row lock orders this commit against a takeover's startJob.
        const [owner] = await tx.$queryRaw<{ id: string }[]>`
          SELECT id FROM compaction_jobs WHERE id = ${request.jobId}::uuid AND status = 'running' AND attempts = ${request.attempt} FOR UPDATE`;
        if (!owner) throw new JobTakenOver(request.jobId, request.attempt);
      }
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
            facts: c.facts ?? null,
            tokens: c.tokens,
            originalTokens: c.originalTokens,
            agedFromId: agedFrom?.id ?? null,
            keyDecisions: c.keyDecisions ?? [],
            filesModified: c.filesModified ?? [],
            nextSteps: c.nextSteps ?? [],
            factsLedger: c.factsLedger ?? Prisma.DbNull,
            factsSurvived: c.factsSurvived ?? null,
            compactionJobId: request.jobId ?? null,
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
          cause: request.cause ?? 'compaction',
          coversThroughSeq: request.coversThroughSeq,
          treatments: request.treatments as Prisma.InputJsonValue,
          watermarkSeq: request.watermarkSeq ?? null,
          goalBlock: request.goalBlock ?? Prisma.DbNull,
          prefixTokens: request.prefixTokens,
          compactionJobId: request.jobId ?? null,
          restoredFromId: request.restoredFromId ?? null,
          checkpoints: { create: rowIds.map((checkpointId, position) => ({ checkpointId, position })) },
        },
      });
      // Written before the transaction but deleted meanwhile (another run's cleanup of unreferenced artifacts): again, here.
      const present = written.size > 0 ? new Set((await tx.artifact.findMany({ where: { sessionId: request.sessionId, id: { in: [...written] } }, select: { id: true } })).map((a) => a.id)) : written;
      const toWrite = (request.artifacts ?? []).filter((a) => !present.has(a.id));
      if (toWrite.length) {
        await tx.artifact.createMany({
          data: toWrite.map((a) => {
            const content = Buffer.from(a.content, 'utf8');
            return {
              sessionId: request.sessionId,
              id: a.id,
              seq: a.seq,
              toolUseId: a.toolUseId ?? null,
              toolName: a.toolName ?? null,
              content,
              bytes: content.length,
              tokens: a.tokens,
              sha256: createHash('sha256').update(content).digest('hex'),
            };
          }),
          skipDuplicates: true,
        });
      }
      if (request.artifactIds?.length) {
        await tx.versionArtifact.createMany({
          data: [...new Set(request.artifactIds)].map((artifactId) => ({ versionId, sessionId: request.sessionId, artifactId })),
        });
      }
      const now = new Date();
      if (request.snapshotBefore) {
        // The head this version replaces, pinned before the swap: undoing the compaction restores it.
        await tx.snapshot.create({
          data: { sessionId: request.sessionId, versionId: request.baseVersionId, kind: 'pre_compaction', metadata: request.snapshotBefore.metadata, compactionJobId: request.jobId ?? null, createdAt: now },
        });
        await tx.event.create({
          data: { sessionId: request.sessionId, tenantId: request.tenantId, type: 'snapshot-created', line: request.snapshotBefore.line, data: request.jobId ? { jobId: request.jobId } : {}, createdAt: now },
        });
      }
      if (request.contextTokens === undefined) {
        await tx.session.update({ where: { id: request.sessionId }, data: { headVersionId: versionId, updatedAt: now } });
      } else {
        // Messages appended while the compaction ran stay live (Guarantee 6): their tokens count on top.
        const [updated] = await tx.$queryRaw<{ lastSeq: number; contextTokens: number }[]>`
          UPDATE sessions SET head_version_id = ${versionId}::uuid, compactions = ${request.compactionsInForce === undefined ? Prisma.sql`compactions + ${(request.cause ?? 'compaction') === 'compaction' ? 1 : 0}` : Prisma.sql`${request.compactionsInForce}`}, updated_at = ${now},
            reliability = ${request.reliability ? Prisma.sql`${request.reliability.score}` : Prisma.sql`reliability`},
            context_confidence = ${request.reliability ? Prisma.sql`${request.reliability.contextConfidence}` : Prisma.sql`context_confidence`},
            context_tokens = ${request.contextTokens} + COALESCE(
              (SELECT sum(tokens)::int FROM messages WHERE session_id = ${request.sessionId}::uuid AND seq > ${request.loadedThroughSeq}), 0),
            utilization = CASE WHEN ${request.budget} > 0 THEN round(((${request.contextTokens} + COALESCE(
              (SELECT sum(tokens)::int FROM messages WHERE session_id = ${request.sessionId}::uuid AND seq > ${request.loadedThroughSeq}), 0))::numeric / ${request.budget}), 6)::float8 ELSE 1 END
          WHERE id = ${request.sessionId}::uuid
          RETURNING last_seq AS "lastSeq", context_tokens AS "contextTokens"`;
        await tx.usagePoint.create({
          data: {
            sessionId: request.sessionId,
            kind: request.cause === 'restore' ? 'restore' : request.cause === 'goal_update' ? 'goal_update' : 'compaction',
            seq: updated.lastSeq,
            contextTokens: updated.contextTokens,
            budget: request.budget,
            threshold: request.threshold,
            compactionJobId: request.jobId ?? null,
            createdAt: now,
          },
        });
      }
      if (request.events.length) {
        await tx.event.createMany({
          data: request.events.map((e) => ({
            sessionId: request.sessionId,
            tenantId: request.tenantId,
            type: e.type,
            line: e.line,
            data: { ...(e.data ?? {}), ...(request.jobId ? { jobId: request.jobId } : {}) } as Prisma.InputJsonValue,
            createdAt: now,
          })),
        });
      }
      return versionId;
    });
  }
}
