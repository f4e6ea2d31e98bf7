import type { PresetView, WorkerStatus } from './settings-schema';

/** What each preset does, in a line (SPEC.md "Policies"); the triggers come from the API. */
export const PRESET_DESCRIPTIONS: Record<PresetView['name'], { source: string; summary: string }> = {
  balanced: {
    source: 'all seeds',
    summary: 'Cheap steps first: post-process and offload large results at ingest, mask old tool outputs, then summarize the oldest span into a checkpoint only if still over 60%.',
  },
  factor3: { source: 'seed 000', summary: 'Summarizes everything but the latest 3 messages into one [SUMMARY] message; trims web, file, database and API results at ingest.' },
  watermark: { source: 'seed 001', summary: 'A checkpoint tool call marks a watermark; tool calls and results before it are removed, conversation text stays.' },
  'two-layer': { source: 'seed 002', summary: 'Chunks and summarizes huge tool results at ingest; past the trigger, compresses every result over 5,000 characters to ~10%.' },
  'offload-compact': { source: 'seed 003', summary: 'Offloads tool results to artifacts first; compacts with the eight-section prompt only if that frees too little.' },
  'checkpoint-aging': { source: 'seed 004', summary: 'Goal-aware checkpoints that age recent → old → ancient → ultra as new ones arrive; goals and locked decisions never compressed.' },
};

export function triggerText(trigger: PresetView['trigger']): string {
  const percent = `${Math.round(trigger.fraction * 100)}%`;
  return trigger.base === 'available' ? `${percent} of the available budget` : `${percent} of the budget`;
}

export interface ProviderSummary {
  state: 'healthy' | 'failing' | 'unknown' | 'no-workers';
  /** `local`, `openai gpt-4o-mini`, or several joined with ` + ` when workers differ. */
  providers: string;
  text: string;
}

const describe = (w: WorkerStatus) => (w.summarizer.provider === 'local' ? 'local' : `${w.summarizer.provider} ${w.summarizer.model}`);

/** One line over every live worker: which summarizer they use and whether it answers (the worst state wins). */
export function providerSummary(workers: WorkerStatus[]): ProviderSummary {
  if (workers.length === 0) {
    return { state: 'no-workers', providers: 'none', text: 'No worker is running: compactions wait in the queue until one starts.' };
  }
  const providers = [...new Set(workers.map(describe))].join(' + ');
  const failing = workers.filter((w) => w.summarizer.health === 'failing').length;
  const unknown = workers.filter((w) => w.summarizer.health === 'unknown').length;
  const count = `${workers.length} worker${workers.length === 1 ? '' : 's'}`;
  if (failing > 0) return { state: 'failing', providers, text: `${count}; the summarizer's last call failed on ${failing}.` };
  if (unknown > 0) return { state: 'unknown', providers, text: `${count}; no summarizer call yet on ${unknown}.` };
  return { state: 'healthy', providers, text: `${count}; the summarizer answers.` };
}

export const SCOPE_CHOICES = [
  { value: 'ingest', label: 'ingest', hint: 'append and read its sessions' },
  { value: 'read', label: 'read', hint: 'read only' },
  { value: 'admin', label: 'admin', hint: 'keys, settings, deletes' },
] as const;
export type ScopeChoice = (typeof SCOPE_CHOICES)[number]['value'];

export type Parsed<T> = { ok: true; value: T } | { ok: false; field: string; message: string };

/** The new-key form: a name of 1–100 characters and at least one known scope. */
export function parseNewKeyForm(name: unknown, scopes: unknown[]): Parsed<{ name: string; scopes: ScopeChoice[] }> {
  const trimmed = typeof name === 'string' ? name.trim() : '';
  if (!trimmed) return { ok: false, field: 'name', message: 'Give the key a name.' };
  if (trimmed.length > 100) return { ok: false, field: 'name', message: 'The name can be at most 100 characters.' };
  const known = SCOPE_CHOICES.map((s) => s.value as string);
  const chosen = [...new Set(scopes.filter((s): s is ScopeChoice => typeof s === 'string' && known.includes(s)))];
  if (chosen.length === 0) return { ok: false, field: 'scopes', message: 'Choose at least one scope.' };
  return { ok: true, value: { name: trimmed, scopes: chosen } };
}

/** A pasted key: surrounding spaces dropped; inner whitespace or a huge value is a paste mistake. */
export function parseKeyInput(raw: unknown): Parsed<string> {
  const key = typeof raw === 'string' ? raw.trim() : '';
  if (!key) return { ok: false, field: 'apiKey', message: 'Enter an API key.' };
  if (key.length > 512 || /\s/.test(key)) return { ok: false, field: 'apiKey', message: 'That is not an API key: it has spaces or is too long.' };
  return { ok: true, value: key };
}
