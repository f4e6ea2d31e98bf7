import { LlmError, LlmUsage } from '../llm/summarizer';
import { summarizableMessages, summarizeSpan } from '../engine/summarize';
import { CompactionEvent, CompactionInput, SessionMessage } from '../engine/types';
import { Checkpoint, checkpointBody, checkpointMessage, contentId, Treatment } from '../engine/version';
import { FactsLedger } from '../ledger/ledger';
import { CONSTRAINTS_LABEL, fitEntries, holds, isPinned, mergeFactsSections, rankEntries, renderFacts } from '../ledger/render';
import { keyOf } from '../ledger/rules';
import type { LedgerEntry } from '../ledger/ledger';
import { ledgerEvent, LedgerTotals } from '../ledger/account';
import { Protection } from '../engine/protection';
import { Stage } from './stage';

/**
 * `balanced`'s last stage, the only one that pays for the LLM: when the context is still above
 * `summarizeAbove` of the budget, the oldest unprotected span that brings it down to
 * `summarizeDownTo` becomes a checkpoint with a Facts section (the span's ledger entries its
 * summary lacks); older checkpoints age (each step halves the target) and merge under their cap.
 */
export interface SummarizeOldestParams {
  summarizeAbove: number;
  summarizeDownTo: number;
  /** A new checkpoint is at most this fraction of the budget; each aging step halves it. */
  checkpointFraction: number;
  /** All checkpoints together stay under this fraction of the budget (older ones merge). */
  checkpointsMaxFraction: number;
  /** A new checkpoint's Facts section takes at most this fraction of the budget. */
  ledgerFraction: number;
  /** All Facts sections together stay under this fraction of the budget (the oldest lose their lowest entries first). */
  ledgerMaxFraction: number;
  instructions: string;
}

/** What the stages before tell this one (the protection) and what it tells the outcome (the ledger totals). */
export interface SummarizeOldestNotes {
  protection?: Protection;
  ledger?: LedgerTotals;
}

const sumTokens = (xs: SessionMessage[]) => xs.reduce((n, m) => n + m.tokens, 0);
const answersTools = (m: SessionMessage) => m.message.role === 'tool' || m.message.blocks.some((b) => b.type === 'tool_result');

/**
 * The oldest part of the summarizable span whose tokens cover `excess`: only as much history
 * as the budget needs goes into a checkpoint, the rest stays verbatim. The cut never falls
 * between a tool call and its results (Guarantee 2).
 */
function oldestSpanToSummarize(span: SessionMessage[], excess: number): SessionMessage[] {
  if (excess <= 0) return [];
  let cut = 0;
  let covered = 0;
  while (cut < span.length && covered < excess) covered += span[cut++].tokens;
  while (cut < span.length && answersTools(span[cut])) cut += 1;
  return span.slice(0, cut);
}
const fmt = (n: number) => n.toLocaleString('en-US');

/**
 * The Facts section after aging or merging rewrote a checkpoint's prose: the entries of its span
 * that the old prose held and neither the new prose, its Facts section nor the goal block does
 * are appended, by weight, within `maxTokens` (SPEC.md "Facts ledger": aging shortens prose,
 * never the top of the ledger). Without it, an error or a setting the first summary had said in
 * its prose (so none was appended then) was gone after the first aging step.
 */
function repairAgedFacts(
  oldProse: string,
  newProse: string,
  facts: string | undefined,
  span: { fromSeq: number; toSeq: number },
  ledger: LedgerEntry[],
  goalBlock: string,
  maxTokens: number,
  countText: (t: string) => number,
): string | undefined {
  const before = keyOf(oldProse);
  const now = keyOf([newProse, facts ?? '', goalBlock].join('\n'));
  const lost = ledger.filter((e) => e.lastSeq >= span.fromSeq && e.lastSeq <= span.toSeq && holds(before, e) && !holds(now, e));
  if (lost.length === 0) return facts;
  // Pinned entries (the user's constraints, locked decisions) are in the Facts section already: repairWithLedger lists them always.
  const added = renderFacts(fitEntries(rankEntries(lost).filter((e) => !isPinned(e)), maxTokens, countText).kept);
  return mergeFactsSections([facts, added]);
}

