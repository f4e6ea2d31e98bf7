import { snapshotRows } from './session-snapshots';

describe('snapshotRows', () => {
  it('describes each snapshot by kind, label and what it pinned, and marks the one in force', () => {
    const rows = snapshotRows(
      [
        { id: 's2', kind: 'manual', label: 'before the refactor', version: 3, compactionJobId: null, metadata: { lastSeq: 88, contextTokens: 7_584, utilization: 0.554, compactions: 3 }, createdAt: '2026-11-23T14:26:00.000Z' },
        { id: 's1', kind: 'pre-compaction', label: null, version: 2, compactionJobId: 'job-3', metadata: { lastSeq: 80, contextTokens: 11_844, utilization: 0.866, compactions: 1 }, createdAt: '2026-11-23T14:25:03.040Z' },
      ],
      3,
    );
    expect(rows.map((r) => [r.title, r.kindLabel, r.isHead, r.details, r.compactionJobId])).toEqual([
      ['before the refactor · version 3', 'Manual', true, 'through message 88 · 7,584 tokens (55%) · 3 compactions', null],
      ['Version 2', 'Before compaction', false, 'through message 80 · 11,844 tokens (87%) · 1 compaction', 'job-3'],
    ]);
    expect(rows[1].createdText).toBe('2026-11-23 14:25:03 UTC');
  });
});
