import type { components } from '../api/schema';
import { formatPercent, formatTimestamp, formatTokens } from './session-format';

export type CheckpointView = components['schemas']['CheckpointView'];
export type CheckpointLevel = CheckpointView['level'];

/** Seed 004's aging levels, newest first, with their balanced-policy meaning. */
export const CHECKPOINT_LEVELS: { level: CheckpointLevel; label: string; description: string }[] = [
  { level: 'recent', label: 'Recent', description: 'Fresh summary of the latest compacted span' },
  { level: 'old', label: 'Old', description: 'Aged once: about half the size' },
  { level: 'ancient', label: 'Ancient', description: 'Aged twice: a quarter of the size' },
  { level: 'ultra', label: 'Ultra', description: 'Aged three times or merged: the essentials only' },
];

/** The element id a checkpoint is shown under, so history rows and context entries can link to it. */
export function checkpointAnchor(id: string): string {
  return `checkpoint-${id.replace(/[^A-Za-z0-9_-]/g, '_')}`;
}

export interface CheckpointCard {
  id: string;
  anchor: string;
  level: CheckpointLevel;
  fromSeq: number;
  toSeq: number;
  range: string;
  tokens: number;
  originalTokens: number;
  /** "677 of 7,270 tokens (9%)" */
  sizeText: string;
  inContext: boolean;
  agedFrom: { id: string; anchor: string } | null;
  /** The checkpoint that aged from this one, when there is one. */
  agedInto: { id: string; anchor: string } | null;
  createdAt: string;
  createdText: string;
  text: string;
  keyDecisions: string[];
  filesModified: string[];
  nextSteps: string[];
  factsSurvived: string | null;
  /** The Facts section appended to the summary: ledger entries the summary lacked (null: none). */
  facts: string | null;
  /** Position on the seq axis, in % of the history: where the bar starts and how wide it is. */
  bar: { left: number; width: number };
}

export interface CheckpointLane {
  level: CheckpointLevel;
  label: string;
  description: string;
  checkpoints: CheckpointCard[];
}

export interface CheckpointTimeline {
  lanes: CheckpointLane[];
  total: number;
  inContext: number;
  /** Text alternative of the timeline. */
  summary: string;
}

export function checkpointTimeline(checkpoints: CheckpointView[], messageCount: number): CheckpointTimeline {
  const span = Math.max(messageCount, ...checkpoints.map((c) => c.toSeq), 1);
  const agedInto = new Map<string, string>();
  for (const c of checkpoints) if (c.agedFrom) agedInto.set(c.agedFrom, c.id);
  const cards = checkpoints.map((c): CheckpointCard => {
    const child = agedInto.get(c.id);
    const left = ((c.fromSeq - 1) / span) * 100;
    return {
      id: c.id,
      anchor: checkpointAnchor(c.id),
      level: c.level,
      fromSeq: c.fromSeq,
      toSeq: c.toSeq,
      range: c.fromSeq === c.toSeq ? `message ${c.fromSeq}` : `messages ${c.fromSeq}–${c.toSeq}`,
      tokens: c.tokens,
      originalTokens: c.originalTokens,
      sizeText: `${formatTokens(c.tokens)} of ${formatTokens(c.originalTokens)} tokens (${formatPercent(c.tokens / Math.max(c.originalTokens, 1))})`,
      inContext: c.inContext,
      agedFrom: c.agedFrom ? { id: c.agedFrom, anchor: checkpointAnchor(c.agedFrom) } : null,
      agedInto: child ? { id: child, anchor: checkpointAnchor(child) } : null,
      createdAt: c.createdAt,
      createdText: formatTimestamp(c.createdAt),
      text: c.text.replace(/\r\n?/g, '\n'),
      keyDecisions: c.keyDecisions,
      filesModified: c.filesModified,
      nextSteps: c.nextSteps,
      factsSurvived: c.factsSurvived == null ? null : formatPercent(c.factsSurvived),
      facts: c.facts?.trim() ? c.facts.replace(/\r\n?/g, '\n') : null,
      bar: { left, width: Math.max(((c.toSeq - c.fromSeq + 1) / span) * 100, 0.75) },
    };
  });
  const lanes = CHECKPOINT_LEVELS.map(({ level, label, description }) => ({
    level,
    label,
    description,
    checkpoints: cards.filter((c) => c.level === level).sort((a, b) => a.fromSeq - b.fromSeq || a.createdAt.localeCompare(b.createdAt)),
  }));
  const used = cards.filter((c) => c.inContext);
  const summary =
    cards.length === 0
      ? 'No checkpoints yet: nothing has been summarized.'
      : `${cards.length} checkpoints, ${used.length} in the context: ` +
        (used.length === 0
          ? 'none.'
          : used
              .sort((a, b) => a.fromSeq - b.fromSeq)
              .map((c) => `${c.range} at level ${c.level} (${formatTokens(c.tokens)} tokens)`)
              .join('; ') + '.');
  return { lanes, total: cards.length, inContext: used.length, summary };
}

/**
 * The checkpoint that stands for `id` now: aging writes a new checkpoint that names the one it
 * came from, so a history message summarized into an older checkpoint is followed to its
 * current form (the one in the context, when it still is).
 */
export function currentCheckpointId(id: string, checkpoints: Pick<CheckpointView, 'id' | 'agedFrom' | 'inContext'>[]): string {
  const children = new Map<string, string[]>();
  for (const c of checkpoints) if (c.agedFrom) children.set(c.agedFrom, [...(children.get(c.agedFrom) ?? []), c.id]);
  const inContext = new Set(checkpoints.filter((c) => c.inContext).map((c) => c.id));
  // Breadth-first over the aging tree; a merge can make two checkpoints age into one.
  const seen = new Set<string>([id]);
  let frontier = [id];
  let last = id;
  while (frontier.length > 0) {
    const found = frontier.find((c) => inContext.has(c));
    if (found) return found;
    last = frontier[0];
    frontier = frontier.flatMap((c) => children.get(c) ?? []).filter((c) => !seen.has(c) && seen.add(c));
  }
  return last;
}
