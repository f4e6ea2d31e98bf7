import { formatInstant } from '../../lib/overview-format';
import { PRESET_CHOICES, type AuditEntry, type PresetView, type WorkerStatus } from './settings-schema';

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

/** The longest a key may live, in days (the API's limit). */
export const MAX_KEY_LIFETIME_DAYS = 3650;

/** The new-key form: a name of 1–100 characters, at least one known scope, and an optional lifetime in whole days (empty: never expires). */
export function parseNewKeyForm(name: unknown, scopes: unknown[], expiresInDays: unknown = ''): Parsed<{ name: string; scopes: ScopeChoice[]; expiresInDays?: number }> {
  const trimmed = typeof name === 'string' ? name.trim() : '';
  if (!trimmed) return { ok: false, field: 'name', message: 'Give the key a name.' };
  if (trimmed.length > 100) return { ok: false, field: 'name', message: 'The name can be at most 100 characters.' };
  const known = SCOPE_CHOICES.map((s) => s.value as string);
  const chosen = [...new Set(scopes.filter((s): s is ScopeChoice => typeof s === 'string' && known.includes(s)))];
  if (chosen.length === 0) return { ok: false, field: 'scopes', message: 'Choose at least one scope.' };
  const days = typeof expiresInDays === 'string' ? expiresInDays.trim() : '';
  if (days === '') return { ok: true, value: { name: trimmed, scopes: chosen } };
  const n = /^\d{1,5}$/.test(days) ? Number(days) : NaN;
  if (!(n >= 1 && n <= MAX_KEY_LIFETIME_DAYS)) {
    return { ok: false, field: 'expiresInDays', message: `Enter whole days from 1 to ${MAX_KEY_LIFETIME_DAYS}, or leave it empty for a key that never expires.` };
  }
  return { ok: true, value: { name: trimmed, scopes: chosen, expiresInDays: n } };
}

/** When a key expires or expired: `formatInstant`'s text, with the year when it is not the current one. */
export function expiryInstant(iso: string, now: number): string {
  const at = new Date(iso);
  const text = formatInstant(iso);
  if (Number.isNaN(at.getTime()) || at.getUTCFullYear() === new Date(now).getUTCFullYear()) return text;
  return text.replace(',', ` ${at.getUTCFullYear()},`);
}

/** The Status cell of a listed key: revoked, expired, or active (with when it expires). */
export function keyStatusText(key: { revokedAt?: string | null; expiresAt?: string | null }, now: number): string {
  const state = keyState(key, now);
  if (state === 'revoked') return `Revoked ${formatInstant(key.revokedAt!)}`;
  if (state === 'expired') return `Expired ${expiryInstant(key.expiresAt!, now)}`;
  return key.expiresAt ? `Active, expires ${expiryInstant(key.expiresAt, now)}` : 'Active';
}

/** A listed key's state: revoked wins over expired; an expired key is refused like a revoked one. */
export function keyState(key: { revokedAt?: string | null; expiresAt?: string | null }, now: number): 'active' | 'expired' | 'revoked' {
  if (key.revokedAt) return 'revoked';
  if (key.expiresAt && Date.parse(key.expiresAt) <= now) return 'expired';
  return 'active';
}

/** A pasted key: surrounding spaces dropped; inner whitespace or a huge value is a paste mistake. */
export function parseKeyInput(raw: unknown): Parsed<string> {
  const key = typeof raw === 'string' ? raw.trim() : '';
  if (!key) return { ok: false, field: 'apiKey', message: 'Enter an API key.' };
  if (key.length > 512 || /\s/.test(key)) return { ok: false, field: 'apiKey', message: 'That is not an API key: it has spaces or is too long.' };
  return { ok: true, value: key };
}

/** The PATCH /v1/tenant body the Tenant form asks for: an empty URL or timeout clears it (the environment's applies). */
export interface TenantPatch {
  proxy: { anthropicBaseUrl: string | null; openaiBaseUrl: string | null; timeoutMs: number | null };
  defaultPolicy?: PresetChoice | null;
}

type PresetChoice = (typeof PRESET_CHOICES)[number];
const isPresetChoice = (value: string): value is PresetChoice => (PRESET_CHOICES as readonly string[]).includes(value);

export type TenantFormProblems = Partial<Record<'proxy.anthropicBaseUrl' | 'proxy.openaiBaseUrl' | 'proxy.timeoutMs' | 'defaultPolicy', string>>;

