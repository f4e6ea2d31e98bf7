import { CanonicalMessage } from '../messages/canonical';
import { LlmError, LlmUsage, Summarizer } from '../llm/summarizer';
import { Protection } from './protection';
import { Checkpoint, checkpointBody, contentId } from './version';
import { SessionMessage } from './types';
import { LedgerEntry } from '../ledger/ledger';
import { keyOf } from '../ledger/rules';
import { entryText, fitEntries, holds, isPinned, renderFacts } from '../ledger/render';

/**
 * The messages a new checkpoint covers: every message before "the latest N" that is not a
 * system prompt or checkpoint (an in-conversation system message is conversation and is covered), not protected and not already summarized. Protection is closed
 * over tool exchanges (protectionOf), so the covered messages are whole exchanges and removing
 * them never separates a tool_use from its result (Guarantee 2); protected messages in the
 * range stay in the context as they are (Guarantee 3).
 */
export function summarizableMessages(messages: SessionMessage[], protection: Protection): SessionMessage[] {
  const out: SessionMessage[] = [];
  for (const m of messages) {
    if (protection.latestFromSeq !== undefined && m.seq >= protection.latestFromSeq) break;
    // In-conversation system messages are summarized with their span (unless protected); system prompts and checkpoints never.
    if ((m.message.role === 'system' && !m.message.inConversation) || protection.whole.has(m.seq) || protection.userText.has(m.seq)) continue;
    out.push(m);
  }
  return out;
}

export interface SummarizeParams {
  instructions: string;
  targetTokens: number;
  goal?: string;
  /** Counts a text's tokens for the summary's size. */
  countText: (text: string) => number;
  /** The span's ledger entries: listed in the prompt, and whatever the summary lacks goes to the checkpoint's Facts section. */
  ledger?: SpanLedger;
}

export interface SpanLedger {
  /** Entries whose latest mention is in the span, highest weight first. */
  entries: LedgerEntry[];
  /** What the context holds besides this checkpoint (older checkpoints, goal block): entries found there are not repeated. */
  heldElsewhere: string;
  /** Tokens the Facts section may take (pinned entries always go in). */
  maxTokens: number;
}

/** What a checkpoint did with its span's ledger: entries its summary held, entries appended to it, entries left out for room. */
export interface LedgerAccount {
  listed: number;
  kept: LedgerEntry[];
  repaired: LedgerEntry[];
  dropped: LedgerEntry[];
}

/** At most this many entries are listed in an LLM prompt. */
const PROMPT_FACTS = 60;

/**
 * The checkpoint's Facts section: the span's entries that neither its summary nor the rest of the
 * context holds, by weight, within the ledger's share (Guarantee 3: pinned entries always).
 */
export function repairWithLedger(summary: string, ledger: SpanLedger, countText: (t: string) => number): { facts?: string; account: LedgerAccount } {
  const inSummary = keyOf(summary);
  const elsewhere = keyOf(ledger.heldElsewhere);
  const kept: LedgerEntry[] = [];
  const missing: LedgerEntry[] = [];
  // A pinned entry (a user constraint, a locked decision) is listed even when the summary's prose holds it: the read-time
  // fallback cuts a checkpoint's prose before its Facts section and keeps the constraints when it drops one (Guarantee 3).
  for (const e of ledger.entries) ((isPinned(e) ? false : holds(inSummary, e)) || holds(elsewhere, e) ? kept : missing).push(e);
  const fit = fitEntries(missing, ledger.maxTokens, countText);
  const facts = renderFacts(fit.kept);
  return { ...(facts ? { facts } : {}), account: { listed: ledger.entries.length, kept, repaired: fit.kept, dropped: fit.dropped } };
}

export interface SummarizeOutcome {
  checkpoint: Checkpoint;
  covered: number[];
  usage: LlmUsage;
  attempts: number;
  ledger?: LedgerAccount;
}

/**
 * Summarizes the messages into one checkpoint. Spans larger than the summarizer's
 * window are summarized in chunks that are then merged, so "too long to compact" never
 * happens. LlmError propagates: the caller keeps the previous context (Guarantee 5).
 */
export async function summarizeSpan(
  part: SessionMessage[],
  summarizer: Summarizer,
  params: SummarizeParams,
  signal?: AbortSignal,
): Promise<SummarizeOutcome> {
  if (part.length === 0) throw new LlmError('bad-request', 'nothing to summarize', 0);
  const usage: LlmUsage = { inputTokens: 0, outputTokens: 0, costUsd: 0 };
  let attempts = 0;
  const call = async (kind: 'checkpoint' | 'chunk' | 'merge', input: CanonicalMessage[], target: number) => {
    const facts = kind === 'chunk' ? undefined : params.ledger?.entries.slice(0, PROMPT_FACTS).map(entryText);
    const r = await summarizer.summarize({ kind, instructions: params.instructions, messages: input, targetTokens: target, goal: params.goal, ...(facts?.length ? { facts } : {}) }, signal);
    usage.inputTokens += r.usage.inputTokens;
    usage.outputTokens += r.usage.outputTokens;
    usage.costUsd += r.usage.costUsd;
    attempts += r.attempts;
    return r.text;
  };

  // Half the summarizer's window for input leaves room for instructions and the answer.
  const window = Math.max(1_000, Math.floor(summarizer.contextWindow / 2) - params.targetTokens);
  const chunks: SessionMessage[][] = [];
  let current: SessionMessage[] = [];
  let size = 0;
  for (const m of part) {
    if (current.length > 0 && size + m.tokens > window) {
      chunks.push(current);
      current = [];
      size = 0;
    }
    current.push(m);
    size += m.tokens;
  }
  if (current.length) chunks.push(current);

  let text: string;
  if (chunks.length === 1) text = await call('checkpoint', chunks[0].map((m) => m.message), params.targetTokens);
  else {
    const pieces: string[] = [];
    for (const c of chunks) pieces.push(await call('chunk', c.map((m) => m.message), params.targetTokens));
    text = await call('merge', pieces.map((p): CanonicalMessage => ({ role: 'user', blocks: [{ type: 'text', text: p }] })), params.targetTokens);
  }
  const fromSeq = part[0].seq;
  const toSeq = part[part.length - 1].seq;
  const repaired = params.ledger ? repairWithLedger(text, params.ledger, params.countText) : undefined;
  const body = checkpointBody({ text, facts: repaired?.facts });
  const checkpoint: Checkpoint = {
    id: contentId('ckpt', fromSeq, toSeq, body),
    fromSeq,
    toSeq,
    level: 0,
    text,
    ...(repaired?.facts ? { facts: repaired.facts } : {}),
    tokens: params.countText(body),
    originalTokens: part.reduce((n, m) => n + m.tokens, 0),
  };
  return { checkpoint, covered: part.map((m) => m.seq), usage, attempts, ...(repaired ? { ledger: repaired.account } : {}) };
}
