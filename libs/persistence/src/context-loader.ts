import { Injectable } from '@nestjs/common';
import { SessionMessage, VersionPrefix } from '@compactor/compaction';
import { CompactionRepository, prefixOf } from './compaction.repository';
import { MessageRepository } from './message.repository';
import { SessionRecord } from './session.repository';
import { canonicalOf } from './stored-message';

/** A session's head version: what its context is built from besides the stored messages. */
export interface LoadedHead {
  versionId: string;
  number: number;
  prefix: VersionPrefix;
}

/**
 * What a session's context is built from (SPEC.md "Context"): the head version's prefix and the
 * stored messages in their canonical form with their counts. The API's context reads (ContextService,
 * which caches and extends it) and the worker's compactions load it here alike.
 */
@Injectable()
export class ContextLoader {
  constructor(
    private readonly messages: MessageRepository,
    private readonly compactions: CompactionRepository,
  ) {}

  /** The head version (null before the first compaction). */
  async head(session: Pick<SessionRecord, 'id' | 'headVersionId'>): Promise<LoadedHead | null> {
    const head = await this.compactions.head(session.id, session.headVersionId);
    return head ? { versionId: head.versionId, number: head.number, prefix: prefixOf(head) } : null;
  }

  /** The stored messages with seq in (afterSeq, throughSeq], in order. */
  async messagesBetween(sessionId: string, afterSeq: number, throughSeq: number): Promise<SessionMessage[]> {
    const rows = await this.messages.forContext(sessionId, afterSeq, throughSeq);
    return rows.map((r) => ({ seq: r.seq, message: canonicalOf(r), tokens: r.tokens }));
  }
}
