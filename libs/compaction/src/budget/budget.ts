import { ValidationFailed } from '../errors';
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
  /**
   * The upstream's reported input tokens over our estimate of the same request (the proxy
   * recalibrates from `usage.input_tokens`); 1 when never reported. Our counts are divided
   * by nothing: the window, in the provider's tokens, is what shrinks or grows in ours.
   */
  calibration?: number;
}

export interface Budget {
  window: number;
  reserve: number;
  /** Tokens of the tool schemas the requests send (counted with the session's model). */
  toolSchemaTokens: number;
  safetyMargin: number;
  /** Window tokens the calibration takes back (or gives) when our estimates run low (high). */
  calibrationTokens: number;
  budget: number;
  available: number;
}

/** Estimates drift; keep 2% of the window (at least 256 tokens) unused. */
export function safetyMargin(contextWindow: number): number {
  return Math.max(256, Math.ceil(contextWindow * 0.02));
}

/** How far a reported/estimated ratio may move the budget: beyond it the report is about something else. */
export const CALIBRATION_RANGE = { min: 0.8, max: 1.5 } as const;

export function computeBudget(input: BudgetInput): Budget {
  const reserve = Math.max(input.outputReserve, input.maxTokens ?? 0);
  const margin = safetyMargin(input.contextWindow);
  const tools = input.toolSchemaTokens ?? 0;
  const calibration = clampCalibration(input.calibration ?? 1);
  // The prompt may hold (window − reserve − margin) provider tokens; in our tokens that is the same divided by the ratio.
  const room = Math.max(0, input.contextWindow - reserve - margin);
  const calibrationTokens = room - Math.floor(room / calibration);
  const budget = Math.max(0, room - calibrationTokens - tools);
  const available = Math.max(0, budget - (input.systemTokens ?? 0) - (input.goalTokens ?? 0) - (input.checkpointTokens ?? 0));
  return { window: input.contextWindow, reserve, toolSchemaTokens: tools, safetyMargin: margin, calibrationTokens, budget, available };
}

export function clampCalibration(ratio: number): number {
  if (!Number.isFinite(ratio) || ratio <= 0) return 1;
  return Math.min(CALIBRATION_RANGE.max, Math.max(CALIBRATION_RANGE.min, ratio));
}

/** What a session remembers of its requests (SPEC.md "Budget"), as the sessions table stores it. */
export interface SessionBudgetFields {
  contextWindow: number;
  outputReserve: number;
  /** The largest `max_tokens` of the session's recent requests (null: none seen). */
  requestMaxTokens?: number | null;
  /** Tokens of the tool schemas its requests send (0: none). */
  toolSchemaTokens?: number | null;
  /** Tokens of the system prompt(s) in its context. */
  systemTokens?: number | null;
  /** Upstream-reported over estimated input tokens (1: never reported). */
  calibration?: number | null;
}

/** What one request brings: the proxy knows them exactly, and they win over what the session remembers. */
export interface RequestLimits {
  maxTokens?: number;
  toolSchemaTokens?: number;
}

/**
 * The one place the budget is computed (SPEC.md "Budget"): the API, the worker, the proxy, the
 * dashboard and analytics call it, so the worker compacts to the budget the next request will have.
 */
export function sessionBudget(session: SessionBudgetFields, request?: RequestLimits, extra: { goalTokens?: number; checkpointTokens?: number } = {}): Budget {
  return computeBudget({
    contextWindow: session.contextWindow,
    outputReserve: session.outputReserve,
    maxTokens: request?.maxTokens ?? session.requestMaxTokens ?? undefined,
    toolSchemaTokens: request?.toolSchemaTokens ?? session.toolSchemaTokens ?? 0,
    systemTokens: session.systemTokens ?? 0,
    calibration: session.calibration ?? 1,
    ...extra,
  });
}

/** The least budget a session may be configured with: 10% of the window or 2,048 tokens (half the window for tiny ones). */
export function budgetFloor(contextWindow: number): number {
  return Math.max(Math.min(2_048, Math.floor(contextWindow / 2)), Math.ceil(contextWindow * 0.1));
}

/** The default output reserve (SPEC.md): the model's maximum output, capped at 25% of the window. */
export function defaultOutputReserve(modelMaxOutput: number, contextWindow: number): number {
  return Math.min(modelMaxOutput, Math.floor(contextWindow * 0.25));
}

