import { Block, CanonicalMessage } from '../messages/canonical';
import { toolUseIdOf } from '../messages/util';
import { LlmError } from '../llm/summarizer';
import { EMPTY_GOAL_RECORD, GOAL_STATUS_SIGN, GoalRecord, goalRecordOf } from './goal-markers';
import { PresetDefinition } from './preset';
import { Protection, ProtectionPolicy, protectionOf } from './protection';
import { summarizeSpan } from './summarize';
import { CompactionEvent, CompactionInput, CompactionOutcome, SessionMessage } from './types';
import { FactsLedger } from '../ledger/ledger';
import { applyPrefix, Checkpoint, checkpointMessage, contentId, Treatment, VersionPrefix } from './version';
import { CompactionRun } from './run';

/**
 * `checkpoint-aging` (seed 004, SPEC.md "Policies"): when the context passes 80% of the dynamic
 * budget (context window − system prompt − checkpoints), the oldest unprotected span becomes a
 * new checkpoint of ≈1,200 tokens, summarized with the seed's goal-aware prompt, and every older
 * checkpoint ages one level: recent 1,200 → old 600 → ancient 300 → ultra 150, all ultra
 * checkpoints merging into one of at most 150 tokens. Aging writes new checkpoints (new id,
 * `agedFromId`, level + 1); the old ones are never changed, so old versions keep theirs. The
 * text of user messages is never compressed (except user text tagged `observation`), nor the
 * system prompt, nor the goal block with its locked decisions (it lives outside the checkpoints).
 */
export interface CheckpointAgingParams {
  /** Seed 004: every user message's text stays (`allUserTexts`); the latest messages stay whole. */
  protection: ProtectionPolicy;
  /** Seed 004's `preserveRecent`: the latest messages worth this many tokens are not compressed. */
  preserveRecentTokens: number;
  /** Seed 004: compress at 80% of the available budget (the scheduler's trigger; reported in the stats). */
  triggerFraction: number;
  /** Token targets by level (seed 004's aging table): a new checkpoint, then each aging step. */
  recentTokens: number;
  oldTokens: number;
  ancientTokens: number;
  /** Ultra checkpoints, and the one they all merge into, never exceed this. */
  ultraTokens: number;
  /** A compaction saving less than max(minSavingFraction × budget, minSavingTokens) is skipped (Guarantee 5). */
  minSavingFraction: number;
  minSavingTokens: number;
  /** Seed 004's goal-aware summarization prompt, as a template (see `goalAwarePrompt`). */
  instructions: string;
  /** Seed 004's plain summarization prompt, for sessions with no goal record. */
  plainInstructions: string;
  /** The prompt of an aging step, as a template: `{{level}}`, `{{target}}`, `{{rules}}`. */
  agingInstructions: string;
}

/** Seed 004's "Goal-Aware Summarization Prompt"; the conversation itself travels as the request's messages. */
export const CHECKPOINT_AGING_INSTRUCTIONS = `
ACTIVE GOAL: {{goal}}
Priority: {{priority}}
Status: {{status}}

COMPLETED CHECKPOINTS:
{{completed}}

IN PROGRESS:
{{inProgress}}

PENDING:
{{pending}}

LOCKED DECISIONS:
{{locked}}

---

Summarize the following conversation, focusing on progress toward the goal:
{{messages}}

PRESERVE:
- Decisions made toward the goal
- Checkpoints completed
- Files created/modified
- Blockers encountered
- Technical details relevant to the goal
- Next steps planned

SUMMARIZE AGGRESSIVELY:
- Off-topic discussions
- Exploratory conversations
- Debugging steps that succeeded
- Repeated information

Provide a concise summary that maintains essential information for continuing work on the goal.
`;

/** Seed 004's "Summarization Prompt", used when the session has no goal. */
export const CHECKPOINT_AGING_PLAIN_INSTRUCTIONS = `Summarize the following conversation history, preserving key decisions, code changes, and important context:

{{messages}}

Provide a concise summary that maintains essential information.`;

