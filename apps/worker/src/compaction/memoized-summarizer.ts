import { createHash } from 'node:crypto';
import { SummarizeRequest, SummarizeResult, Summarizer } from '@compactor/compaction';

/**
 * Saves every summary before the run goes on, keyed by the request's hash: a job that BullMQ
 * retries after a crash replays the summaries it already paid for instead of calling the LLM
 * again (CONVENTIONS.md: save the result of an expensive step before the next step).
 */
export class MemoizedSummarizer implements Summarizer {
  readonly provider: string;
  readonly model: string;
  readonly contextWindow: number;
  readonly deterministic: boolean;
  /** Summaries answered from an earlier attempt of the same job. */
  replayed = 0;
  /** What this run's own LLM calls used (replays cost nothing), for the spend caps. */
  readonly spent = { tokens: 0, costUsd: 0 };

  constructor(
    private readonly inner: Summarizer,
    private readonly saved: Record<string, unknown>,
    private readonly save: (key: string, result: SummarizeResult) => Promise<void>,
    /**
     * Runs before each LLM call (not before a replay): throws when this run no longer owns its job, so a run taken
     * over pays for nothing more, or when the tenant's spend cap is reached (it is given what this run spent so far).
     */
    private readonly beforeCall: (spent: { tokens: number; costUsd: number }) => Promise<void> = async () => undefined,
    /** The run's own signal (lock lost): aborts an LLM call in flight. */
    private readonly runSignal?: AbortSignal,
  ) {
    this.provider = inner.provider;
    this.model = inner.model;
    this.contextWindow = inner.contextWindow;
    this.deterministic = inner.deterministic;
  }

  async summarize(request: SummarizeRequest, signal?: AbortSignal): Promise<SummarizeResult> {
    const key = `summary:${createHash('sha256').update(JSON.stringify([this.provider, this.model, request])).digest('hex').slice(0, 32)}`;
    const earlier = this.saved[key] as SummarizeResult | undefined;
    if (earlier && typeof earlier.text === 'string') {
      this.replayed += 1;
      return earlier;
    }
    await this.beforeCall(this.spent);
    const result = await this.inner.summarize(request, signal && this.runSignal ? AbortSignal.any([signal, this.runSignal]) : (signal ?? this.runSignal));
    this.spent.tokens += result.usage.inputTokens + result.usage.outputTokens;
    this.spent.costUsd += result.usage.costUsd;
    await this.save(key, result);
    this.saved[key] = result;
    return result;
  }
}
