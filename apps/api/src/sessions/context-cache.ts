import { CanonicalMessage, VersionPrefix } from '@compactor/compaction';
import { SessionRecord } from '@compactor/persistence';

export interface CachedMessage {
  seq: number;
  message: CanonicalMessage;
  tokens: number;
}

/** What a session's context is assembled from, through one seq; immutable once built. */
export interface CachedHead {
  versionId: string;
  number: number;
  prefix: VersionPrefix;
}

export interface ContextSource {
  fingerprint: string;
  throughSeq: number;
  messages: readonly CachedMessage[];
  /** Messages in their context form after the preset's ingest step, by seq (computed once per message; the fingerprint names the policy). */
  ingested?: Map<number, CachedMessage>;
  /** The head version's prefix (loaded once per fingerprint, which names the head). */
  head?: CachedHead | null;
  /** Response bodies already serialized (UTF-8) for this exact source, by format. */
  bodies: Map<string, Buffer>;
}

/**
 * Everything besides the appended messages that a context depends on. Appended messages are
 * immutable and a context is the head version plus the messages after it, so a cached source
 * whose fingerprint matches is still right and only needs the messages appended since.
 */
export function contextFingerprint(session: SessionRecord): string {
  return JSON.stringify([session.id, session.headVersionId, session.model, session.contextWindow, session.outputReserve, session.policy]);
}

/**
 * A per-process, size-bounded LRU of context sources keyed by session. Every entry is checked
 * against the session row read by the same request, so several API processes, each with its
 * own cache, never serve a stale context: a compaction, restore or config change changes the
 * fingerprint, an append only extends the seq range.
 */
export class ContextCache {
  private readonly entries = new Map<string, { source: ContextSource; bytes: number }>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get enabled(): boolean {
    return this.maxBytes > 0;
  }

  get(sessionId: string, fingerprint: string): ContextSource | undefined {
    const entry = this.entries.get(sessionId);
    if (!entry) return undefined;
    if (entry.source.fingerprint !== fingerprint) {
      this.delete(sessionId);
      return undefined;
    }
    // Most recently used last.
    this.entries.delete(sessionId);
    this.entries.set(sessionId, entry);
    return entry.source;
  }

  /** Keeps `source` unless a newer one (further seq) is already cached. */
  set(sessionId: string, source: ContextSource, bytes: number): void {
    if (!this.enabled || bytes > this.maxBytes) return;
    const current = this.entries.get(sessionId);
    if (current && current.source.fingerprint === source.fingerprint && current.source.throughSeq > source.throughSeq) return;
    this.delete(sessionId);
    this.entries.set(sessionId, { source, bytes });
    this.bytes += bytes;
    for (const [id] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.delete(id);
    }
  }

  /** Records the size a new serialized body adds to its entry. */
  grow(sessionId: string, source: ContextSource, bytes: number): void {
    const entry = this.entries.get(sessionId);
    if (!entry || entry.source !== source) return;
    entry.bytes += bytes;
    this.bytes += bytes;
    for (const [id] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.delete(id);
    }
  }

  delete(sessionId: string): void {
    const entry = this.entries.get(sessionId);
    if (!entry) return;
    this.entries.delete(sessionId);
    this.bytes -= entry.bytes;
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }
}
