import type { WorkerHeartbeat } from '@compactor/jobs';

export type SummarizerHealthState = 'healthy' | 'failing' | 'unknown';

export interface SummarizerHealth {
  state: SummarizerHealthState;
  /** One line a person can act on. */
  detail: string;
}

/**
 * Whether a worker's summarizer answers, from its heartbeat: `local` needs no model and is always
 * healthy; a remote provider is failing when its latest call failed (after the provider's own
 * retries), healthy when its latest call answered, and unknown before any call.
 */
export function summarizerHealth(beat: Pick<WorkerHeartbeat, 'summarizer' | 'llm'>): SummarizerHealth {
  if (beat.summarizer.provider === 'local') return { state: 'healthy', detail: 'Offline summarizer: needs no model or network.' };
  const { lastSuccessAt, lastErrorAt, lastError, probe } = beat.llm;
  const failedLast = lastErrorAt !== null && (lastSuccessAt === null || Date.parse(lastErrorAt) >= Date.parse(lastSuccessAt));
  // A probe of the list-models endpoint newer than the last call (the sweep probes while an LLM outage holds compactions).
  const newest = Math.max(lastErrorAt ? Date.parse(lastErrorAt) : 0, lastSuccessAt ? Date.parse(lastSuccessAt) : 0);
  if (probe && probe.state !== 'unknown' && Date.parse(probe.at) > newest) {
    return probe.state === 'up'
      ? { state: 'healthy', detail: `Answered a probe of its models endpoint at ${probe.at}${failedLast ? ` (last call failed: ${lastError?.kind ?? 'unknown error'})` : ''}.` }
      : { state: 'failing', detail: `Did not answer a probe of its models endpoint at ${probe.at}.` };
  }
  if (failedLast) return { state: 'failing', detail: `Last call failed: ${lastError ? `${lastError.message} (${lastError.kind})` : 'unknown error'}.` };
  if (lastSuccessAt !== null) return { state: 'healthy', detail: 'Last call answered.' };
  return { state: 'unknown', detail: beat.summarizer.keyConfigured || beat.summarizer.provider === 'ollama' ? 'No call yet since the worker started.' : 'No call yet; no provider key is set.' };
}
