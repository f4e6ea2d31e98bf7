import { Injectable } from '@nestjs/common';
import {
  applyPrefix,
  checkpointMessage,
  sessionBudget,
  DomainError,
  messageCounter,
  reliabilityOf,
  thresholdTokens,
  Treatment,
  VersionPrefix,
} from '@compactor/compaction';
import { ApiErrorCode, JobNotFound } from '../errors/http-errors';
import { canonicalOf, CompactionRepository, MessageRepository, prefixOf, ReadSource, SessionRecord, SnapshotRecord, SnapshotRepository } from '@compactor/persistence';
import { EventPublisher } from '@compactor/jobs';
import { resolveModel } from '@compactor/tokens';
import { sessionPolicy } from '../sessions/session-config';
import { SessionsService } from '../sessions/sessions.service';
import { CheckpointList, RestoreResponse, SnapshotList, SnapshotView, VersionDiff } from './snapshots.dto';

const fmt = (n: number) => n.toLocaleString('en-US');
/** A restore that loses the compare-and-swap to a concurrent compaction tries again on the new head. */
const RESTORE_ATTEMPTS = 3;

export class SnapshotNotFound extends DomainError {
  constructor(id: string) {
    super(ApiErrorCode.NotFound, `Snapshot '${id}' not found`);
  }
}

function view(s: SnapshotRecord): SnapshotView {
  return {
    id: s.id,
    kind: s.kind === 'pre_compaction' ? 'pre-compaction' : s.kind,
    label: s.label,
    version: s.versionNumber,
    compactionJobId: s.compactionJobId,
    metadata: s.metadata,
    createdAt: s.createdAt.toISOString(),
  };
}

/**
 * Snapshots, restore and undo (SPEC.md "Snapshot"), and version diffs. A restore writes a new
 * head version equal to the snapshot's (checkpoints, treatments, watermark and goal block), by
 * compare-and-swap like a compaction: history is never rewritten, and messages appended after
 * the snapshot stay live because a version only covers its prefix.
 */
@Injectable()
export class SnapshotsService {
  constructor(
    private readonly sessions: SessionsService,
    private readonly snapshots: SnapshotRepository,
    private readonly compactions: CompactionRepository,
    private readonly messages: MessageRepository,
    private readonly publisher: EventPublisher,
  ) {}

  async list(tenantId: string, externalId: string, limit: number, before?: string): Promise<SnapshotList> {
    const session = await this.sessions.require(tenantId, externalId);
    const cursor = before ? await this.snapshots.find(session.id, before) : undefined;
    if (before && !cursor) throw new SnapshotNotFound(before);
    const page = await this.snapshots.list(session.id, limit + 1, cursor ? { createdAt: cursor.createdAt, id: cursor.id } : undefined);
    const items = page.slice(0, limit).map(view);
    return { snapshots: items, nextCursor: page.length > limit ? items[items.length - 1].id : null };
  }

  async create(tenantId: string, externalId: string, label: string | null): Promise<SnapshotView> {
    const session = await this.sessions.require(tenantId, externalId);
    const head = await this.compactions.head(session.id, session.headVersionId);
    const created = await this.snapshots.create({
      sessionId: session.id,
      tenantId,
      versionId: session.headVersionId,
      label,
      metadata: { lastSeq: session.lastSeq, contextTokens: session.contextTokens, utilization: session.utilization, compactions: session.compactions, reliability: session.reliability, contextConfidence: session.contextConfidence, versionNumber: head?.number ?? 0 },
      line: `Snapshot${label ? ` "${label}"` : ''} of version ${head?.number ?? 0} (${fmt(session.contextTokens)} tokens)`,
    });
    this.publisher.notify(session.id);
    return view(created);
  }

  async restore(tenantId: string, externalId: string, snapshotId: string): Promise<RestoreResponse> {
    const session = await this.sessions.require(tenantId, externalId);
    const snapshot = await this.snapshots.find(session.id, snapshotId);
    if (!snapshot) throw new SnapshotNotFound(snapshotId);
    return this.restoreSnapshot(session, tenantId, snapshot, `Restored snapshot ${snapshot.label ? `"${snapshot.label}" ` : ''}(version ${snapshot.versionNumber})`);
  }

