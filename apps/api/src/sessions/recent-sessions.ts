import { SessionRecord } from '@compactor/persistence';

/** A session row as this process's last append to it left it, and the shape of that append's messages. */
export interface RecentSession {
  session: SessionRecord;
  format: string;
}

/**
 * The session rows this API process's appends last returned, by tenant and external id, so that an
 * agent loop's next append to the same session skips reading it (one database round trip a turn,
 * issue #21). An entry is a guess, never the truth: the append's write is guarded by the row's
 * version (`xmin`), and when anything changed the row since (another replica's append, a compaction,
 * a settings change, a restore, a deletion) the append writes nothing, forgets the entry and starts
 * again from a fresh read (AppendRepository's `observedRemembered`). Bounded: the least recently used
 * entries go first.
 */
export class RecentSessions {
  private readonly entries = new Map<string, RecentSession>();

  constructor(private readonly capacity = 2_000) {}

  get(tenantId: string, externalId: string): RecentSession | undefined {
    const key = RecentSessions.key(tenantId, externalId);
    const entry = this.entries.get(key);
    if (entry) {
      // Most recently used last: Map keeps insertion order.
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    return entry;
  }

  set(tenantId: string, externalId: string, entry: RecentSession): void {
    const key = RecentSessions.key(tenantId, externalId);
    this.entries.delete(key);
    this.entries.set(key, entry);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
  }

  forget(tenantId: string, externalId: string): void {
    this.entries.delete(RecentSessions.key(tenantId, externalId));
  }

  get size(): number {
    return this.entries.size;
  }

  private static key(tenantId: string, externalId: string): string {
    return `${tenantId}\u0000${externalId}`;
  }
}
