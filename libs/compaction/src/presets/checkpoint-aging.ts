import { CanonicalMessage } from '../messages/canonical';
import { ProtectionPolicy } from '../engine/protection';
import { CompactionInput, SessionMessage } from '../engine/types';
import { ageCheckpoints } from '../stages/age-checkpoints';
import { CheckpointNotes, checkpointNotes, goalAwareProtection, GoalAwareCheckpointParams, summarizeIntoCheckpoint } from '../stages/goal-aware-checkpoint';
import { DefinedPreset, definePreset } from './define';

export { CHECKPOINT_AGING_LEVELS, levelTarget, ULTRA_LEVEL } from '../stages/age-checkpoints';
export { type AgingSpan, agingSpan, fitToTokens, goalAwarePrompt } from '../stages/goal-aware-checkpoint';
export { type CheckpointFacts, checkpointFacts } from '../engine/checkpoint-facts';

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
export interface CheckpointAgingParams extends GoalAwareCheckpointParams {
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

const fmt = (n: number) => n.toLocaleString('en-US');

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

export const CHECKPOINT_AGING: DefinedPreset<CheckpointAgingParams, CheckpointNotes, 'checkpoint-aging'> = definePreset<CheckpointAgingParams, CheckpointNotes, 'checkpoint-aging'>({
  name: 'checkpoint-aging',
  source: 'seed 004',
  defaults: CHECKPOINT_AGING_DEFAULTS,
  trigger: { fraction: 0.8, base: 'available' },
  pipeline: {
    // Seed 004: a new checkpoint, then every older one ages one level.
    stages: [summarizeIntoCheckpoint, ageCheckpoints],
    protection: (params, context) => goalAwareProtection(params, context),
    notes: checkpointNotes,
    unchangedStats: (params, context, _tokensBefore, input) => budgetStats(dynamicBudget(input, context), params.triggerFraction),
    closing: (s) => [
      {
        type: 'compressed',
        line: `Compacted ${fmt(s.tokensBefore)} → ${fmt(s.tokensAfter)} tokens (saved ~${fmt(s.tokensBefore - s.tokensAfter)}; ${s.prefix.checkpoints.length} checkpoint(s); available budget ${fmt(dynamicBudget(s.input, s.before).available)} → ${fmt(dynamicBudget(s.input, s.after).available)} tokens)`,
      },
    ],
    stats: (s) => budgetStats(dynamicBudget(s.input, s.after), s.params.triggerFraction),
  },
});

/**
 * One `checkpoint-aging` compaction. Pure apart from the summarizer calls. Never returns more
 * tokens than it was given; a saving below the minimum is `skipped`; an LLM failure is
 * `failed` with the previous prefix in place (Guarantee 5).
 */
export const compactCheckpointAging = CHECKPOINT_AGING.run;