  /** Undo a compaction: restore the snapshot taken right before its result was applied. */
  async undo(tenantId: string, externalId: string, jobId: string): Promise<RestoreResponse> {
    const session = await this.sessions.require(tenantId, externalId);
    const job = await this.compactions.findJob(tenantId, jobId);
    if (!job || job.sessionId !== session.id) throw new JobNotFound(jobId);
    const snapshot = job.status === 'succeeded' ? await this.snapshots.beforeJob(session.id, jobId) : null;
    if (!snapshot) {
      throw new DomainError(ApiErrorCode.Conflict, `Compaction ${jobId} changed nothing to undo (status ${job.status}${job.dryRun ? ', dry run' : ''})`, { status: job.status });
    }
    return this.restoreSnapshot(session, tenantId, snapshot, `Undid compaction ${jobId.slice(0, 8)}: restored version ${snapshot.versionNumber}`);
  }

  private async restoreSnapshot(first: SessionRecord, tenantId: string, snapshot: SnapshotRecord, line: string): Promise<RestoreResponse> {
    const target = prefixOf(snapshot.versionId ? await this.compactions.head(first.id, snapshot.versionId) : null);
    const artifactIds = snapshot.versionId ? await this.snapshots.versionArtifactIds(snapshot.versionId) : [];
    const counter = messageCounter(resolveModel(first.model).spec);
    let session = first;
    for (let attempt = 1; attempt <= RESTORE_ATTEMPTS; attempt++) {
      const rows = await this.messages.forContext(session.id, 0, session.lastSeq);
      const history = rows.map((r) => ({ seq: r.seq, message: canonicalOf(r), tokens: r.tokens }));
      const contextTokens =
        applyPrefix(target, history, (c) => counter.countMessage(checkpointMessage(c))).reduce((n, m) => n + m.tokens, 0);
      const budget = sessionBudget(session);
      const compactions = typeof snapshot.metadata.compactions === 'number' ? snapshot.metadata.compactions : 0;
      // The restored version's context confidence is the one measured when it was written (1 before any compaction).
      const confidence = snapshot.versionId && typeof snapshot.metadata.contextConfidence === 'number' ? snapshot.metadata.contextConfidence : 1;
      const versionId = await this.compactions.commit({
        sessionId: session.id,
        tenantId,
        cause: 'restore',
        restoredFromId: snapshot.versionId ?? undefined,
        baseVersionId: session.headVersionId,
        coversThroughSeq: target.coversThroughSeq,
        treatments: target.treatments,
        checkpoints: target.checkpoints,
        watermarkSeq: target.watermarkSeq,
        goalBlock: target.goalBlock,
        artifactIds,
        prefixTokens: target.checkpoints.reduce((n, c) => n + c.tokens, 0) + (target.goalBlock?.tokens ?? 0),
        contextTokens,
        loadedThroughSeq: session.lastSeq,
        budget: budget.budget,
        threshold: thresholdTokens(budget, sessionPolicy(session)),
        compactionsInForce: compactions,
        reliability: { score: reliabilityOf({ model: resolveModel(session.model).spec, compactions, contextConfidence: confidence }).score, contextConfidence: confidence },
        events: [{ type: 'snapshot-restored', line: `${line}; the context is ${fmt(contextTokens)} tokens, messages after ${target.coversThroughSeq} live` }],
      });
      if (versionId) {
        this.publisher.notify(session.id);
        const after = await this.sessions.require(tenantId, session.externalId);
        const head = await this.compactions.head(after.id, after.headVersionId);
        return { snapshotId: snapshot.id, restoredVersion: snapshot.versionNumber, version: head?.number ?? 0, contextTokens: after.contextTokens };
      }
      session = await this.sessions.require(tenantId, session.externalId);
    }
    throw new DomainError(ApiErrorCode.Conflict, 'Compactions kept changing the context; send the request again');
  }

