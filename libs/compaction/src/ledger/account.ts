import type { CompactionEvent } from '../engine/types';
import { LedgerEntry } from './ledger';
import { entryText } from './render';

/** What one compaction did with the ledger of the span it summarized (SPEC.md "Facts ledger"). */
export interface LedgerTotals {
  listed: number;
  /** Entries the summary (or the rest of the context) already held. */
  kept: LedgerEntry[];
  /** Entries the summary lacked, appended to the checkpoint's Facts section. */
  repaired: LedgerEntry[];
  /** Entries that did not fit the ledger's share of the budget. */
  dropped: LedgerEntry[];
}

/** At most this many entries of each list travel in an event (the counts are always whole). */
const EVENT_ENTRIES = 40;

const view = (e: LedgerEntry) => ({ kind: e.kind, text: entryText(e), seq: e.lastSeq });

export function ledgerSummary(t: LedgerTotals) {
  return {
    listed: t.listed,
    kept: t.kept.length,
    repaired: t.repaired.length,
    dropped: t.dropped.length,
    keptEntries: t.kept.slice(0, EVENT_ENTRIES).map(view),
    repairedEntries: t.repaired.slice(0, EVENT_ENTRIES).map(view),
    droppedEntries: t.dropped.slice(0, EVENT_ENTRIES).map(view),
  };
}

/** The `facts-ledger` event of a checkpoint: counts in the line, the entries in its data. */
export function ledgerEvent(t: LedgerTotals): CompactionEvent {
  return {
    type: 'facts-ledger',
    line: `Facts ledger: ${t.listed} entries of the span; the summary held ${t.kept.length}, ${t.repaired.length} appended to its Facts section, ${t.dropped.length} left out for room`,
    data: ledgerSummary(t),
  };
}