/** Ages older checkpoints (each step halves its target) and merges the oldest while all together exceed their cap. */
async function ageAndMergeCheckpoints(
  checkpoints: Checkpoint[],
  newTarget: number,
  cap: number,
  input: CompactionInput,
  params: Pick<SummarizeOldestParams, 'instructions'>,
  account: (r: { usage: LlmUsage; attempts: number }) => void,
  events: CompactionEvent[],
  ledger: () => LedgerEntry[],
): Promise<Checkpoint[]> {
  const aged: Checkpoint[] = [];
  // Aging shortens the prose; the Facts section stays, and takes what the shorter prose no longer says (SPEC.md "Facts ledger").
  const prose = (c: Checkpoint): Checkpoint => ({ ...c, facts: undefined });
  const goalBlock = input.prefix.goalBlock?.text ?? '';
  const repair = (oldProse: string, newProse: string, facts: string | undefined, span: { fromSeq: number; toSeq: number }, target: number) =>
    repairAgedFacts(oldProse, newProse, facts, span, ledger(), goalBlock, Math.max(30, Math.floor(target / 2)), input.countText);
  for (const c of checkpoints) {
    const level = c.level + 1;
    const target = Math.max(50, Math.floor(newTarget / 2 ** level));
    const proseTokens = c.facts ? input.countText(c.text) : c.tokens;
    if (proseTokens <= target * 1.1) {
      aged.push({ ...c, level });
      continue;
    }
    const r = await input.summarizer.summarize(
      { kind: 'merge', instructions: params.instructions, messages: [checkpointMessage(prose(c))], targetTokens: target, goal: input.goal },
      input.signal,
    );
    account({ usage: r.usage, attempts: r.attempts });
    const facts = repair(c.text, r.text, c.facts, c, target);
    const body = checkpointBody({ text: r.text, facts });
    const tokens = input.countText(body);
    if (tokens >= c.tokens) {
      aged.push({ ...c, level });
      continue;
    }
    const next: Checkpoint = { ...c, id: contentId('ckpt', c.fromSeq, c.toSeq, body), level, text: r.text, ...(facts ? { facts } : {}), tokens, agedFromId: c.id };
    events.push({ type: 'checkpoint-aged', line: `Aged checkpoint ${c.fromSeq}–${c.toSeq} to level ${level}: ${fmt(c.tokens)} → ${fmt(tokens)} tokens` });
    aged.push(next);
  }
  // Over the cap: merge the two oldest until it fits (or one is left).
  while (aged.length > 1 && aged.reduce((n, c) => n + c.tokens, 0) > cap) {
    const [a, b] = aged;
    const target = Math.max(50, Math.floor(cap / 4));
    const r = await input.summarizer.summarize(
      { kind: 'merge', instructions: params.instructions, messages: [checkpointMessage(prose(a)), checkpointMessage(prose(b))], targetTokens: target, goal: input.goal },
      input.signal,
    );
    account({ usage: r.usage, attempts: r.attempts });
    const facts = repair(`${a.text}\n${b.text}`, r.text, mergeFactsSections([a.facts, b.facts]), { fromSeq: a.fromSeq, toSeq: b.toSeq }, target);
    const body = checkpointBody({ text: r.text, facts });
    const merged: Checkpoint = {
      id: contentId('ckpt', a.fromSeq, b.toSeq, body),
      fromSeq: a.fromSeq,
      toSeq: b.toSeq,
      level: Math.max(a.level, b.level),
      text: r.text,
      ...(facts ? { facts } : {}),
      tokens: input.countText(body),
      originalTokens: a.originalTokens + b.originalTokens,
      agedFromId: b.id,
    };
    if (merged.tokens >= a.tokens + b.tokens) break;
    events.push({ type: 'checkpoint-aged', line: `Merged checkpoints ${a.fromSeq}–${a.toSeq} and ${b.fromSeq}–${b.toSeq} → ${fmt(merged.tokens)} tokens` });
    aged.splice(0, 2, merged);
  }
  return aged;
}

/**
 * Summarizes the oldest unprotected span into a checkpoint when masking left the context above
 * `summarizeAbove` (never in an `ingest` run); an LLM failure ends the run `failed`.
 */
