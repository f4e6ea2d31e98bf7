import { LlmError, SummarizeRequest, SummarizeResult, Summarizer } from '@compactor/compaction';
import type { WorkerHeartbeat } from '@compactor/jobs';
import { redactSecrets } from '@compactor/llm';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

export type SummarizerDescription = WorkerHeartbeat['summarizer'];

const MAX_ERROR_TEXT = 200;

/** What a job handler's result says about how the job went: its `status` when it has one. */
export function jobOutcomeOf(result: unknown): string {
  const status = result && typeof result === 'object' ? (result as { status?: unknown }).status : undefined;
  return typeof status === 'string' && status.length <= 40 ? status : 'completed';
}

/**
 * This worker process's recent activity, for its heartbeat: counts and the last outcome of its
 * jobs (fed by JobRunner) and of its summarizer calls (through `watch`). Only in memory: a
 * restarted worker starts afresh, which is what "is this worker healthy now" needs.
 */
export class WorkerActivity {
  readonly id: string;
  readonly hostname = hostname();
  readonly startedAt: Date;
  private readonly jobs: WorkerHeartbeat['jobs'] = { completed: 0, failed: 0, last: null };
  private readonly llm: WorkerHeartbeat['llm'] = { calls: 0, errors: 0, lastSuccessAt: null, lastErrorAt: null, lastError: null };

  constructor(
    private readonly summarizer: SummarizerDescription,
    private readonly concurrency: number,
    /** Provider keys, so an error text that quotes one never reaches Redis. */
    private readonly secrets: Array<string | undefined> = [],
    private readonly now: () => Date = () => new Date(),
  ) {
    this.id = `${this.hostname}-${process.pid}-${randomBytes(3).toString('hex')}`;
    this.startedAt = this.now();
  }

  jobCompleted(name: string, result: unknown): void {
    this.jobs.completed += 1;
    this.jobs.last = { name, outcome: jobOutcomeOf(result), at: this.now().toISOString() };
  }

  /** A handler threw (BullMQ retries it, or gave up). */
  jobFailed(name: string): void {
    this.jobs.failed += 1;
    this.jobs.last = { name, outcome: 'error', at: this.now().toISOString() };
  }

  /** A probe of the summarizer's list-models endpoint (CompactionSweep, while an LLM outage holds compactions). */
  llmProbed(state: 'up' | 'down' | 'unknown'): void {
    this.llm.probe = { state, at: this.now().toISOString() };
  }

  llmSucceeded(): void {
    this.llm.calls += 1;
    this.llm.lastSuccessAt = this.now().toISOString();
  }

  llmFailed(error: unknown): void {
    // An abort is ours (a job cancelled or shutting down), not the provider's health.
    if (error instanceof LlmError && error.kind === 'aborted') return;
    this.llm.calls += 1;
    this.llm.errors += 1;
    this.llm.lastErrorAt = this.now().toISOString();
    const kind = error instanceof LlmError ? error.kind : 'unexpected';
    const text = error instanceof Error ? error.message : String(error);
    this.llm.lastError = { kind, message: redactSecrets(text, this.secrets).slice(0, MAX_ERROR_TEXT) };
  }

  /** The summarizer, with every call's outcome recorded here. */
  watch(summarizer: Summarizer): Summarizer {
    return {
      provider: summarizer.provider,
      model: summarizer.model,
      contextWindow: summarizer.contextWindow,
      deterministic: summarizer.deterministic,
      summarize: async (request: SummarizeRequest, signal?: AbortSignal): Promise<SummarizeResult> => {
        try {
          const result = await summarizer.summarize(request, signal);
          this.llmSucceeded();
          return result;
        } catch (error) {
          this.llmFailed(error);
          throw error;
        }
      },
    };
  }

  heartbeat(): WorkerHeartbeat {
    return {
      id: this.id,
      hostname: this.hostname,
      pid: process.pid,
      startedAt: this.startedAt.toISOString(),
      beatAt: this.now().toISOString(),
      concurrency: this.concurrency,
      summarizer: { ...this.summarizer },
      jobs: { ...this.jobs, last: this.jobs.last && { ...this.jobs.last } },
      llm: { ...this.llm, lastError: this.llm.lastError && { ...this.llm.lastError } },
    };
  }
}