/**
 * Reads the Tenant form. The default policy is sent only when the choice differs from the current
 * preset, so a default with overrides set over the API keeps them when only an upstream changes.
 */
export function parseTenantForm(get: (name: string) => unknown): { ok: true; value: TenantPatch } | { ok: false; problems: TenantFormProblems } {
  const problems: TenantFormProblems = {};
  const text = (name: string) => {
    const v = get(name);
    return typeof v === 'string' ? v.trim() : '';
  };
  const url = (name: 'anthropicBaseUrl' | 'openaiBaseUrl') => {
    const v = text(name);
    if (v === '') return null;
    let parsed: URL | undefined;
    try {
      parsed = new URL(v);
    } catch {
      parsed = undefined;
    }
    if (!parsed || !['http:', 'https:'].includes(parsed.protocol)) problems[`proxy.${name}`] = 'Enter an http(s) URL, or leave it empty for the default.';
    return v;
  };
  const anthropicBaseUrl = url('anthropicBaseUrl');
  const openaiBaseUrl = url('openaiBaseUrl');
  const timeoutText = text('timeoutMs');
  let timeoutMs: number | null = null;
  if (timeoutText !== '') {
    timeoutMs = /^\d{1,7}$/.test(timeoutText) ? Number(timeoutText) : NaN;
    if (!(timeoutMs >= 1000 && timeoutMs <= 3_600_000)) problems['proxy.timeoutMs'] = 'Enter whole milliseconds from 1000 to 3600000, or leave it empty for the default.';
  }
  const preset = text('defaultPolicy');
  const current = text('currentPolicy');
  if (preset !== '' && !isPresetChoice(preset)) problems.defaultPolicy = 'Choose one of the presets.';
  if (Object.keys(problems).length > 0) return { ok: false, problems };
  const value: TenantPatch = { proxy: { anthropicBaseUrl, openaiBaseUrl, timeoutMs } };
  // Here the choice is empty (null clears the default) or one of the presets.
  if (preset !== current) value.defaultPolicy = isPresetChoice(preset) ? preset : null;
  return { ok: true, value };
}

const ACTION_TEXT: Record<AuditEntry['action'], string> = {
  'api-key.created': 'API key created',
  'api-key.revoked': 'API key revoked',
  'snapshot.restored': 'Snapshot restored',
  'compaction.undone': 'Compaction undone',
  'session.deleted': 'Session deleted',
  'session.expired': 'Session expired (retention)',
  'session.updated': 'Session settings changed',
  'tenant.updated': 'Tenant settings changed',
};

const shown = (v: unknown) => (v === null || v === undefined ? 'default' : typeof v === 'object' && v !== null && 'preset' in v ? String((v as { preset: unknown }).preset) : String(v));

/** One line per audit entry: what was done, to what, and the detail that matters. */
export function describeAuditEntry(e: AuditEntry): { action: string; target: string; detail: string } {
  const d = e.data;
  let detail = '';
  if (e.action === 'tenant.updated' && d.changes && typeof d.changes === 'object') {
    detail = Object.entries(d.changes as Record<string, { from?: unknown; to?: unknown }>)
      .map(([field, c]) => `${field}: ${shown(c?.from)} → ${shown(c?.to)}`)
      .join('; ');
  } else if (e.action.startsWith('api-key.')) {
    detail = [typeof d.name === 'string' ? `“${d.name}”` : '', Array.isArray(d.scopes) ? d.scopes.join(', ') : ''].filter(Boolean).join(' ');
  } else if (e.action === 'session.updated') {
    detail = Object.keys(d).join(', ');
  } else if (e.action === 'session.expired') {
    detail = [typeof d.messages === 'number' ? `${d.messages} messages` : '', typeof d.retentionDays === 'number' ? `idle over ${d.retentionDays} days` : ''].filter(Boolean).join(', ');
  } else if (e.action === 'snapshot.restored' || e.action === 'compaction.undone') {
    detail = typeof d.restoredVersion === 'number' ? `version ${d.restoredVersion}` : '';
  }
  const target = e.targetType === 'api-key' && typeof d.prefix === 'string' ? `${d.prefix}…` : e.targetType === 'tenant' ? 'tenant' : e.targetId;
  return { action: ACTION_TEXT[e.action], target, detail };
}