/** Seed 004's "Compression Levels", by checkpoint level (0 = recent … 3 = ultra merged). */
export const CHECKPOINT_AGING_LEVELS = [
  { name: 'recent', rules: 'detailed summaries; key decisions preserved; code snippets included' },
  { name: 'old', rules: 'moderate summaries; main points only; code references only' },
  { name: 'ancient', rules: 'brief summaries; critical info only; no code details' },
  { name: 'ultra', rules: 'minimal summary; essential context only' },
] as const;
export const ULTRA_LEVEL = 3;

export const CHECKPOINT_AGING_AGING_INSTRUCTIONS =
  'Compress the following checkpoint summary of an earlier part of the conversation further, to the {{level}} level of at most {{target}} tokens: {{rules}}. ' +
  'Keep decisions made toward the goal, files created or modified, blockers and next steps before anything else.';

export const CHECKPOINT_AGING_DEFAULTS: CheckpointAgingParams = {
  // Its aging span strips tool results out of user messages and summarizes them with their calls, keeping the text.
  protection: { latestMessages: 6, latestUserTexts: 0, allUserTexts: true, exemptToolNames: [], userTextKeepsExchange: false },
  preserveRecentTokens: 2_048,
  triggerFraction: 0.8,
  recentTokens: 1_200,
  oldTokens: 600,
  ancientTokens: 300,
  ultraTokens: 150,
  minSavingFraction: 0.05,
  minSavingTokens: 1_000,
  instructions: CHECKPOINT_AGING_INSTRUCTIONS,
  plainInstructions: CHECKPOINT_AGING_PLAIN_INSTRUCTIONS,
  agingInstructions: CHECKPOINT_AGING_AGING_INSTRUCTIONS,
};

const MESSAGES_PLACEHOLDER = '(the conversation is given below, as the messages of this request)';
const sumTokens = (xs: SessionMessage[]) => xs.reduce((n, m) => n + m.tokens, 0);
const fmt = (n: number) => n.toLocaleString('en-US');
const fill = (template: string, values: Record<string, string>) => template.replace(/\{\{(\w+)\}\}/g, (all, key: string) => values[key] ?? all);

/** The token target of a level: recent, old, ancient, ultra (and beyond: ultra). */
export function levelTarget(params: CheckpointAgingParams, level: number): number {
  return [params.recentTokens, params.oldTokens, params.ancientTokens, params.ultraTokens][Math.min(Math.max(level, 0), ULTRA_LEVEL)];
}

/** Seed 004's goal-aware prompt filled from the goal record; the plain prompt when there is no goal at all. */
export function goalAwarePrompt(params: Pick<CheckpointAgingParams, 'instructions' | 'plainInstructions'>, record: GoalRecord): string {
  const hasGoal = record.goal !== undefined || record.checkpoints.length > 0 || record.decisions.some((d) => d.locked);
  if (!hasGoal) return fill(params.plainInstructions, { messages: MESSAGES_PLACEHOLDER });
  const list = (status: keyof typeof GOAL_STATUS_SIGN) =>
    record.checkpoints.filter((c) => c.status === status).map((c) => `${GOAL_STATUS_SIGN[status]} ${c.text}`).join('\n');
  return fill(params.instructions, {
    goal: record.goal ?? '(not stated)',
    // Seed 004's Goal has a priority and a status; a session has one goal, the one being worked on.
    priority: record.priority ?? 'high',
    status: record.status ?? 'active',
    completed: list('completed'),
    inProgress: list('in-progress'),
    pending: list('pending'),
    locked: record.decisions.filter((d) => d.locked).map((d) => `🔒 ${d.text}`).join('\n'),
    messages: MESSAGES_PLACEHOLDER,
  }).trim();
}

/** The longest word-boundary prefix of `text` within `max` tokens (with an ellipsis when cut). Deterministic. */
export function fitToTokens(text: string, max: number, countText: (t: string) => number): string {
  if (countText(text) <= max) return text;
  const words = text.split(/(?<=\s)/);
  let lo = 0;
  let hi = words.length;
  const cut = (n: number) => `${words.slice(0, n).join('').trimEnd()} …`;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (countText(cut(mid)) <= max) lo = mid;
    else hi = mid - 1;
  }
  return lo === 0 ? '…' : cut(lo);
}