export const summarizeOldest: Stage<SummarizeOldestParams, SummarizeOldestNotes> = async ({ prefix, context: current, params, run, notes }) => {
  const { input, events, account } = run;
  // An ingest run does the per-result steps only; masking and summaries wait for the threshold.
  if (input.trigger === 'ingest' || sumTokens(current) <= params.summarizeAbove * input.budget) return { prefix, context: current };
  const protection = notes.protection as Protection;
  const target = Math.max(100, Math.floor(params.checkpointFraction * input.budget));
  const span = oldestSpanToSummarize(summarizableMessages(current, protection), sumTokens(current) - Math.floor(params.summarizeDownTo * input.budget) + target);
  if (span.length === 0) return { prefix, context: current };
  run.steps.push('summarize');
  const treatments: Record<number, Treatment> = { ...prefix.treatments };
  let checkpoints = prefix.checkpoints;
  let coversThroughSeq = prefix.coversThroughSeq;
  try {
    let built: FactsLedger | undefined = input.ledger;
    const ledgerOf = () => (built ??= FactsLedger.of(input.history));
    let all: LedgerEntry[] | undefined;
    const older = capFacts(
      await ageAndMergeCheckpoints(checkpoints, target, Math.floor(params.checkpointsMaxFraction * input.budget) - target, input, params, account, events, () => (all ??= ledgerOf().entries())),
      Math.floor((params.ledgerMaxFraction - params.ledgerFraction) * input.budget),
      input.countText,
    );
    // The span's ledger: entries whose latest mention the checkpoint is about to replace.
    const ledger = ledgerOf();
    const from = span[0].seq;
    const to = span[span.length - 1].seq;
    const entries = rankEntries(
      ledger.entries().filter((e) => e.lastSeq >= from && e.lastSeq <= to),
      input.history[input.history.length - 1]?.seq ?? to,
    );
    const heldElsewhere = [input.prefix.goalBlock?.text ?? '', ...older.map(checkpointBody)].join('\n');
    const s = await summarizeSpan(
      span,
      input.summarizer,
      {
        instructions: params.instructions,
        targetTokens: target,
        goal: input.goal,
        countText: input.countText,
        ledger: { entries, heldElsewhere, maxTokens: Math.max(50, Math.floor(params.ledgerFraction * input.budget)) },
      },
      input.signal,
    );
    account(s);
    if (s.ledger) notes.ledger = s.ledger;
    if (s.checkpoint.tokens < s.checkpoint.originalTokens) {
      checkpoints = [...older, s.checkpoint];
      for (const seq of s.covered) treatments[seq] = { kind: 'summarized', checkpointId: s.checkpoint.id };
      coversThroughSeq = Math.max(coversThroughSeq, s.checkpoint.toSeq);
      events.push({
        type: 'checkpoint-created',
        line: `Summarized ${s.covered.length} messages → 1 checkpoint (saved ~${fmt(s.checkpoint.originalTokens - s.checkpoint.tokens)} tokens)`,
      });
      if (s.ledger) events.push(ledgerEvent(s.ledger));
    } else checkpoints = older;
  } catch (error) {
    if (!(error instanceof LlmError)) throw error;
    run.llmCalls += error.attempts; // failed attempts are calls too (and may have been billed)
    events.push({ type: 'compression-error', line: `Summarizer failed (${error.kind}) after ${error.attempts} attempt(s); the previous context stays` });
    return { end: run.unchanged('failed', `llm-${error.kind}`) };
  }
  return { prefix: { ...prefix, coversThroughSeq, checkpoints, treatments } };
};

/**
 * All Facts sections together within `cap` tokens: the oldest checkpoints lose their last lines
 * first (a section is written in kind order, so identifiers and URLs go before errors, tasks and
 * constraints, and the user's constraints are never cut: Guarantee 3).
 */
function capFacts(checkpoints: Checkpoint[], cap: number, countText: (t: string) => number): Checkpoint[] {
  const out = [...checkpoints];
  const factsTokens = () => out.reduce((n, c) => n + (c.facts ? countText(c.facts) : 0), 0);
  for (let i = 0; i < out.length && factsTokens() > cap; i++) {
    const c = out[i];
    if (!c.facts) continue;
    const lines = c.facts.split('\n');
    while (lines.length > 0 && factsTokens() > cap) {
      // The user's constraints (the first group, with its items) are never cut.
      let keep = 0;
      if (lines[0]?.startsWith(`- ${CONSTRAINTS_LABEL}:`)) for (keep = 1; keep < lines.length && lines[keep].startsWith('  - '); ) keep += 1;
      if (lines.length <= keep) break;
      lines.pop();
      const facts = lines.join('\n') || undefined;
      const body = checkpointBody({ text: c.text, facts });
      out[i] = { ...c, facts, id: contentId('ckpt', c.fromSeq, c.toSeq, body), tokens: countText(body), agedFromId: c.id };
    }
  }
  return out;
}

