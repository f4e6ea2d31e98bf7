/**
 * Typed domain errors that this library throws. The API adds its own (apps/api/src/errors/http-errors.ts)
 * and maps every code to HTTP in one exception filter; the worker never sees an HTTP exception.
 */
export enum ErrorCode {
  ValidationFailed = 'validation_failed',
  BudgetTooSmall = 'budget_too_small',
}

export class DomainError extends Error {
  constructor(
    /** An `ErrorCode`, or one of the API's own codes. */
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** A problem with one field of a request; `field` is a path such as `messages[3].content[1].tool_use_id`. */
export interface FieldProblem {
  field: string;
  message: string;
}

export class ValidationFailed extends DomainError {
  constructor(readonly problems: FieldProblem[]) {
    const shown = problems.slice(0, 5).map((p) => `${p.field}: ${p.message}`);
    const more = problems.length > 5 ? ` (and ${problems.length - 5} more)` : '';
    super(ErrorCode.ValidationFailed, `${shown.join('; ')}${more}`, { fields: problems.slice(0, 100) });
  }
}

/**
 * Guarantee 3/4: even with every protection given way, what can never go (the system prompt,
 * the last user turn, an open tool exchange) exceeds the budget. The read fails with 422
 * rather than returning an oversized context.
 */
export class BudgetTooSmall extends DomainError {
  constructor(
    readonly budget: number,
    readonly irreducibleTokens: number,
    /** What the irreducible part is made of (the system prompt vs the last turn and open exchange), when known. */
    readonly parts: { systemTokens?: number; conversationTokens?: number } = {},
    /** How the budget was arrived at (window, reserve or max_tokens, tool schemas, margin), when known. */
    readonly budgetLine?: string,
  ) {
    const made =
      parts.systemTokens !== undefined && parts.conversationTokens !== undefined
        ? ` (system prompt ${parts.systemTokens.toLocaleString('en-US')}, last user turn and open tool exchange ${parts.conversationTokens.toLocaleString('en-US')})`
        : '';
    super(
      ErrorCode.BudgetTooSmall,
      `The context cannot fit the ${budget}-token budget: the system prompt, the last user turn and the open tool exchange alone take ${irreducibleTokens} tokens${made}` +
        (budgetLine ? `; the budget is ${budgetLine}` : ''),
      { budget, irreducibleTokens, ...parts, ...(budgetLine ? { budgetLine } : {}) },
    );
  }

  /** The same refusal with how the budget was computed (the caller knows the window, reserve and tool schemas). */
  withBudgetLine(budgetLine: string): BudgetTooSmall {
    return new BudgetTooSmall(this.budget, this.irreducibleTokens, this.parts, budgetLine);
  }
}