// ------------------------------------------------------------------------------------------
// The span: whole tool exchanges of unprotected messages; user text stays.

const answersTools = (m: CanonicalMessage) => m.role === 'tool' || m.blocks.some((b) => b.type === 'tool_result');
const hasCalls = (m: CanonicalMessage) => m.role === 'assistant' && m.blocks.some((b) => toolUseIdOf(b) !== undefined);

export interface AgingSpan {
  /** What the summarizer reads, in seq order (a stripped user message contributes its tool results only). */
  part: SessionMessage[];
  /** Seqs that leave the context (replaced by the checkpoint). */
  summarized: number[];
  /** User messages that keep their text while their tool results go into the checkpoint. */
  stripped: Array<{ seq: number; message: CanonicalMessage }>;
}

/**
 * The messages a new checkpoint covers, from the one protection policy: every message before
 * the latest N that is neither a system prompt, protected whole nor protected user text,
 * taken by whole tool exchanges (an assistant message with calls and the messages answering
 * it). A user message whose text is protected but which also carries results of a summarized
 * exchange keeps its other blocks and loses the results (they go into the checkpoint), so
 * no `tool_result` is left without its `tool_use` (Guarantee 2) and the user's text stays
 * verbatim (Guarantee 3). An exchange with any member that must stay whole stays whole.
 */
export function agingSpan(context: SessionMessage[], protection: Protection, countMessage: (m: CanonicalMessage) => number): AgingSpan {
  const beforeLatest = (m: SessionMessage) => protection.latestFromSeq === undefined || m.seq < protection.latestFromSeq;
  const state = (m: SessionMessage): 'sum' | 'strip' | 'keep' => {
    if ((m.message.role === 'system' && !m.message.inConversation) || !beforeLatest(m) || protection.whole.has(m.seq)) return 'keep';
    if (!protection.userText.has(m.seq)) return 'sum';
    return m.message.blocks.some((b) => b.type === 'tool_result') ? 'strip' : 'keep';
  };
  const span: AgingSpan = { part: [], summarized: [], stripped: [] };
  let i = 0;
  while (i < context.length) {
    let end = i;
    if (hasCalls(context[i].message)) while (end + 1 < context.length && answersTools(context[end + 1].message)) end += 1;
    const group = context.slice(i, end + 1);
    const states = group.map(state);
    i = end + 1;
    if (states[0] !== 'sum' || states.some((s) => s === 'keep')) continue;
    group.forEach((m, k) => {
      if (states[k] === 'sum') {
        span.part.push(m);
        span.summarized.push(m.seq);
        return;
      }
      const results = m.message.blocks.filter((b) => b.type === 'tool_result');
      const rest = m.message.blocks.filter((b) => b.type !== 'tool_result');
      const message: CanonicalMessage = { ...m.message, blocks: rest };
      const resultsOnly: CanonicalMessage = { role: m.message.role, blocks: results as Block[] };
      span.part.push({ seq: m.seq, message: resultsOnly, tokens: Math.max(0, m.tokens - countMessage(message)) });
      span.stripped.push({ seq: m.seq, message });
    });
  }
  return span;
}

/** How many of the latest non-system messages hold `tokens` tokens (seed 004's `preserveRecent`). */
function recentCount(context: SessionMessage[], tokens: number): number {
  let n = 0;
  let sum = 0;
  for (let i = context.length - 1; i >= 0 && sum < tokens; i -= 1) {
    if (context[i].message.role === 'system' && !context[i].message.inConversation) break;
    sum += context[i].tokens;
    n += 1;
  }
  return n;
}

// ------------------------------------------------------------------------------------------
// Facts of a checkpoint (seed 004's keyDecisions, filesModified, nextSteps).

export interface CheckpointFacts {
  keyDecisions: string[];
  filesModified: string[];
  nextSteps: string[];
}

