import { z } from 'zod';
import { formatUsd } from './overview-format';
import type { EventView } from './session-events';
import { formatTokens } from './session-format';

/**
 * What each compaction did, from its events: the `compressed` event's figures (tokens, cost,
 * prompt prefix) with the `facts-ledger` event of the same job (the entries its summary kept,
 * the ones appended to the checkpoint's Facts section, the ones left out). Event data comes as
 * untyped JSON: every field is checked here, and a field that does not check is not shown.
 */

const count = z.number().int().nonnegative();

export const ledgerEntrySchema = z.object({ kind: z.string().min(1), text: z.string(), seq: z.number().int() });
export type LedgerEntry = z.infer<typeof ledgerEntrySchema>;

export const ledgerCountsSchema = z.object({
  listed: count,
  kept: count,
  repaired: count,
  dropped: count,
  keptEntries: z.array(ledgerEntrySchema),
  repairedEntries: z.array(ledgerEntrySchema),
  droppedEntries: z.array(ledgerEntrySchema),
});
export type LedgerCounts = z.infer<typeof ledgerCountsSchema>;

const factsLedgerData = ledgerCountsSchema.extend({ jobId: z.string().min(1) });

/** Older compressed events carry only the job id: each figure is optional. */
const compressedData = z.object({
  jobId: z.string().min(1),
  tokensBefore: count.optional(),
  tokensAfter: count.optional(),
  llmCalls: count.optional(),
  costUsd: z.number().nonnegative().optional(),
  contextMessagesBefore: count.optional(),
  sharedPrefixMessages: count.optional(),
  prefixChanged: z.boolean().optional(),
});

/** The ledger's kinds in the words the page uses. */
const KIND_LABELS: Record<string, string> = {
  constraint: 'Constraint',
  decision: 'Decision',
  task: 'Task',
  error: 'Error',
  test: 'Test',
  path: 'File',
  url: 'URL',
  setting: 'Setting',
  version: 'Version',
  identifier: 'Id',
  command: 'Command',
};

export function kindLabel(kind: string): string {
  return KIND_LABELS[kind] ?? kind;
}

const plural = (n: number, one: string, many = `${one}s`) => `${formatTokens(n)} ${n === 1 ? one : many}`;

/** "12,400 → 3,100 tokens (saved 9,300)" */
export function tokensText(before: number, after: number): string {
  const saved = before - after;
  return `${formatTokens(before)} → ${formatTokens(after)} tokens (${saved >= 0 ? `saved ${formatTokens(saved)}` : `${formatTokens(-saved)} more`})`;
}

/** "$0.0012 · 2 LLM calls"; "No LLM calls" for a run that only masked or offloaded. */
export function costText(costUsd: number, llmCalls: number): string {
  return llmCalls === 0 ? 'No LLM calls' : `${formatUsd(costUsd)} · ${plural(llmCalls, 'LLM call')}`;
}

/** "Unchanged" or "Kept the first 3 of 41 messages": whether the provider's prompt cache still matches. */
export function prefixText(changed: boolean, shared: number, before: number): string {
  if (!changed) return 'Unchanged';
  return shared === 0 ? `Changed from the first message (of ${formatTokens(before)})` : `Kept the first ${formatTokens(shared)} of ${plural(before, 'message')}`;
}

/** "12 listed · 8 kept · 3 appended · 1 left out" */
export function ledgerCountsText(l: Pick<LedgerCounts, 'listed' | 'kept' | 'repaired' | 'dropped'>): string {
  return `${formatTokens(l.listed)} listed · ${formatTokens(l.kept)} kept · ${formatTokens(l.repaired)} appended · ${formatTokens(l.dropped)} left out`;
}

/** Several checkpoints of one run (one facts-ledger event each) read as one ledger. */
function mergeLedgers(ledgers: LedgerCounts[]): LedgerCounts | null {
  if (ledgers.length === 0) return null;
  return ledgers.reduce((a, b) => ({
    listed: a.listed + b.listed,
    kept: a.kept + b.kept,
    repaired: a.repaired + b.repaired,
    dropped: a.dropped + b.dropped,
    keptEntries: [...a.keptEntries, ...b.keptEntries],
    repairedEntries: [...a.repairedEntries, ...b.repairedEntries],
    droppedEntries: [...a.droppedEntries, ...b.droppedEntries],
  }));
}

export interface CompactionAudit {
  jobId: string;
  tokens: string | null;
  cost: string | null;
  prefix: { text: string; changed: boolean } | null;
  ledger: (LedgerCounts & { text: string }) | null;
}

export interface AuditedEvent {
  event: EventView;
  audit: CompactionAudit | null;
}

function figures(data: z.infer<typeof compressedData>): Omit<CompactionAudit, 'jobId' | 'ledger'> {
  const { tokensBefore, tokensAfter, llmCalls, costUsd, contextMessagesBefore, sharedPrefixMessages, prefixChanged } = data;
  return {
    tokens: tokensBefore !== undefined && tokensAfter !== undefined ? tokensText(tokensBefore, tokensAfter) : null,
    cost: llmCalls !== undefined && costUsd !== undefined ? costText(costUsd, llmCalls) : null,
    prefix:
      prefixChanged !== undefined && sharedPrefixMessages !== undefined && contextMessagesBefore !== undefined
        ? { text: prefixText(prefixChanged, sharedPrefixMessages, contextMessagesBefore), changed: prefixChanged }
        : null,
  };
}

/**
 * The events as the list shows them, in the same order: each `compressed` event with its audit,
 * the `facts-ledger` events of its job folded into it (a facts-ledger event whose compressed
 * event is not in the list, e.g. on another page, keeps its own row and shows its ledger).
 */
export function auditedEvents(events: EventView[]): AuditedEvent[] {
  const ledgers = new Map<string, LedgerCounts[]>();
  const compressedJobs = new Set<string>();
  for (const e of events) {
    if (e.type === 'facts-ledger') {
      const parsed = factsLedgerData.safeParse(e.data);
      if (parsed.success) {
        const { jobId, ...counts } = parsed.data;
        ledgers.set(jobId, [...(ledgers.get(jobId) ?? []), counts]);
      }
    } else if (e.type === 'compressed' && typeof e.data.jobId === 'string') {
      compressedJobs.add(e.data.jobId);
    }
  }
  const withText = (l: LedgerCounts | null) => (l ? { ...l, text: ledgerCountsText(l) } : null);
  const rows: AuditedEvent[] = [];
  for (const e of events) {
    if (e.type === 'compressed') {
      const parsed = compressedData.safeParse(e.data);
      rows.push({
        event: e,
        audit: parsed.success ? { jobId: parsed.data.jobId, ...figures(parsed.data), ledger: withText(mergeLedgers(ledgers.get(parsed.data.jobId) ?? [])) } : null,
      });
    } else if (e.type === 'facts-ledger') {
      const parsed = factsLedgerData.safeParse(e.data);
      if (parsed.success && compressedJobs.has(parsed.data.jobId)) continue;
      if (!parsed.success) {
        rows.push({ event: e, audit: null });
        continue;
      }
      const { jobId, ...counts } = parsed.data;
      rows.push({ event: e, audit: { jobId, tokens: null, cost: null, prefix: null, ledger: withText(counts) } });
    } else {
      rows.push({ event: e, audit: null });
    }
  }
  return rows;
}
