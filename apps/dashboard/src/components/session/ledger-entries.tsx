import { kindLabel, type LedgerEntry } from '../../lib/compaction-audit';
import styles from './session.module.css';

/** Facts-ledger entries as a list: kind, the entry's text, and the message it was last seen in. */
export function LedgerEntries({ entries, testId, empty }: { entries: LedgerEntry[]; testId?: string; empty?: string }) {
  if (entries.length === 0) return empty ? <p className="empty-note">{empty}</p> : null;
  return (
    <ul className={styles.ledgerList} data-testid={testId}>
      {entries.map((e, i) => (
        <li key={`${e.kind}-${e.seq}-${i}`} className={styles.ledgerEntry} data-kind={e.kind}>
          <span className={styles.ledgerKind}>{kindLabel(e.kind)}</span>
          <span className={styles.ledgerText}>{e.text}</span>
          <span className={styles.ledgerSeq}>msg {e.seq}</span>
        </li>
      ))}
    </ul>
  );
}

/** The three groups of one compaction's ledger: left out for room, appended to its Facts section, kept by the summary. */
export function LedgerGroups({ ledger }: { ledger: { kept: number; repaired: number; dropped: number; keptEntries: LedgerEntry[]; repairedEntries: LedgerEntry[]; droppedEntries: LedgerEntry[] } }) {
  const groups = [
    // What was lost first, then what had to be added back, then what the summary already held.
    { key: 'dropped', title: 'Left out for room', count: ledger.dropped, entries: ledger.droppedEntries },
    { key: 'repaired', title: 'Appended to the Facts section', count: ledger.repaired, entries: ledger.repairedEntries },
    { key: 'kept', title: 'Kept by the summary', count: ledger.kept, entries: ledger.keptEntries },
  ];
  return (
    <>
      {groups.map((g) => (
        <div key={g.key} className={styles.ledgerGroup} data-testid={`ledger-${g.key}`} data-count={g.count}>
          <h4 className={styles.ledgerHeading}>
            {g.title} ({g.count}){g.entries.length < g.count ? <span className="muted"> · first {g.entries.length} shown</span> : null}
          </h4>
          <LedgerEntries entries={g.entries} empty="None." />
        </div>
      ))}
    </>
  );
}
