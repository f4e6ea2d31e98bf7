import { Injectable } from '@nestjs/common';
import { MessageKeys, messageKeys, StoredKeys } from '@compactor/compaction';
import { canonicalOf, MessageRepository, SessionRecord } from '@compactor/persistence';
import { LRUCache } from 'lru-cache';

/** A session's history as the proxy compares it: keys per message, the system prompts at its start apart. */
export interface StoredConversation {
  throughSeq: number;
  /** Seqs and tokens of the system messages before the first turn (replaced by the request's own when forwarding). */
  leadingSystemSeqs: number[];
  leadingSystemTokens: number;
  /** Whether a turn came after them (later system messages are ordinary history). */
  leadingDone: boolean;
  keys: StoredKeys[];
}

const MAX_SESSIONS = 5_000;

/**
 * Per-process cache of each session's message keys. The history is append-only, so a cached
 * entry stays right and only needs the rows appended since; each use is checked against the
 * session row the request read (its last seq).
 */
@Injectable()
export class ConversationStore {
  /** Entries are read with peek: only `touch` (a load that serves or refreshes an entry, an extend) makes one the most recently used. */
  private readonly entries = new LRUCache<string, StoredConversation>({ max: MAX_SESSIONS });

  constructor(private readonly messages: MessageRepository) {}

  async load(session: SessionRecord): Promise<StoredConversation> {
    const cached = this.entries.peek(session.id);
    if (cached && cached.throughSeq === session.lastSeq) return this.touch(session.id, cached);
    if (cached && cached.throughSeq > session.lastSeq) return this.cut(cached, session.lastSeq);
    const after = cached?.throughSeq ?? 0;
    const rows = await this.messages.forContext(session.id, after, session.lastSeq);
    const next: StoredConversation = cached
      ? { ...cached, leadingSystemSeqs: [...cached.leadingSystemSeqs], keys: [...cached.keys] }
      : { throughSeq: 0, leadingSystemSeqs: [], leadingSystemTokens: 0, leadingDone: false, keys: [] };
    for (const row of rows) {
      const message = canonicalOf(row);
      if (!next.leadingDone && message.role === 'system' && !message.inConversation) {
        next.leadingSystemSeqs.push(row.seq);
        next.leadingSystemTokens += row.tokens;
      } else {
        next.leadingDone = true;
        next.keys.push({ seq: row.seq, keys: messageKeys(message) });
      }
    }
    next.throughSeq = session.lastSeq;
    return this.touch(session.id, next);
  }

  /** Which of `ids` are tool calls or results in the session's stored history. */
  knownToolUseIds(sessionId: string, ids: string[]): Promise<string[]> {
    return ids.length === 0 ? Promise.resolve([]) : this.messages.knownToolUseIds(sessionId, ids);
  }

  /**
   * Adds messages the proxy itself just appended (`keys` of the seqs after `afterSeq`), so the
   * next request needs no read; only when the cached entry ends right there and past the
   * leading system prompts. Otherwise the next load reads the rows.
   */
  extend(sessionId: string, afterSeq: number, keys: MessageKeys[]): void {
    const cached = this.entries.peek(sessionId);
    if (!cached || !cached.leadingDone || cached.throughSeq !== afterSeq) return;
    this.touch(sessionId, {
      ...cached,
      throughSeq: afterSeq + keys.length,
      keys: [...cached.keys, ...keys.map((k, i) => ({ seq: afterSeq + 1 + i, keys: k }))],
    });
  }

  private touch(sessionId: string, entry: StoredConversation): StoredConversation {
    this.entries.set(sessionId, entry);
    return entry;
  }

  /** What a request that read an older session row sees (a concurrent request appended meanwhile). */
  private cut(entry: StoredConversation, throughSeq: number): StoredConversation {
    return {
      ...entry,
      throughSeq,
      leadingSystemSeqs: entry.leadingSystemSeqs.filter((s) => s <= throughSeq),
      keys: entry.keys.filter((k) => k.seq <= throughSeq),
    };
  }
}
