import { LlmError, SummarizeRequest, SummarizeResult, Summarizer } from '@compactor/compaction';
import { workerHeartbeatSchema } from '@compactor/jobs';
import { jobOutcomeOf, WorkerActivity } from './worker-activity';

const SECRET = 'sk-live-abcdefghijklmnop1234';
const request = { kind: 'checkpoint', messages: [], targetTokens: 100 } as unknown as SummarizeRequest;
const answer: SummarizeResult = { text: 'summary', usage: { inputTokens: 10, outputTokens: 2, costUsd: 0 }, provider: 'openai', model: 'gpt-4o-mini', attempts: 1 };

function summarizerThat(outcomes: Array<Error | SummarizeResult>): Summarizer {
  return {
    provider: 'openai',
    model: 'gpt-4o-mini',
    contextWindow: 128_000,
    deterministic: false,
    summarize: async () => {
      const next = outcomes.shift();
      if (next instanceof Error) throw next;
      return next!;
    },
  };
}

describe('WorkerActivity', () => {
  let clock: number;
  const activity = () =>
    new WorkerActivity({ provider: 'openai', model: 'gpt-4o-mini', endpoint: 'https://api.openai.com/v1', keyConfigured: true, timeoutMs: 60_000 }, 4, [SECRET], () => new Date(clock));
  beforeEach(() => (clock = Date.parse('2026-11-23T10:00:00Z')));

  it('starts with no jobs and no LLM calls, in the shape the API reads', () => {
    const beat = activity().heartbeat();
    expect(workerHeartbeatSchema.parse(beat)).toEqual(beat);
    expect(beat).toMatchObject({ startedAt: '2026-11-23T10:00:00.000Z', concurrency: 4, jobs: { completed: 0, failed: 0, last: null }, llm: { calls: 0, errors: 0, lastError: null } });
    expect(beat.id).toContain(String(process.pid));
  });

  it('records the last job with the status its handler returned, or error when it threw', () => {
    const a = activity();
    a.jobCompleted('compact', { status: 'skipped' });
    clock += 1000;
    a.jobFailed('compact');
    expect(a.heartbeat().jobs).toEqual({ completed: 1, failed: 1, last: { name: 'compact', outcome: 'error', at: '2026-11-23T10:00:01.000Z' } });
    a.jobCompleted('expire-idempotency-records', { deleted: 3 });
    expect(a.heartbeat().jobs.last).toMatchObject({ name: 'expire-idempotency-records', outcome: 'completed' });
  });

  it('records summarizer successes and failures, passing both through, and never keeps a key', async () => {
    const a = activity();
    const watched = a.watch(summarizerThat([answer, new LlmError('auth', `HTTP 401 authentication failed for ${SECRET}`, 1, 401), new LlmError('aborted', 'aborted', 1)]));
    expect(watched.provider).toBe('openai');
    await expect(watched.summarize(request)).resolves.toBe(answer);
    clock += 5000;
    await expect(watched.summarize(request)).rejects.toThrow(LlmError);
    await expect(watched.summarize(request)).rejects.toThrow('aborted');
    const { llm } = a.heartbeat();
    expect(llm).toEqual({
      calls: 2,
      errors: 1,
      lastSuccessAt: '2026-11-23T10:00:00.000Z',
      lastErrorAt: '2026-11-23T10:00:05.000Z',
      lastError: { kind: 'auth', message: 'HTTP 401 authentication failed for [redacted]' },
    });
    expect(JSON.stringify(a.heartbeat())).not.toContain(SECRET);
  });

  it.each([
    [{ status: 'succeeded', versionId: 'v' }, 'succeeded'],
    [{ status: 42 }, 'completed'],
    [undefined, 'completed'],
    ['done', 'completed'],
  ])('reads the outcome of %p as %s', (result, outcome) => {
    expect(jobOutcomeOf(result)).toBe(outcome);
  });
});
