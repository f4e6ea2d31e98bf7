import type { TenantSettings } from './settings-schema';

/** The tenant limits (PATCH /v1/tenant `limits`): rate limits, summarizer spend caps, session retention. */
export type LimitName = keyof TenantSettings['limits'];
export type LimitField = `limits.${LimitName}`;
export type LimitsPatch = Partial<Record<LimitName, number | null>>;
export type LimitsFormProblems = Partial<Record<LimitField, string>>;

interface LimitMeta {
  name: LimitName;
  label: string;
  /** The value with its unit: `600 requests per minute`. */
  show: (value: number) => string;
  /** What 0 means for it, when not plainly "no limit". */
  zero?: string;
  /** The API's range of a set value (0 = no limit is always allowed); the API checks it. */
  range: string;
  integer: boolean;
}

const whole = (n: number) => n.toLocaleString('en-US');
const usd = (n: number) => `$${n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;

export const LIMITS: readonly LimitMeta[] = [
  { name: 'requestsPerMinutePerKey', label: 'Requests per minute, each key', show: (n) => `${whole(n)} requests per minute`, range: '1–1,000,000', integer: true },
  { name: 'requestsPerMinute', label: 'Requests per minute, all keys', show: (n) => `${whole(n)} requests per minute`, range: '1–10,000,000', integer: true },
  { name: 'appendedTokensPerMinute', label: 'Appended tokens per minute', show: (n) => `${whole(n)} tokens per minute`, range: '1,000–1,000,000,000', integer: true },
  { name: 'summarizerTokensPerDay', label: 'Summarizer tokens per day', show: (n) => `${whole(n)} tokens per UTC day`, range: '1,000–10,000,000,000', integer: true },
  { name: 'summarizerCostPerDayUsd', label: 'Summarizer cost per day (USD)', show: (n) => `${usd(n)} per UTC day`, range: '0.01–1,000,000', integer: false },
  { name: 'sessionRetentionDays', label: 'Session retention (days)', show: (n) => `sessions idle over ${whole(n)} day${n === 1 ? '' : 's'} are deleted`, zero: 'sessions are kept', range: '1–36,500', integer: true },
];

export interface LimitInForce {
  name: LimitName;
  label: string;
  /** The value that applies: the tenant's own, else the operator's default; 0 = no limit. */
  value: number;
  source: 'tenant' | 'default';
  /** `No limit`, or the value with its unit. */
  text: string;
  /** The tenant's own value as the form shows it ('' = the default). */
  own: string;
  /** What an empty field means: the operator's default. */
  defaultText: string;
  range: string;
  /** What the tenant used today against a daily cap, when the API reports it. */
  usedToday?: string;
}

/** `No limit` (or what 0 means for it), else the value with its unit; lower case inside a sentence. */
function describe(meta: LimitMeta, value: number, inSentence = false): string {
  if (value !== 0) return meta.show(value);
  const zero = meta.zero ?? 'no limit';
  return inSentence ? zero : zero.charAt(0).toUpperCase() + zero.slice(1);
}

/** Each limit in force for the tenant, labelled with where its value comes from. */
export function limitsInForce(tenant: Pick<TenantSettings, 'limits' | 'limitDefaults' | 'spendToday'>): LimitInForce[] {
  return LIMITS.map((meta) => {
    const own = tenant.limits[meta.name];
    const fallback = tenant.limitDefaults[meta.name];
    const value = own ?? fallback;
    const usedToday =
      meta.name === 'summarizerTokensPerDay' ? `${whole(tenant.spendToday.summarizerTokens)} tokens` : meta.name === 'summarizerCostPerDayUsd' ? usd(tenant.spendToday.summarizerCostUsd) : undefined;
    return {
      name: meta.name,
      label: meta.label,
      value,
      source: own === null ? 'default' : 'tenant',
      text: describe(meta, value),
      own: own === null ? '' : String(own),
      defaultText: describe(meta, fallback, true),
      range: meta.range,
      ...(usedToday !== undefined ? { usedToday } : {}),
    };
  });
}

/** Digits with an optional decimal part, after spaces, commas and underscores are taken out (a linear check). */
function numberOf(text: string): number | undefined {
  let digits = '';
  for (const ch of text) if (ch !== ',' && ch !== '_' && ch !== ' ') digits += ch;
  const dot = digits.indexOf('.');
  const intPart = dot < 0 ? digits : digits.slice(0, dot);
  const fraction = dot < 0 ? '' : digits.slice(dot + 1);
  const allDigits = (s: string) => [...s].every((c) => c >= '0' && c <= '9');
  if (intPart === '' || !allDigits(intPart) || !allDigits(fraction) || (dot >= 0 && fraction === '')) return undefined;
  return Number(digits);
}

/**
 * Reads the Limits form: each field next to a hidden `current-<name>` holding the tenant's own value
 * when the page was drawn; only fields that changed are sent (empty = the operator's default, sent as
 * null; 0 = no limit). Ranges are the API's to check (its 400 names the field).
 */
export function parseLimitsForm(get: (name: string) => unknown): { ok: true; value: LimitsPatch } | { ok: false; problems: LimitsFormProblems } {
  const text = (name: string) => {
    const v = get(name);
    return typeof v === 'string' ? v.trim() : '';
  };
  const value: LimitsPatch = {};
  const problems: LimitsFormProblems = {};
  for (const meta of LIMITS) {
    const entered = text(`limit-${meta.name}`);
    const current = text(`current-${meta.name}`);
    if (entered === current) continue;
    if (entered === '') {
      value[meta.name] = null;
      continue;
    }
    const n = numberOf(entered);
    if (n === undefined || (meta.integer && !Number.isInteger(n))) {
      problems[`limits.${meta.name}`] = `Enter ${meta.integer ? 'a whole number' : 'a number'}: 0 for no limit, ${meta.range}, or leave it empty for the default.`;
      continue;
    }
    if (current !== '' && numberOf(current) === n) continue; // the same value written differently
    value[meta.name] = n;
  }
  if (Object.keys(problems).length > 0) return { ok: false, problems };
  return { ok: true, value };
}
