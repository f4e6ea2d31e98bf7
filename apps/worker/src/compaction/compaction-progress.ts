import { Injectable } from '@nestjs/common';
import { SummarizeRequest, SummarizeResult, Summarizer } from '@compactor/compaction';
import { EventPublisher } from '@compactor/jobs';
import { EventRepository, NewEvent } from '@compactor/persistence';

const fmt = (n: number) => n.toLocaleString('en-US');

export interface RunStart {
  sessionId: string;
  tenantId: string;
  jobId: string;
  trigger: string;
  preset: string;
  fromSeq: number;
  throughSeq: number;
  tokens: number;
}

/**
 * The events of a compaction run, so a client watching the session's SSE stream sees it live:
 * `compaction-started` once the run's range is loaded, one `compaction-progress` line when the
 * first summary is requested (the slow step), then the outcome's own events (recorded here, or
 * by the commit's transaction). Every write is followed by a wake-up on the event bus, sent
 * after the write committed.
 */
@Injectable()
export class CompactionProgress {
  constructor(
    private readonly events: EventRepository,
    private readonly publisher: EventPublisher,
  ) {}

  /** Records the events in one statement, then wakes the session's streams. */
  async record(sessionId: string, tenantId: string, events: NewEvent[]): Promise<void> {
    const rows = await this.events.recordMany(sessionId, tenantId, events);
    if (rows.length > 0) this.publisher.notify(sessionId, rows[rows.length - 1].id);
  }

  started(run: RunStart): Promise<void> {
    const range = run.fromSeq > 0 ? `messages ${run.fromSeq}–${run.throughSeq}` : 'no messages';
    return this.record(run.sessionId, run.tenantId, [
      {
        type: 'compaction-started',
        line: `Compaction started (${run.trigger}, ${run.preset}): ${range}, ${fmt(run.tokens)} tokens`,
        data: { jobId: run.jobId, trigger: run.trigger, preset: run.preset, fromSeq: run.fromSeq, throughSeq: run.throughSeq, tokens: run.tokens },
      },
    ]);
  }

  /** The commit's transaction recorded the outcome's events: wake the streams. */
  committed(sessionId: string): void {
    this.publisher.notify(sessionId);
  }

  /** The summarizer, with a progress line recorded before the run's first summary request. */
  announcing(summarizer: Summarizer, run: { sessionId: string; tenantId: string; jobId: string }): Summarizer {
    let announced = false;
    const announce = (request: SummarizeRequest) => {
      announced = true;
      const what = request.kind === 'checkpoint' ? 'a checkpoint' : request.kind === 'tool-result' ? 'a compressed tool result' : request.kind === 'merge' ? 'a merged summary' : 'a chunk summary';
      const by = summarizer.provider === 'local' ? 'the local summarizer' : `${summarizer.provider} ${summarizer.model}`;
      return this.record(run.sessionId, run.tenantId, [
        {
          type: 'compaction-progress',
          line: `Summarizing ${request.messages.length} message${request.messages.length === 1 ? '' : 's'} into ${what} of ~${fmt(request.targetTokens)} tokens (${by})`,
          data: { jobId: run.jobId, step: 'summarize', kind: request.kind, provider: summarizer.provider, model: summarizer.model },
        },
      ]);
    };
    return {
      provider: summarizer.provider,
      model: summarizer.model,
      contextWindow: summarizer.contextWindow,
      deterministic: summarizer.deterministic,
      async summarize(request: SummarizeRequest, signal?: AbortSignal): Promise<SummarizeResult> {
        if (!announced) await announce(request);
        return summarizer.summarize(request, signal);
      },
    };
  }
}
