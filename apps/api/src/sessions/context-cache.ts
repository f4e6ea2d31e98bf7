import { CanonicalMessage, SerializedPrefix, ValidPrefix, VersionPrefix } from '@compactor/compaction';
import { SessionRecord } from '@compactor/persistence';
import { LRUCache } from 'lru-cache';

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

/** A serialized response body (UTF-8) in parts, written to the socket in order: never copied into one buffer. */
export interface BodyParts {
  parts: readonly Buffer[];
  /** Bytes in all parts: the response's content-length. */
  length: number;
  /** Whether the read-time fallback fitted this context (its `fallback` line is set). */
  fallback?: boolean;
}

export function bodyOf(buffer: Buffer): BodyParts {
  return { parts: [buffer], length: buffer.length };
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
  bodies: Map<string, BodyParts>;
  /**
   * The final part of the last provider-valid pass over this source's assembled context (everything
   * before its last assistant message), with the counted messages it gave: a read after an append
   * validates and counts only what comes after it.
   */
  valid?: { prefix: ValidPrefix; counted: readonly CachedMessage[]; tokens: number; systemTokens: number };
  /** The final part of the context written as JSON, by format (see serialized-prefix.ts). */
  serialized?: Map<string, SerializedPrefix>;
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
  /** lru-cache evicts the least recently used entries past `maxBytes`; absent when the cache is off (0). */
  private readonly entries: LRUCache<string, CacheEntry> | undefined;

  constructor(private readonly maxBytes: number) {
    this.entries = maxBytes > 0 ? new LRUCache<string, CacheEntry>({ maxSize: maxBytes, sizeCalculation: (entry) => entry.bytes }) : undefined;
  }

  get enabled(): boolean {
    return this.entries !== undefined;
  }

  get(sessionId: string, fingerprint: string): ContextSource | undefined {
    const entry = this.entries?.get(sessionId);
    if (!entry) return undefined;
    if (entry.source.fingerprint !== fingerprint) {
      this.delete(sessionId);
      return undefined;
    }
    return entry.source;
  }

  /** Keeps `source` unless a newer one (further seq) is already cached. */
  set(sessionId: string, source: ContextSource, bytes: number): void {
    if (!this.entries || bytes > this.maxBytes) return;
    const current = this.entries.peek(sessionId);
    if (current && current.source.fingerprint === source.fingerprint && current.source.throughSeq > source.throughSeq) return;
    this.entries.set(sessionId, { source, bytes });
  }

  /** Records the size a new serialized body adds to its entry (evicting older entries past the budget, or this one if it alone exceeds it). */
  grow(sessionId: string, source: ContextSource, bytes: number): void {
    const entry = this.entries?.peek(sessionId);
    if (!this.entries || !entry || entry.source !== source) return;
    const grown = { source, bytes: entry.bytes + bytes };
    if (grown.bytes > this.maxBytes) this.entries.delete(sessionId);
    else this.entries.set(sessionId, grown);
  }

  delete(sessionId: string): void {
    this.entries?.delete(sessionId);
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries?.size ?? 0, bytes: this.entries?.calculatedSize ?? 0 };
  }
}

interface CacheEntry {
  source: ContextSource;
  bytes: number;
}
