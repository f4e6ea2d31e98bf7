import { PresetDefinition } from './preset';
import { LlmError, LlmUsage } from '../llm/summarizer';
import { maskObservations } from './masking';
import { ProtectionPolicy, protectionOf } from './protection';
import { summarizableMessages, summarizeSpan } from './summarize';
import { CompactionEvent, CompactionInput, CompactionOutcome, SessionMessage } from './types';
import { offloadLargeResult, toolNamesOf } from './offload';
import { applyPrefix, ArtifactOutput, Checkpoint, checkpointBody, checkpointMessage, contentId, Treatment, VersionPrefix } from './version';
import { FactsLedger } from '../ledger/ledger';
import { CONSTRAINTS_LABEL, rankEntries } from '../ledger/render';
import { ledgerEvent, LedgerTotals } from '../ledger/account';
import { CompactionRun } from './run';

/** `balanced` (SPEC.md "Policies"): cheap steps first, the LLM last. Every field can be overridden per session. */
export interface BalancedParams {
  protection: ProtectionPolicy;
  /** A tool result above this many tokens is offloaded to an artifact as soon as it arrives (an `ingest` run), whatever its age. */
  offloadAboveTokens: number;
  /** Mask tool outputs older than the latest K turns. */
  maskKeepLatestTurns: number;
  maskMinTokens: number;
  /** When masking the old outputs is not enough, mask every unprotected output before summarizing. */
  maskAllBeforeSummary: boolean;
  /** Summarize only if the context is still above this fraction of the budget after masking. */
  summarizeAbove: number;
  /** A summary takes the oldest span that brings the context down to this fraction of the budget (the rest stays verbatim). */
  summarizeDownTo: number;
  /** A new checkpoint is at most this fraction of the budget; each aging step halves it. */
  checkpointFraction: number;
  /** All checkpoints together stay under this fraction of the budget (older ones merge). */
  checkpointsMaxFraction: number;
  /** A new checkpoint's Facts section (ledger entries its summary lacks) takes at most this fraction of the budget. */
  ledgerFraction: number;
  /** All Facts sections together stay under this fraction of the budget (the oldest lose their lowest entries first). */
  ledgerMaxFraction: number;
  /** A compaction saving less than max(minSavingFraction × budget, minSavingTokens) is skipped (Guarantee 5). */
  minSavingFraction: number;
  minSavingTokens: number;
  instructions: string;
}

export const BALANCED_INSTRUCTIONS = [
  'Summarize this span of an AI agent session so the agent can continue the task without it.',
  'Keep: the user instructions and constraints; decisions and their reasons; files created, edited or read and what changed;',
  'commands run and their outcome; errors and what fixed them; values that changed (only the latest counts); open tasks and next steps.',
  'Be factual and terse; use the exact identifiers, paths and numbers from the span.',
].join(' ');

export const BALANCED_DEFAULTS: BalancedParams = {
  protection: { latestMessages: 6, latestUserTexts: 3, allUserTexts: false, exemptToolNames: [] },
  offloadAboveTokens: 8_000,
  maskKeepLatestTurns: 10,
  maskMinTokens: 50,
  maskAllBeforeSummary: true,
  // The band (docs/compaction.md): triggered at 85% of the budget, masking brings the context down to 65%;
  // a summary only when masking alone leaves it above 75%.
  summarizeAbove: 0.75,
  summarizeDownTo: 0.65,
  checkpointFraction: 0.1,
  checkpointsMaxFraction: 0.3,
  ledgerFraction: 0.1,
  ledgerMaxFraction: 0.3,
  minSavingFraction: 0.05,
  minSavingTokens: 1_000,
  instructions: BALANCED_INSTRUCTIONS,
};

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