/**
 * Seed 004's checkpoint fields, from the facts ledger (SPEC.md "Facts ledger") of the span and
 * the checkpoint text, deterministically (no LLM): files modified are the span's paths whose
 * last operation created, edited or deleted them (tool calls, an edit of the file last opened,
 * shell writes, `[ARTIFACT]` markers); key decisions are its decisions (`[DECISION]` markers,
 * sentences with a verb of choosing); next steps its open tasks (`[NEXT]` markers, `Next steps`
 * lines and lists, todo lists).
 */
export function checkpointFacts(text: string, messages: CanonicalMessage[]): CheckpointFacts {
  const summary: CanonicalMessage = { role: 'assistant', blocks: [{ type: 'text', text }] };
  const entries = FactsLedger.of([...messages, summary].map((message, i) => ({ seq: i + 1, message }))).entries();
  return {
    keyDecisions: entries.filter((e) => e.kind === 'decision').map((e) => e.value),
    filesModified: entries.filter((e) => e.kind === 'path' && (e.state === 'created' || e.state === 'edited' || e.state === 'deleted')).map((e) => e.value),
    nextSteps: entries.filter((e) => e.kind === 'task' && e.state !== 'done').map((e) => e.value),
  };
}

// ------------------------------------------------------------------------------------------
// The run.

/** The goal record a run works with: the caller's (the session's record), else folded from the context's markers over `goal`. */
function goalRecordFor(input: CompactionInput, context: SessionMessage[]): GoalRecord {
  // The worker may pass the session's goal record along (SPEC.md "goal record"); until the input type names it, read it if present.
  const given = (input as CompactionInput & { goalRecord?: GoalRecord }).goalRecord;
  if (given) return given;
  const base: GoalRecord = input.goal ? { ...EMPTY_GOAL_RECORD, goal: input.goal } : EMPTY_GOAL_RECORD;
  return goalRecordOf(
    context.map((m) => m.message),
    base,
  );
}

const isCheckpointMessage = (m: CanonicalMessage) => m.role === 'system' && (m.tags ?? []).includes('checkpoint');

interface DynamicBudget {
  window: number;
  systemTokens: number;
  checkpointTokens: number;
  available: number;
  conversation: number;
}

/** Seed 004's dynamic budget: context window − system prompt − checkpoints; the rest of the context is the conversation. */
function dynamicBudget(input: CompactionInput, context: SessionMessage[]): DynamicBudget {
  const window = input.contextWindow ?? input.budget;
  let systemTokens = 0;
  let checkpointTokens = 0;
  let conversation = 0;
  for (const m of context) {
    if (isCheckpointMessage(m.message)) checkpointTokens += m.tokens;
    else if (m.message.role === 'system') systemTokens += m.tokens;
    else conversation += m.tokens;
  }
  return { window, systemTokens, checkpointTokens, available: Math.max(0, window - systemTokens - checkpointTokens), conversation };
}

function budgetStats(b: DynamicBudget, triggerFraction: number): Record<string, number | boolean> {
  const trigger = Math.floor(b.available * triggerFraction);
  return {
    context_window: b.window,
    system_tokens: b.systemTokens,
    checkpoint_tokens: b.checkpointTokens,
    available_budget: b.available,
    compression_trigger: trigger,
    conversation_tokens: b.conversation,
    usage_percent: b.available > 0 ? Math.round((1_000 * b.conversation) / b.available) / 10 : 100,
    needs_compression: b.conversation >= trigger,
  };
}

/**
 * One `checkpoint-aging` compaction. Pure apart from the summarizer calls. Never returns more
 * tokens than it was given; a saving below the minimum is `skipped`; an LLM failure is
 * `failed` with the previous prefix in place (Guarantee 5).
 */
