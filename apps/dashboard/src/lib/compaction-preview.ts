import { z } from 'zod';
import type { components } from '../api/schema';
import { costText, ledgerCountsSchema, ledgerCountsText, ledgerEntrySchema, tokensText, type LedgerEntry } from './compaction-audit';
import { formatTokens } from './session-format';

type CompactResponse = components['schemas']['CompactResponse'];

/**
 * "Compact now" first asks the API for a dry run (POST /v1/sessions/:id/compact with dryRun) and
 * shows what the compaction would do. This turns the API's answer into what the preview shows;
 * the same schema checks that view again in the browser, which receives it as JSON.
 */

const count = z.number().int().nonnegative();

const ledgerViewSchema = ledgerCountsSchema.extend({ text: z.string() });

const readySchema = z.object({
  kind: z.literal('ready'),
  jobId: z.string(),
  tokensBefore: count,
  tokensAfter: count,
  tokens: z.string(),
  cost: z.string(),
  context: z.object({
    messages: count,
    tokens: count,
    checkpoints: z.array(z.object({ title: z.string(), text: z.string() })),
  }),
  ledger: ledgerViewSchema.nullable(),
  /** The facts the would-be context no longer holds, with those left out of the Facts section; each once. */
  drops: z.array(ledgerEntrySchema),
  /** "3 of 40 facts would no longer be in the context" (null: the API did not check). */
  dropsText: z.string().nullable(),
  /** Set when the API sent only the first entries of a longer list. */
  truncated: z.boolean(),
});

const unavailableSchema = z.object({
  kind: z.literal('unavailable'),
  reason: z.enum(['timeout', 'skipped', 'failed', 'empty', 'error']),
  message: z.string(),
  /** Whether "Compact anyway" makes sense: a run the dry run found nothing to do for would be skipped too. */
  canApply: z.boolean(),
});

export const compactionPreviewSchema = z.discriminatedUnion('kind', [readySchema, unavailableSchema]);
export type CompactionPreview = z.infer<typeof compactionPreviewSchema>;
export type ReadyPreview = z.infer<typeof readySchema>;

const dryRunLedgerSchema = z.object({
  // A run that masked or offloaded without summarizing has no ledger counts, only the check.
  listed: count.optional(),
  kept: count.optional(),
  repaired: count.optional(),
  dropped: count.optional(),
  keptEntries: z.array(ledgerEntrySchema).optional(),
  repairedEntries: z.array(ledgerEntrySchema).optional(),
  droppedEntries: z.array(ledgerEntrySchema).optional(),
  check: z.object({ total: count, survived: count, missing: z.array(ledgerEntrySchema) }).optional(),
});

const contextSchema = z.object({
  tokens: count,
  messages: z.array(z.record(z.string(), z.unknown())),
});

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** "[CHECKPOINT ckpt_… · messages 2–20]" on the first line → "2–20" (a plain scan: the text is the summarizer's). */
function checkpointRange(firstLine: string): string | null {
  if (!firstLine.startsWith('[CHECKPOINT ') || !firstLine.endsWith(']')) return null;
  const at = firstLine.indexOf(' · messages ');
  return at < 0 ? null : firstLine.slice(at + ' · messages '.length, -1);
}

/** The checkpoint messages of a canonical context (tagged `checkpoint`), as title and text. */
export function checkpointTexts(messages: Record<string, unknown>[]): { title: string; text: string }[] {
  return messages.flatMap((m) => {
    if (!Array.isArray(m.tags) || !m.tags.includes('checkpoint')) return [];
    const blocks = Array.isArray(m.blocks) ? m.blocks : [];
    const text = blocks
      .map((b) => (isRecord(b) && typeof b.text === 'string' ? b.text : ''))
      .join('\n')
      .replace(/\r\n?/g, '\n');
    const end = text.indexOf('\n');
    const range = checkpointRange(end < 0 ? text : text.slice(0, end));
    return [{ title: range ? `Messages ${range}` : 'Checkpoint', text: range ? (end < 0 ? '' : text.slice(end + 1)) : text }];
  });
}

const entryKey = (e: LedgerEntry) => `${e.kind}\u0000${e.text}`;

export const PREVIEW_MESSAGES = {
  timeout: 'The preview did not finish in time: the workers may be busy. Try again later, or compact without a preview.',
  empty: 'The preview finished but sent nothing to show. Try again, or compact without a preview.',
} as const;

/** What the preview shows for the API's answer to a dry run. */
export function compactionPreview(response: CompactResponse): CompactionPreview {
  const { job } = response;
  if (job.status === 'queued' || job.status === 'running') return { kind: 'unavailable', reason: 'timeout', message: PREVIEW_MESSAGES.timeout, canApply: true };
  if (job.status === 'skipped') {
    return { kind: 'unavailable', reason: 'skipped', message: `Nothing to compact now${job.reason ? ` (${job.reason})` : ''}: a compaction would change nothing.`, canApply: false };
  }
  if (job.status === 'failed') {
    return { kind: 'unavailable', reason: 'failed', message: `The preview failed${job.error ? `: ${job.error}` : ''}.`, canApply: true };
  }
  const context = contextSchema.safeParse(response.context);
  if (!context.success || job.tokensBefore == null || job.tokensAfter == null) return { kind: 'unavailable', reason: 'empty', message: PREVIEW_MESSAGES.empty, canApply: true };
  const ledger = response.ledger === undefined ? null : dryRunLedgerSchema.safeParse(response.ledger);
  const l = ledger?.success ? ledger.data : null;

  const counts =
    l && l.listed !== undefined && l.kept !== undefined && l.repaired !== undefined && l.dropped !== undefined
      ? {
          listed: l.listed,
          kept: l.kept,
          repaired: l.repaired,
          dropped: l.dropped,
          keptEntries: l.keptEntries ?? [],
          repairedEntries: l.repairedEntries ?? [],
          droppedEntries: l.droppedEntries ?? [],
        }
      : null;
  const missing = l?.check?.missing ?? [];
  const dropped = counts?.droppedEntries ?? [];
  const seen = new Set<string>();
  const drops = [...missing, ...dropped].filter((e) => !seen.has(entryKey(e)) && seen.add(entryKey(e)));
  const lost = l?.check ? l.check.total - l.check.survived : null;
  return {
    kind: 'ready',
    jobId: job.id,
    tokensBefore: job.tokensBefore,
    tokensAfter: job.tokensAfter,
    tokens: tokensText(job.tokensBefore, job.tokensAfter),
    cost: costText(job.llmCostUsd, job.llmCalls),
    context: { messages: context.data.messages.length, tokens: context.data.tokens, checkpoints: checkpointTexts(context.data.messages) },
    ledger: counts ? { ...counts, text: ledgerCountsText(counts) } : null,
    drops,
    dropsText: l?.check && lost !== null ? `${formatTokens(lost)} of ${formatTokens(l.check.total)} facts would no longer be in the context` : null,
    truncated: (lost !== null && missing.length < lost) || (counts !== null && dropped.length < counts.dropped),
  };
}

/** The preview route's answer, checked: a preview, or the failure as a sentence. */
export function parsePreviewAnswer(status: number, body: unknown): CompactionPreview {
  if (isRecord(body) && 'preview' in body) {
    const parsed = compactionPreviewSchema.safeParse(body.preview);
    if (parsed.success) return parsed.data;
  }
  const message = isRecord(body) && isRecord(body.error) && typeof body.error.message === 'string' ? body.error.message : `The preview could not be read (HTTP ${status}).`;
  return { kind: 'unavailable', reason: 'error', message, canApply: status !== 401 && status !== 403 && status !== 404 };
}