/** Ages older checkpoints (each step halves its target) and merges the oldest while all together exceed their cap. */
async function ageCheckpoints(
  checkpoints: Checkpoint[],
  newTarget: number,
  cap: number,
  input: CompactionInput,
  params: BalancedParams,
  account: (r: { usage: LlmUsage; attempts: number }) => void,
  events: CompactionEvent[],
): Promise<Checkpoint[]> {
  const aged: Checkpoint[] = [];
  // Aging shortens the prose; the Facts section stays as it is (SPEC.md "Facts ledger").
  const prose = (c: Checkpoint): Checkpoint => ({ ...c, facts: undefined });
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
    const body = checkpointBody({ text: r.text, facts: c.facts });
    const tokens = input.countText(body);
    if (tokens >= c.tokens) {
      aged.push({ ...c, level });
      continue;
    }
    const next: Checkpoint = { ...c, id: contentId('ckpt', c.fromSeq, c.toSeq, body), level, text: r.text, tokens, agedFromId: c.id };
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
    const facts = [a.facts, b.facts].filter(Boolean).join('\n') || undefined;
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
 * One `balanced` compaction: mask old tool outputs; if the context is still above
 * `summarizeAbove` of the budget, summarize the oldest unprotected span into a checkpoint and
 * age the older checkpoints. Pure apart from the summarizer calls. Never returns more tokens
 * than it was given, and a saving below the minimum is `skipped` (Guarantee 5); an LLM failure
 * is `failed` with the previous prefix in place.
 */
export async function compactBalanced(input: CompactionInput, params: BalancedParams = BALANCED_DEFAULTS): Promise<CompactionOutcome> {
  const checkpointTokens = (c: Checkpoint) => input.countMessage(checkpointMessage(c));
  const context = applyPrefix(input.prefix, input.history, checkpointTokens);
  const tokensBefore = sumTokens(context);
  const run = new CompactionRun(input, tokensBefore);
  const { usage, steps, events, account, unchanged } = run;
  let ledgerTotals: LedgerTotals | undefined;

  // Per-result step at ingest: very large results go to artifacts whatever their age (the history keeps them whole).
  const treatments: Record<number, Treatment> = { ...input.prefix.treatments };
  const names = toolNamesOf(context);
  const artifacts: ArtifactOutput[] = [];
  const offloadedSeqs: number[] = [];
  const ingested = context.map((m) => {
    if (m.message.role === 'system' || input.prefix.treatments[m.seq] || m.message.tags?.includes('checkpoint')) return m;
    const r = offloadLargeResult(m, { offloadAboveTokens: params.offloadAboveTokens, protection: params.protection }, input.countMessage, names);
    if (!r) return m;
    artifacts.push(...r.artifacts);
    offloadedSeqs.push(m.seq);
    treatments[m.seq] = { kind: 'offloaded', artifactIds: r.artifacts.map((a) => a.id), message: r.message.message, tokens: r.message.tokens };
    return r.message;
  });
  if (offloadedSeqs.length > 0) {
    steps.push('offload');
    events.push({ type: 'offloaded', line: `Offloaded ${offloadedSeqs.length} large tool output(s) to artifacts (messages ${offloadedSeqs.join(', ')})` });
  }

  const protection = protectionOf(ingested, params.protection);
  let masked =
    input.trigger === 'ingest'
      ? { messages: ingested, masked: [] as number[] }
      : maskObservations(ingested, protection, { keepLatestTurns: params.maskKeepLatestTurns, minTokens: params.maskMinTokens }, input.countMessage);
  if (input.trigger !== 'ingest') steps.push('mask');
  // Still over: mask more of the newer outputs, oldest first, before paying for a summary (cheap
  // steps first; the conversation text stays): halve the turns kept until the context is down to
  // `summarizeDownTo`, or every unprotected output is masked.
  if (input.trigger !== 'ingest' && params.maskAllBeforeSummary && sumTokens(masked.messages) > params.summarizeAbove * input.budget) {
    let keep = params.maskKeepLatestTurns;
    while (keep > 0 && sumTokens(masked.messages) > params.summarizeDownTo * input.budget) {
      keep = keep <= 2 ? 0 : Math.floor(keep / 2);
      const deeper = maskObservations(masked.messages, protection, { keepLatestTurns: keep, minTokens: params.maskMinTokens }, input.countMessage);
      if (deeper.masked.length === 0) continue;
      masked = { messages: deeper.messages, masked: [...masked.masked, ...deeper.masked] };
      if (!steps.includes('mask-more')) steps.push('mask-more');
    }
  }
  const maskedSet = new Set(masked.masked);
  for (const m of masked.messages) {
    if (!maskedSet.has(m.seq)) continue;
    const before = treatments[m.seq];
    // A message with an artifact reference keeps naming its artifact when its other outputs are masked.
    treatments[m.seq] = before?.kind === 'offloaded' ? { ...before, message: m.message, tokens: m.tokens } : { kind: 'masked', message: m.message, tokens: m.tokens };
  }
  let coversThroughSeq = Math.max(input.prefix.coversThroughSeq, ...masked.masked, ...offloadedSeqs);
  let checkpoints = input.prefix.checkpoints;
  const current = masked.messages;

  // An ingest run does the per-result steps only; masking and summaries wait for the threshold.
  if (input.trigger !== 'ingest' && sumTokens(current) > params.summarizeAbove * input.budget) {
    const target = Math.max(100, Math.floor(params.checkpointFraction * input.budget));
    const span = oldestSpanToSummarize(summarizableMessages(current, protection), sumTokens(current) - Math.floor(params.summarizeDownTo * input.budget) + target);
    if (span.length > 0) {
      steps.push('summarize');
      try {
        const older = capFacts(
          await ageCheckpoints(checkpoints, target, Math.floor(params.checkpointsMaxFraction * input.budget) - target, input, params, account, events),
          Math.floor((params.ledgerMaxFraction - params.ledgerFraction) * input.budget),
          input.countText,
        );
        // The span's ledger: entries whose latest mention the checkpoint is about to replace.
        const ledger = input.ledger ?? FactsLedger.of(input.history);
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
        if (s.ledger) ledgerTotals = s.ledger;
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
        return unchanged('failed', `llm-${error.kind}`);
      }
    }
  }

  const prefix: VersionPrefix = { coversThroughSeq, checkpoints, treatments };
  const after = applyPrefix(prefix, input.history, checkpointTokens);
  const tokensAfter = sumTokens(after);
  if (tokensAfter > tokensBefore) return unchanged('skipped', 'no-saving');
  const tooLittle = run.belowMinimum(tokensBefore - tokensAfter, params);
  if (tooLittle) return tooLittle;
  events.push({
    type: 'compressed',
    line: `Compacted ${fmt(tokensBefore)} → ${fmt(tokensAfter)} tokens (saved ~${fmt(tokensBefore - tokensAfter)}; ${masked.masked.length} tool outputs masked, ${checkpoints.length} checkpoint(s))`,
  });
  return {
    status: 'succeeded',
    prefix,
    tokensBefore,
    tokensAfter,
    steps,
    usage,
    llmCalls: run.llmCalls,
    events,
    artifacts: artifacts.filter((a) => treatments[a.seq]?.kind === 'offloaded'),
    ...(ledgerTotals ? { ledger: ledgerTotals } : {}),
  };
}

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

export const BALANCED: PresetDefinition<BalancedParams> = {
  name: 'balanced',
  trigger: { fraction: 0.85, base: 'budget' },
  source: 'all',
  defaults: BALANCED_DEFAULTS,
  run: (input, params) => compactBalanced(input, params),
};