export async function compactCheckpointAging(input: CompactionInput, params: CheckpointAgingParams = CHECKPOINT_AGING_DEFAULTS): Promise<CompactionOutcome> {
  const checkpointTokens = (c: Checkpoint) => input.countMessage(checkpointMessage(c));
  const context = applyPrefix(input.prefix, input.history, checkpointTokens);
  const tokensBefore = sumTokens(context);
  const budgetBefore = dynamicBudget(input, context);
  const run = new CompactionRun(input, tokensBefore, { stats: () => budgetStats(budgetBefore, params.triggerFraction) });
  const { usage, steps, events, account, unchanged } = run;

  const policy: ProtectionPolicy = {
    ...params.protection,
    latestMessages: Math.max(params.protection.latestMessages, recentCount(context, params.preserveRecentTokens)),
  };
  const protection = protectionOf(context, policy);
  const span = agingSpan(context, protection, input.countMessage);
  if (span.summarized.length === 0) return unchanged('skipped', 'nothing-to-compact (every older message is protected)');

  const record = goalRecordFor(input, context);
  const spanTokens = sumTokens(span.part);
  // Seed 004: a new checkpoint of ~1,200 tokens, and never more than half of what it replaces (50–70% compression).
  const target = Math.max(1, Math.min(params.recentTokens, Math.floor(spanTokens / 2)));
  const older = [...input.prefix.checkpoints].sort((a, b) => a.fromSeq - b.fromSeq || a.toSeq - b.toSeq);
  const aged: Checkpoint[] = [];
  const agedEvents: CompactionEvent[] = [];
  /** Old checkpoint id → the id of the checkpoint it aged (or merged) into. */
  const renamed = new Map<string, string>();
  let fresh: Checkpoint;

  const age = async (sources: Checkpoint[], level: number): Promise<Checkpoint> => {
    const levelTokens = levelTarget(params, level);
    const name = CHECKPOINT_AGING_LEVELS[Math.min(level, ULTRA_LEVEL)].name;
    const joined = sources.map((c) => c.text).join('\n\n');
    let text = joined;
    // Within the target already (one small checkpoint, or ultra ones that fit together): no LLM call.
    if (input.countText(joined) > levelTokens) {
      const r = await input.summarizer.summarize(
        {
          kind: 'merge',
          instructions: fill(params.agingInstructions, { level: name, target: fmt(levelTokens), rules: CHECKPOINT_AGING_LEVELS[Math.min(level, ULTRA_LEVEL)].rules }),
          messages: sources.map(checkpointMessage),
          targetTokens: levelTokens,
          goal: input.goal,
        },
        input.signal,
      );
      account(r);
      text = r.text;
    }
    text = fitToTokens(text, levelTokens, input.countText);
    const fromSeq = Math.min(...sources.map((c) => c.fromSeq));
    const toSeq = Math.max(...sources.map((c) => c.toSeq));
    const next: Checkpoint = {
      id: contentId('ckpt', fromSeq, toSeq, level, text),
      fromSeq,
      toSeq,
      level,
      text,
      tokens: input.countText(text),
      originalTokens: sources.reduce((n, c) => n + c.originalTokens, 0),
      agedFromId: sources[0].id,
    };
    const before = sources.reduce((n, c) => n + c.tokens, 0);
    for (const c of sources) renamed.set(c.id, next.id);
    agedEvents.push({
      type: 'checkpoint-aged',
      line:
        sources.length > 1
          ? `Merged ${sources.length} ultra checkpoints (messages ${fromSeq}–${toSeq}) → 1 of ${fmt(next.tokens)} tokens (was ${fmt(before)})`
          : `Aged checkpoint ${fromSeq}–${toSeq} ${CHECKPOINT_AGING_LEVELS[Math.min(sources[0].level, ULTRA_LEVEL)].name} → ${name}: ${fmt(before)} → ${fmt(next.tokens)} tokens`,
    });
    return next;
  };

  steps.push('summarize');
  try {
    const s = await summarizeSpan(span.part, input.summarizer, { instructions: goalAwarePrompt(params, record), targetTokens: target, goal: input.goal, countText: input.countText }, input.signal);
    account(s);
    const text = fitToTokens(s.checkpoint.text, target, input.countText);
    const { fromSeq, toSeq } = s.checkpoint;
    fresh = { id: contentId('ckpt', fromSeq, toSeq, 0, text), fromSeq, toSeq, level: 0, text, tokens: input.countText(text), originalTokens: spanTokens };
    if (fresh.tokens >= spanTokens) return unchanged('skipped', 'no-saving (the summary is not smaller than the span)');

    // Seed 004: on each new compaction every older checkpoint ages one level; all ultra ones merge into one.
    if (older.length > 0) steps.push('age');
    const ultra: Checkpoint[] = [];
    for (const c of older) {
      if (c.level + 1 >= ULTRA_LEVEL) ultra.push(c);
      else aged.push(await age([c], c.level + 1));
    }
    // A lone checkpoint already at the ultra level and within its size cannot age further: it stays as it is.
    if (ultra.length === 1 && ultra[0].level >= ULTRA_LEVEL && input.countText(ultra[0].text) <= params.ultraTokens) aged.unshift(ultra[0]);
    // Levels never go down: a checkpoint from another preset may already be past ultra.
    else if (ultra.length > 0) aged.unshift(await age(ultra, Math.max(ULTRA_LEVEL, ...ultra.map((c) => c.level))));
  } catch (error) {
    if (!(error instanceof LlmError)) throw error;
    run.llmCalls += error.attempts;
    events.push({ type: 'compression-error', line: `Summarizer failed (${error.kind}) after ${error.attempts} attempt(s); the previous context stays` });
    return unchanged('failed', `llm-${error.kind}`);
  }

  // Treatments: the span's messages are summarized into the new checkpoint, stripped user
  // messages keep their text; earlier treatments follow their checkpoint to its aged form.
  const treatments: Record<number, Treatment> = {};
  for (const [seq, t] of Object.entries(input.prefix.treatments)) {
    treatments[Number(seq)] = t.kind === 'summarized' && renamed.has(t.checkpointId) ? { kind: 'summarized', checkpointId: renamed.get(t.checkpointId) as string } : t;
  }
  for (const seq of span.summarized) treatments[seq] = { kind: 'summarized', checkpointId: fresh.id };
  for (const s of span.stripped) treatments[s.seq] = { kind: 'compressed', message: s.message, tokens: input.countMessage(s.message), stage: 'checkpoint-aging' };
  const coversThroughSeq = Math.max(input.prefix.coversThroughSeq, fresh.toSeq, ...span.stripped.map((s) => s.seq));
  const checkpoints = [...aged, fresh].sort((a, b) => a.fromSeq - b.fromSeq || a.toSeq - b.toSeq);
  const prefix: VersionPrefix = { ...input.prefix, coversThroughSeq, checkpoints, treatments };

  const after = applyPrefix(prefix, input.history, checkpointTokens);
  const tokensAfter = sumTokens(after);
  const budgetAfter = dynamicBudget(input, after);
  if (tokensAfter > tokensBefore) return unchanged('skipped', 'no-saving');
  const tooLittle = run.belowMinimum(tokensBefore - tokensAfter, params);
  if (tooLittle) return tooLittle;

  const kept = span.stripped.length > 0 ? `; the text of ${span.stripped.length} user message(s) kept` : '';
  events.push({
    type: 'checkpoint-created',
    line: `Summarized ${span.summarized.length} messages → 1 checkpoint of ${fmt(fresh.tokens)} tokens (saved ~${fmt(spanTokens - fresh.tokens)} tokens${kept})`,
  });
  events.push(...agedEvents);
  events.push({
    type: 'compressed',
    line: `Compacted ${fmt(tokensBefore)} → ${fmt(tokensAfter)} tokens (saved ~${fmt(tokensBefore - tokensAfter)}; ${checkpoints.length} checkpoint(s); available budget ${fmt(budgetBefore.available)} → ${fmt(budgetAfter.available)} tokens)`,
  });
  return { status: 'succeeded', prefix, tokensBefore, tokensAfter, steps, usage, llmCalls: run.llmCalls, events, artifacts: [], stats: budgetStats(budgetAfter, params.triggerFraction) };
}

export const CHECKPOINT_AGING: PresetDefinition<CheckpointAgingParams> = {
  name: 'checkpoint-aging',
  trigger: { fraction: 0.8, base: 'available' },
  source: 'seed 004',
  defaults: CHECKPOINT_AGING_DEFAULTS,
  run: compactCheckpointAging,
};
