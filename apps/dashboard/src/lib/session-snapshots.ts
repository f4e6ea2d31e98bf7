import type { components } from '../api/schema';
import { formatPercent, formatTimestamp, formatTokens } from './session-format';

export type SnapshotView = components['schemas']['SnapshotView'];

const KIND_LABELS: Record<SnapshotView['kind'], string> = {
  'pre-compaction': 'Before compaction',
  threshold: 'At 80% of budget',
  manual: 'Manual',
};

export interface SnapshotRow {
  id: string;
  kind: SnapshotView['kind'];
  kindLabel: string;
  /** The label, or a description when there is none. */
  title: string;
  version: number;
  /** Whether the head version is the one this snapshot pins (restoring it changes nothing but the version number). */
  isHead: boolean;
  createdAt: string;
  createdText: string;
  /** "message 80 · 11,844 tokens (87%) · 2 compactions" */
  details: string;
  compactionJobId: string | null;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

export function snapshotRows(snapshots: SnapshotView[], headVersion: number | null): SnapshotRow[] {
  return snapshots.map((s) => {
    const lastSeq = num(s.metadata.lastSeq);
    const tokens = num(s.metadata.contextTokens);
    const utilization = num(s.metadata.utilization);
    const compactions = num(s.metadata.compactions);
    const details = [
      lastSeq !== null ? `through message ${lastSeq}` : null,
      tokens !== null ? `${formatTokens(tokens)} tokens${utilization !== null ? ` (${formatPercent(utilization)})` : ''}` : null,
      compactions !== null ? `${compactions} compaction${compactions === 1 ? '' : 's'}` : null,
    ].filter((d): d is string => d !== null);
    return {
      id: s.id,
      kind: s.kind,
      kindLabel: KIND_LABELS[s.kind] ?? s.kind,
      title: s.label?.trim() ? `${s.label.trim()} · version ${s.version}` : `Version ${s.version}`,
      version: s.version,
      isHead: (headVersion ?? 0) === s.version,
      createdAt: s.createdAt,
      createdText: formatTimestamp(s.createdAt),
      details: details.join(' · '),
      compactionJobId: s.compactionJobId ?? null,
    };
  });
}
