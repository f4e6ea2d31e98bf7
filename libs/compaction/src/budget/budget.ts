import { PolicyInput, presetTrigger } from '../policy/presets';

/**
 * SPEC.md "Budget": budget = window − reserve − tool-schema tokens − safety margin;
 * available = budget − system prompt − goal block − checkpoints.
 */
export interface BudgetInput {
  contextWindow: number;
  /** The policy's output reserve. */
  outputReserve: number;
  /** The request's max_tokens, when known (the proxy knows it). */
  maxTokens?: number;
  toolSchemaTokens?: number;
  systemTokens?: number;
  goalTokens?: number;
  checkpointTokens?: number;
}

export interface Budget {
  window: number;
  reserve: number;
  safetyMargin: number;
  budget: number;
  available: number;
}

/** Estimates drift; keep 2% of the window (at least 256 tokens) unused. */
export function safetyMargin(contextWindow: number): number {
  return Math.max(256, Math.ceil(contextWindow * 0.02));
}

export function computeBudget(input: BudgetInput): Budget {
  const reserve = Math.max(input.outputReserve, input.maxTokens ?? 0);
  const margin = safetyMargin(input.contextWindow);
  const budget = Math.max(0, input.contextWindow - reserve - (input.toolSchemaTokens ?? 0) - margin);
  const available = Math.max(0, budget - (input.systemTokens ?? 0) - (input.goalTokens ?? 0) - (input.checkpointTokens ?? 0));
  return { window: input.contextWindow, reserve, safetyMargin: margin, budget, available };
}

/** The token count at which the policy schedules a compaction. */
export function thresholdTokens(budget: Budget, policy: PolicyInput): number {
  const trigger = presetTrigger(policy);
  return Math.floor((trigger.base === 'budget' ? budget.budget : budget.available) * trigger.fraction);
}