  /**
   * What changed between two versions (0 = the uncompacted history): for each covered message,
   * its treatment in `a` and in `b`, grouped as masked, offloaded, summarized (into which
   * checkpoint), compressed, dropped, or restored (treated in `a`, verbatim in `b`).
   */
  async diff(tenantId: string, externalId: string, a: number, b: number): Promise<VersionDiff> {
    const session = await this.sessions.require(tenantId, externalId);
    const load = async (n: number, field: string) => {
      const id = await this.snapshots.versionId(session.id, n);
      if (id === undefined) throw new DomainError(ApiErrorCode.NotFound, `Version ${n} of session '${externalId}' not found`, { field });
      return prefixOf(id ? await this.compactions.head(session.id, id) : null);
    };
    const [pa, pb] = [await load(a, 'a'), await load(b, 'b')];
    const treatmentIn = (p: VersionPrefix, seq: number): Treatment | undefined => (seq <= p.coversThroughSeq ? p.treatments[seq] : undefined);
    const seqs = [...new Set([...Object.keys(pa.treatments), ...Object.keys(pb.treatments)].map(Number))].sort((x, y) => x - y);
    const out: VersionDiff['messages'] = { masked: [], offloaded: [], summarized: [], compressed: [], dropped: [], restored: [] };
    for (const seq of seqs) {
      const ta = treatmentIn(pa, seq);
      const tb = treatmentIn(pb, seq);
      if (JSON.stringify(ta) === JSON.stringify(tb)) continue;
      if (!tb) {
        out.restored.push({ seq, was: ta!.kind });
        continue;
      }
      const entry = { seq, was: ta?.kind ?? null };
      if (tb.kind === 'summarized') out.summarized.push({ ...entry, checkpointId: tb.checkpointId });
      else if (tb.kind === 'offloaded') out.offloaded.push({ ...entry, artifactIds: tb.artifactIds });
      else out[tb.kind].push(entry);
    }
    const ids = (p: VersionPrefix) => new Set(p.checkpoints.map((c) => c.id));
    const [ia, ib] = [ids(pa), ids(pb)];
    const brief = (c: VersionPrefix['checkpoints'][number]) => ({ id: c.id, fromSeq: c.fromSeq, toSeq: c.toSeq, level: c.level, tokens: c.tokens });
    return {
      sessionId: externalId,
      a,
      b,
      coversThroughSeq: { a: pa.coversThroughSeq, b: pb.coversThroughSeq },
      watermarkSeq: { a: pa.watermarkSeq ?? null, b: pb.watermarkSeq ?? null },
      goalBlockChanged: (pa.goalBlock?.text ?? null) !== (pb.goalBlock?.text ?? null),
      messages: out,
      checkpoints: { added: pb.checkpoints.filter((c) => !ia.has(c.id)).map(brief), removed: pa.checkpoints.filter((c) => !ib.has(c.id)).map(brief) },
    };
  }

  /** The checkpoint timeline (seed 004): every checkpoint with its level, sizes, extracted facts and the pinned-facts share that survived. */
  async checkpoints(tenantId: string, externalId: string): Promise<CheckpointList> {
    const session = await this.sessions.require(tenantId, externalId);
    const rows = await this.snapshots.checkpoints(session.id, session.headVersionId);
    return {
      sessionId: externalId,
      checkpoints: rows.map((c) => ({
        id: c.contentId,
        fromSeq: c.fromSeq,
        toSeq: c.toSeq,
        level: c.level,
        text: c.text,
        facts: c.facts ?? null,
        tokens: c.tokens,
        originalTokens: c.originalTokens,
        agedFrom: c.agedFrom?.contentId ?? null,
        inContext: c.inHead,
        keyDecisions: c.keyDecisions as string[],
        filesModified: c.filesModified as string[],
        nextSteps: c.nextSteps as string[],
        factsSurvived: c.factsSurvived,
        createdAt: c.createdAt.toISOString(),
      })),
    };
  }

  /**
   * The session's full history, versions, checkpoints, snapshots, jobs and events as one JSON
   * document (seed 004's session file), as the text chunks of that document: the history is read
   * in pages of about EXPORT_PAGE_CHARS (at most EXPORT_PAGE messages) and the events EXPORT_PAGE at
   * a time, so memory stays bounded however long the session.
   * Byte for byte what `JSON.stringify` of the whole document gives. Everything is read as of the
   * first chunk: messages through the session's lastSeq then, events through the last id then (a
   * history is append-only, so the document is one consistent cut). The first `next()` does every
   * check and query that can fail before a byte is sent (404, 503); a later failure is the caller's
   * to abort the response with.
   */
  async *exportChunks(tenantId: string, externalId: string): AsyncGenerator<string> {
    const session = await this.sessions.require(tenantId, externalId);
    // Read after the session (on the primary), so the replica, when chosen, has every message through its lastSeq.
    const source = await this.snapshots.exportSource();
    const [meta, head] = await Promise.all([this.snapshots.exportMeta(session.id, source), this.compactions.head(session.id, session.headVersionId)]);
    const document = {
      format: 'compactor.session-export.v1',
      exportedAt: new Date().toISOString(),
      session: {
        id: session.externalId,
        model: session.model,
        contextWindow: session.contextWindow,
        outputReserve: session.outputReserve,
        policy: session.policy,
        goal: session.goal ?? null,
        headVersion: head?.number ?? 0,
        lastSeq: session.lastSeq,
        contextTokens: session.contextTokens,
        compactions: session.compactions,
      },
    };
    // The object without its closing brace, then the members in the document's order.
    yield `${JSON.stringify(document).slice(0, -1)},"messages":[`;
    let first = true;
    for (let after = 0, size = EXPORT_FIRST_PAGE; after < session.lastSeq; ) {
      const { items, lastSeq } = await this.exportMessagePage(session.id, after, session.lastSeq, size, source);
      if (items.length === 0) break;
      after = lastSeq;
      size = nextExportPage(items.length, items.reduce((sum, item) => sum + item.length, 0));
      yield* joinItems(items, first);
      first = false;
    }
    yield `],"versions":${JSON.stringify(meta.versions.map(exportedVersion))}`;
    yield `,"checkpoints":${JSON.stringify(meta.checkpoints.map(exportedCheckpoint))}`;
    yield `,"snapshots":${JSON.stringify(meta.snapshots.map(view))}`;
    yield `,"jobs":${JSON.stringify(meta.jobs.map((j) => ({ ...j, llmCostUsd: j.llmCostUsd.toString() })))}`;
    yield ',"events":[';
    first = true;
    for (let after = 0n; after < meta.lastEventId; ) {
      const page = await this.snapshots.exportEvents(session.id, after, meta.lastEventId, EXPORT_PAGE, source);
      if (page.length === 0) break;
      yield* joinItems(
        page.map((e) => JSON.stringify({ id: e.id.toString(), type: e.type, line: e.line, data: e.data, createdAt: e.createdAt })),
        first,
      );
      first = false;
      after = page[page.length - 1].id;
    }
    yield ']}';
  }

