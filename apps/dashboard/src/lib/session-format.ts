/** Number and time formatting shared by the Sessions and Session pages. Pure; the locale is fixed so server and tests agree. */
import { formatInstant } from './overview-format';

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

/** 12,676 */
export function formatTokens(n: number): string {
  return integer.format(Math.round(n));
}

/** 0.554 → "55%"; values over 1 stay over 100% (a context over its budget). */
export function formatPercent(ratio: number): string {
  return `${integer.format(Math.round(ratio * 100))}%`;
}

/** A factor in [0, 1] with two decimals: 0.85 → "0.85". */
export function formatFactor(n: number): string {
  return n.toFixed(2);
}

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['year', 365 * 24 * 3600],
  ['month', 30 * 24 * 3600],
  ['week', 7 * 24 * 3600],
  ['day', 24 * 3600],
  ['hour', 3600],
  ['minute', 60],
];
const relative = new Intl.RelativeTimeFormat('en-US', { numeric: 'auto' });

/** "3 minutes ago", "yesterday", "just now" — `now` is passed in so the output is deterministic. */
export function formatRelative(iso: string, now: Date): string {
  const seconds = Math.round((new Date(iso).getTime() - now.getTime()) / 1000);
  if (!Number.isFinite(seconds)) return 'unknown';
  if (Math.abs(seconds) < 45) return 'just now';
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size) return relative.format(Math.round(seconds / size), unit);
  }
  return relative.format(Math.round(seconds / 60), 'minute');
}

/** "2026-11-23 14:25:03 UTC": absolute, unambiguous, the same on every machine. */
export function formatTimestamp(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** "14:25:03" (UTC), for dense lists such as events. */
export function formatClock(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toISOString().slice(11, 19);
}

/**
 * The session page's line for a compaction hold an LLM outage set (issue #15), or null for no hold or another reason
 * (the budget line already shows a token hold): `automatic compaction held: LLM outage since Nov 23, 14:05 UTC`.
 */
export function compactionHoldLine(hold: { reason: string; since: string | null } | null | undefined): string | null {
  if (!hold || hold.reason !== 'llm-outage') return null;
  return `automatic compaction held: LLM outage${hold.since ? ` since ${formatInstant(hold.since)}` : ''}`;
}
