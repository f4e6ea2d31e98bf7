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
  const { lastSuccessAt, lastErrorAt, lastError } = beat.llm;
  const failedLast = lastErrorAt !== null && (lastSuccessAt === null || Date.parse(lastErrorAt) >= Date.parse(lastSuccessAt));
  if (failedLast) return { state: 'failing', detail: `Last call failed: ${lastError ? `${lastError.message} (${lastError.kind})` : 'unknown error'}.` };
  if (lastSuccessAt !== null) return { state: 'healthy', detail: 'Last call answered.' };
  return { state: 'unknown', detail: beat.summarizer.keyConfigured || beat.summarizer.provider === 'ollama' ? 'No call yet since the worker started.' : 'No call yet; no provider key is set.' };
}