  /** One page of the export's messages as JSON text; the rows themselves are not kept while the text goes out. */
  private async exportMessagePage(sessionId: string, afterSeq: number, throughSeq: number, limit: number, source: ReadSource): Promise<{ items: string[]; lastSeq: number }> {
    const rows = await this.snapshots.exportMessages(sessionId, afterSeq, throughSeq, limit, source);
    return { items: rows.map((m) => JSON.stringify(exportedMessage(m))), lastSeq: rows.at(-1)?.seq ?? afterSeq };
  }
}

/** Rows the export reads per query at most (messages, events). */
export const EXPORT_PAGE = 1000;
/** Messages of the export's first page, before it knows how large this session's messages are. */
const EXPORT_FIRST_PAGE = 100;
/** JSON characters one page of messages aims at, so a session of large messages reads fewer per page. */
const EXPORT_PAGE_CHARS = 2_000_000;
/** Characters the export hands to the response at once: a page goes out in pieces of about this size. */
const EXPORT_CHUNK = 256 * 1024;

/** How many messages the next page reads, from the size of the last one: about EXPORT_PAGE_CHARS, 1 to EXPORT_PAGE. */
export function nextExportPage(rows: number, chars: number): number {
  if (rows === 0 || chars === 0) return EXPORT_PAGE;
  return Math.max(1, Math.min(EXPORT_PAGE, Math.floor((EXPORT_PAGE_CHARS * rows) / chars)));
}

/** Array items (JSON text) in pieces of about EXPORT_CHUNK, commas between items (and before the first, unless it opens the array). */
function* joinItems(items: string[], first: boolean): Generator<string> {
  let piece = '';
  for (let i = 0; i < items.length; i++) {
    piece += (first && i === 0 ? '' : ',') + items[i];
    if (piece.length >= EXPORT_CHUNK) {
      yield piece;
      piece = '';
    }
  }
  if (piece !== '') yield piece;
}

type ExportMeta = Awaited<ReturnType<SnapshotRepository['exportMeta']>>;

function exportedMessage(m: Awaited<ReturnType<SnapshotRepository['exportMessages']>>[number]) {
  return { seq: m.seq, role: m.role, format: m.format, message: m.raw, canonical: m.blocks, pinned: m.pinned, tags: m.tags, tokens: m.tokens, createdAt: m.createdAt };
}

function exportedVersion(v: ExportMeta['versions'][number]) {
  return {
    number: v.number,
    cause: v.cause,
    parent: v.parent?.number ?? null,
    coversThroughSeq: v.coversThroughSeq,
    watermarkSeq: v.watermarkSeq,
    goalBlock: v.goalBlock,
    prefixTokens: v.prefixTokens,
    compactionJobId: v.compactionJobId,
    checkpoints: v.checkpoints.map((c) => c.checkpoint.contentId),
    treatments: v.treatments,
    createdAt: v.createdAt,
  };
}

function exportedCheckpoint(c: ExportMeta['checkpoints'][number]) {
  return {
    id: c.contentId,
    fromSeq: c.fromSeq,
    toSeq: c.toSeq,
    level: c.level,
    text: c.text,
    facts: c.facts ?? null,
    tokens: c.tokens,
    originalTokens: c.originalTokens,
    keyDecisions: c.keyDecisions,
    filesModified: c.filesModified,
    nextSteps: c.nextSteps,
    factsSurvived: c.factsSurvived,
    createdAt: c.createdAt,
  };
}
