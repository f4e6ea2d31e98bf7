/**
 * The ledger in the context: which entries matter most (weight), how they are written (one
 * compact Facts section, grouped by kind), and whether a text still holds them (the check that
 * repairs summaries and scores the context's confidence).
 */
import { keyOf } from './rules';
import { isPinned, LedgerEntry, LedgerKind } from './ledger';
import { maxOf } from '../engine/extremes';

export { isPinned };

const KIND_BASE: Record<LedgerKind, number> = {
  constraint: 8,
  decision: 6,
  task: 6,
  error: 5,
  test: 3,
  setting: 3,
  version: 3,
  url: 3,
  path: 2,
  command: 2,
  identifier: 1,
};

/**
 * An entry's weight in the ledger's share of the budget: what it is (constraints, decisions,
 * open tasks and errors first), whether it was mentioned again by the user or the agent, whether
 * its value changed (the latest value is what an agent gets wrong), how directly and how often it
 * was seen, and how recent it is (`maxSeq`: the newest seq).
 */
export function entryWeight(e: LedgerEntry, maxSeq: number): number {
  if (isPinned(e)) return 1_000 + e.lastSeq / Math.max(1, maxSeq);
  let w = KIND_BASE[e.kind] + Math.log2(1 + e.weight);
  if (e.mentionedAgain) w += 3;
  if (e.was?.length) w += 2;
  if (e.kind === 'test' && e.state !== 'passed') w += 2;
  if (e.kind === 'command' && e.state && e.state !== 'exit 0') w += 1.5;
  if (e.kind === 'path') w += e.state === 'created' || e.state === 'edited' || e.state === 'deleted' ? 2 : e.state === 'read' ? 0.5 : -1;
  if (e.kind === 'task' && e.state === 'done') w -= 6;
  if (e.kind === 'identifier' && e.role === 'tool' && !e.mentionedAgain) w -= 0.5;
  return w + e.lastSeq / Math.max(1, maxSeq);
}

/** Entries worth writing down at all: not closed tasks, not paths or identifiers seen once in a tool's bulk output. */
export function isWorthKeeping(e: LedgerEntry): boolean {
  if (e.kind === 'task' && e.state === 'done') return false;
  if (e.weight < 0.5 && !e.mentionedAgain && (e.kind === 'path' || e.kind === 'identifier')) return false;
  return true;
}

// maxOf, not Math.max(...spread): a 30 MB log's ledger has hundreds of thousands of entries, past the call stack's argument limit.
export function rankEntries(entries: LedgerEntry[], maxSeq = maxOf(1, entries.map((e) => e.lastSeq))): LedgerEntry[] {
  return entries
    .filter(isWorthKeeping)
    .map((e) => ({ e, w: entryWeight(e, maxSeq) }))
    .sort((a, b) => b.w - a.w || (a.e.key < b.e.key ? -1 : a.e.key > b.e.key ? 1 : 0))
    .map(({ e }) => e);
}

/** The Facts section's group of the user's constraints (the read-time fallback keeps it when a checkpoint goes). */
export const CONSTRAINTS_LABEL = 'User constraints (verbatim)';

/**
 * The groups of a Facts section, in order. The user's binding constraints (pinned: never cut,
 * Guarantee 3) have the first group to themselves; the user's softer requests (should, please,
 * keep, …: the ledger does not pin them) have their own, which gives way like the rest.
 */
const GROUPS: { kinds: LedgerKind[]; label: string; pinned?: boolean }[] = [
  { kinds: ['constraint'], label: CONSTRAINTS_LABEL, pinned: true },
  { kinds: ['decision'], label: 'Decisions' },
  { kinds: ['task'], label: 'Open tasks' },
  { kinds: ['constraint'], label: 'User requests (verbatim)', pinned: false },
  { kinds: ['error'], label: 'Errors' },
  { kinds: ['test'], label: 'Tests' },
  { kinds: ['path'], label: 'Files' },
  { kinds: ['setting', 'version'], label: 'Settings and versions (latest)' },
  { kinds: ['command'], label: 'Commands' },
  { kinds: ['url'], label: 'URLs' },
  { kinds: ['identifier'], label: 'Identifiers' },
];

/** The ledger kinds a Facts section's group holds, by its label (undefined for a label `renderFacts` does not write). */
export function factsGroupKinds(label: string): readonly LedgerKind[] | undefined {
  return GROUPS.find((g) => g.label === label)?.kinds;
}

/** One entry as written in a Facts section. */
export function entryText(e: LedgerEntry): string {
  const was = e.was?.length ? ` (was ${e.was.slice(-2).join(', ')})` : '';
  switch (e.kind) {
    case 'constraint':
      return `"${e.value}"`;
    case 'decision':
      return `${e.value}${e.locked ? ' [LOCKED]' : ''}`;
    case 'task':
      return e.state && e.state !== 'open' ? `${e.value} (${e.state})` : e.value;
    case 'path':
      return e.state && e.state !== 'mentioned' ? `${e.value} (${e.state})` : e.value;
    case 'test':
    case 'command':
      return e.state ? `${e.kind === 'command' ? `\`${e.value}\`` : e.value} (${e.state})` : e.kind === 'command' ? `\`${e.value}\`` : e.value;
    case 'setting':
    case 'version':
      return `${e.value}${was}`;
    default:
      return e.value;
  }
}