/**
 * A session configuration whose budget would fall under the floor is refused (400), naming
 * `contextWindow` and `outputReserve` with the numbers, before anything is stored.
 */
export function assertBudgetAboveFloor(config: { contextWindow: number; outputReserve: number }, fields: { contextWindow?: string; outputReserve?: string } = {}): void {
  const budget = computeBudget({ contextWindow: config.contextWindow, outputReserve: config.outputReserve });
  const floor = budgetFloor(config.contextWindow);
  if (budget.budget >= floor) return;
  const why =
    `leaves a budget of ${budget.budget.toLocaleString('en-US')} tokens (window ${config.contextWindow.toLocaleString('en-US')} − output reserve ` +
    `${config.outputReserve.toLocaleString('en-US')} − safety margin ${budget.safetyMargin.toLocaleString('en-US')}), under the floor of ` +
    `${floor.toLocaleString('en-US')} (10% of the window or 2,048 tokens)`;
  const maxReserve = Math.max(0, config.contextWindow - budget.safetyMargin - floor);
  throw new ValidationFailed([
    { field: fields.contextWindow ?? 'contextWindow', message: `${config.contextWindow.toLocaleString('en-US')} with this output reserve ${why}` },
    { field: fields.outputReserve ?? 'outputReserve', message: `must be at most ${maxReserve.toLocaleString('en-US')} for this window (it ${why})` },
  ]);
}

/** The token count at which the policy schedules a compaction. */
export function thresholdTokens(budget: Budget, policy: PolicyInput): number {
  const trigger = presetTrigger(policy);
  return Math.floor((trigger.base === 'budget' ? budget.budget : budget.available) * trigger.fraction);
}

/** Where the budget went, for a 422 that says what used it (SPEC.md Guarantee 3). */
export function budgetUse(budget: Budget): string {
  const parts = [
    `window ${budget.window.toLocaleString('en-US')}`,
    `− output reserve/max_tokens ${budget.reserve.toLocaleString('en-US')}`,
    `− tool schemas ${budget.toolSchemaTokens.toLocaleString('en-US')}`,
    `− safety margin ${budget.safetyMargin.toLocaleString('en-US')}`,
    ...(budget.calibrationTokens !== 0 ? [`− calibration ${budget.calibrationTokens.toLocaleString('en-US')}`] : []),
  ];
  return `${parts.join(' ')} = ${budget.budget.toLocaleString('en-US')}`;
}

/**
 * No compaction loops: a compaction that could not bring the context under its threshold (or
 * saved too little to apply) is not run again on every append. The next automatic one waits
 * until the context has grown by a tenth of the budget (at least 1,000 tokens) past where it was left.
 */
export function compactionHold(budget: Budget, contextTokens: number): number {
  return contextTokens + Math.max(1_000, Math.ceil(budget.budget * 0.1));
}

/** Whether an append that brings the context to `contextTokens` may trigger an automatic compaction. */
export function compactionDue(contextTokens: number, threshold: number, holdTokens: number | null | undefined): boolean {
  return contextTokens >= threshold && (holdTokens === null || holdTokens === undefined || contextTokens >= holdTokens);
}

/**
 * The proxy's recalibration (SPEC.md "Budget"): the upstream's reported prompt tokens over our
 * estimate of the same request, averaged with what the session had (half each), within
 * CALIBRATION_RANGE. `exact`: our counts use the model's own tokenizer, so a lower report (a
 * server that counts cached or trimmed parts differently) never grows the budget past them; only
 * what we miss (tool-schema framing, per-message overhead) shrinks it. Undefined when the change
 * is under 2%: the stored value, and so the budget and the forwarded prefix, stay put.
 */
export function recalibrated(current: number, estimatedTokens: number, reportedTokens: number, exact = false): number | undefined {
  if (!(estimatedTokens > 0) || !(reportedTokens > 0)) return undefined;
  const ratio = clampCalibration(reportedTokens / estimatedTokens);
  const next = clampCalibration(Math.round(((clampCalibration(current) + (exact ? Math.max(1, ratio) : ratio)) / 2) * 1_000) / 1_000);
  return Math.abs(next - current) >= 0.02 ? next : undefined;
}
