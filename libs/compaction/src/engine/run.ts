import { LlmUsage } from '../llm/summarizer';
import { CompactionEvent, CompactionInput, CompactionOutcome } from './types';

const fmt = (n: number) => n.toLocaleString('en-US');

/** The minimum-saving rule's parameters (Guarantee 5), the same in every preset. */
export interface MinSavingParams {
  minSavingFraction: number;
  minSavingTokens: number;
}

/**
 * What every preset's run keeps while it works: the LLM usage and calls, the steps and events,
 * and the outcome that leaves the head as it was (`unchanged`). Before, each preset copied this
 * scaffolding (issue #16).
 */
export class CompactionRun {
  readonly usage: LlmUsage = { inputTokens: 0, outputTokens: 0, costUsd: 0 };
  llmCalls = 0;
  readonly steps: string[] = [];
  readonly events: CompactionEvent[] = [];

  constructor(
    readonly input: CompactionInput,
    readonly tokensBefore: number,
    private readonly options: {
      /** Which of the run's events an unchanged outcome reports: its errors only (default), or all of them. */
      keepEvents?: 'errors' | 'all';
      /** Preset-specific stats of an unchanged outcome. */
      stats?: () => CompactionOutcome['stats'];
    } = {},
  ) {}

  /** Adds one summarizer answer's usage and attempts (a bound function: stages take it as a callback). */
  readonly account = (r: { usage: LlmUsage; attempts: number }): void => {
    this.usage.inputTokens += r.usage.inputTokens;
    this.usage.outputTokens += r.usage.outputTokens;
    this.usage.costUsd += r.usage.costUsd;
    this.llmCalls += r.attempts;
  };

  /** The outcome that keeps the previous prefix: skipped (with a `compression-skipped` event) or failed; `stats` overrides the run's. */
  readonly unchanged = (status: 'skipped' | 'failed', reason: string, stats?: CompactionOutcome['stats']): CompactionOutcome => {
    const kept = this.options.keepEvents === 'all' ? this.events : this.events.filter((e) => e.type === 'compression-error');
    const outcome: CompactionOutcome = {
      status,
      reason,
      prefix: this.input.prefix,
      tokensBefore: this.tokensBefore,
      tokensAfter: this.tokensBefore,
      steps: this.steps,
      usage: this.usage,
      llmCalls: this.llmCalls,
      artifacts: [],
      events: [...kept, ...(status === 'skipped' ? [{ type: 'compression-skipped' as const, line: `Compaction skipped: ${reason}` }] : [])],
    };
    const shown = stats ?? this.options.stats?.();
    if (shown !== undefined) outcome.stats = shown;
    return outcome;
  };

  /** Guarantee 5's minimum saving: max(minSavingFraction × budget, minSavingTokens). */
  minSaving(params: MinSavingParams): number {
    return Math.max(Math.floor(params.minSavingFraction * this.input.budget), params.minSavingTokens);
  }

  /** The skipped outcome when `saved` is under the minimum saving, else undefined. */
  belowMinimum(saved: number, params: MinSavingParams, stats?: CompactionOutcome['stats']): CompactionOutcome | undefined {
    const min = this.minSaving(params);
    return saved < min ? this.unchanged('skipped', `saving-below-minimum (${fmt(saved)} < ${fmt(min)} tokens)`, stats) : undefined;
  }
}