/** A Facts section of these entries, grouped by kind, in rank order within a group. */
export function renderFacts(entries: LedgerEntry[]): string {
  const lines: string[] = [];
  for (const g of GROUPS) {
    const items = entries.filter((e) => g.kinds.includes(e.kind) && (g.pinned === undefined || isPinned(e) === g.pinned));
    if (items.length === 0) continue;
    const sep = g.kinds[0] === 'constraint' || g.kinds[0] === 'error' || g.kinds[0] === 'decision' || g.kinds[0] === 'task' ? '\n  - ' : '; ';
    lines.push(`- ${g.label}:${sep === '; ' ? ' ' : sep}${items.map(entryText).join(sep)}`);
  }
  return lines.join('\n');
}

/**
 * The groups of a written Facts section, in its order: each group's label, whether its items stand one per line
 * (`- Label:` then `  - item` lines) or on the label's line joined by `; `, and its items as written.
 */
export function factsGroups(section: string): { label: string; multi: boolean; items: string[] }[] {
  const groups: { label: string; multi: boolean; items: string[] }[] = [];
  let current: { label: string; multi: boolean; items: string[] } | undefined;
  for (const line of section.split('\n')) {
    if (line.startsWith('  - ') && current?.multi) {
      current.items.push(line.slice(4));
      continue;
    }
    const colon = line.startsWith('- ') ? line.indexOf(':') : -1;
    if (colon < 0) {
      current = undefined;
      continue;
    }
    const rest = line.slice(colon + 1).trim();
    current = { label: line.slice(2, colon), multi: rest.length === 0, items: rest ? rest.split('; ') : [] };
    groups.push(current);
  }
  return groups;
}

/**
 * One Facts section from several (a merge of two checkpoints, or a section and what aging added
 * to it): each group once, in the order `renderFacts` writes them (the user's constraints first),
 * its items in their order of appearance without repeats.
 */
export function mergeFactsSections(sections: (string | undefined)[]): string | undefined {
  const byLabel = new Map<string, { multi: boolean; items: string[] }>();
  for (const section of sections) {
    if (!section) continue;
    for (const { label, multi, items } of factsGroups(section)) {
      const group = byLabel.get(label) ?? { multi, items: [] };
      byLabel.set(label, group);
      group.items.push(...items);
    }
  }
  const order = [...GROUPS.map((g) => g.label), ...[...byLabel.keys()].filter((l) => !GROUPS.some((g) => g.label === l))];
  const lines: string[] = [];
  for (const label of order) {
    const group = byLabel.get(label);
    if (!group || group.items.length === 0) continue;
    const items = [...new Set(group.items)];
    lines.push(group.multi ? [`- ${label}:`, ...items.map((i) => `  - ${i}`)].join('\n') : `- ${label}: ${items.join('; ')}`);
  }
  return lines.join('\n') || undefined;
}

/**
 * The highest-weighted entries whose Facts section fits `maxTokens` (pinned entries always, even
 * over it: Guarantee 3), in rank order; and the ones that did not fit.
 */
export function fitEntries(ranked: LedgerEntry[], maxTokens: number, countText: (t: string) => number): { kept: LedgerEntry[]; dropped: LedgerEntry[] } {
  const kept: LedgerEntry[] = ranked.filter(isPinned);
  const dropped: LedgerEntry[] = [];
  // Entry sizes are nearly additive: estimate each once, then check the whole section at the end.
  let used = kept.length ? countText(renderFacts(kept)) : 0;
  for (const e of ranked) {
    if (isPinned(e)) continue;
    const cost = countText(entryText(e)) + 2;
    if (used + cost > maxTokens) {
      dropped.push(e);
      continue;
    }
    kept.push(e);
    used += cost;
  }
  while (kept.length > 0 && countText(renderFacts(kept)) > maxTokens && !isPinned(kept[kept.length - 1])) dropped.unshift(kept.pop() as LedgerEntry);
  return { kept, dropped };
}

/** What must be in a text for an entry to count as held: its value (settings: `name` and the latest value; commands: their first 60 characters; errors: the code and the subject). */
export function entryNeedles(e: LedgerEntry): string[] {
  switch (e.kind) {
    case 'setting':
    case 'version': {
      const at = e.value.search(/@|==|>=|~=|=|: /);
      if (at <= 0) return [keyOf(e.value)];
      const name = e.value.slice(0, at);
      const value = e.value.slice(at).replace(/^(?:@|==|>=|~=|=|: )/, '');
      return [keyOf(name), keyOf(value)];
    }
    case 'command':
      return [keyOf(e.value).slice(0, 60).trim()];
    case 'error': {
      const v = keyOf(e.value);
      return [v.length > 80 ? v.slice(0, 80).trim() : v];
    }
    default:
      return [keyOf(e.value)];
  }
}

/** Whether a text (lowercased, whitespace-collapsed: `keyOf(text)`) holds the entry. */
export function holds(haystack: string, e: LedgerEntry): boolean {
  return entryNeedles(e).every((n) => n.length === 0 || haystack.includes(n));
}

export interface LedgerSurvival {
  total: number;
  survived: number;
  /** survived / total; 1 for an empty ledger. */
  share: number;
  missing: LedgerEntry[];
}

/** At most this many entries of a span are checked (the highest-weighted). */
export const MAX_CHECKED_ENTRIES = 300;

/**
 * Which entries of a span the new context still holds (the reliability score's context
 * confidence): the span's entries worth keeping, highest weight first, each looked up by its
 * needles in the context's text (lowercased, whitespace collapsed).
 */
export function checkLedger(entries: LedgerEntry[], contextText: string, maxSeq?: number): LedgerSurvival {
  const ranked = rankEntries(entries, maxSeq).slice(0, MAX_CHECKED_ENTRIES);
  const haystack = keyOf(contextText);
  const missing = ranked.filter((e) => !holds(haystack, e));
  const total = ranked.length;
  return { total, survived: total - missing.length, share: total === 0 ? 1 : (total - missing.length) / total, missing };
}
