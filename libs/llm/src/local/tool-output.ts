/**
 * `tool-result` summaries: one tool output condensed to its target by keeping whole lines —
 * errors, test and result summaries, paths, key/value lines, the head and the tail — in their
 * original order, with `…` where lines were left out.
 */
import type { CountTokens } from './compose';
import { isNoiseLine, truncateChars } from './extract';
import { analyze, extractFacts, letterRatio } from './signals';

interface Line {
  index: number;
  text: string;
  score: number;
  cost?: number;
}

const CODE_LISTING = /^\s*\d+(?:[:|]|\t)/;

function lineScore(text: string, index: number, first: number, last: number, isError: boolean): number {
  const s = analyze(text);
  let score = 0.2;
  score += Math.min(s.errorStrong, 2) * 4 + Math.min(s.errorWeak, 3) * 0.8;
  score += Math.min(s.testSummary, 2) * 4 + Math.min(s.success, 2) * 0.5;
  score += Math.min(s.paths.length, 3) * 1.2;
  score += Math.min(s.identifiers, 4) * 0.2;
  score += Math.min(s.unitNumbers, 3) * 0.5 + Math.min(s.numbers, 3) * 0.1;
  score += Math.min(s.decision + s.constraint + s.task, 3) * 0.4;
  if (!CODE_LISTING.test(text) && extractFacts(text).length > 0) score += 1.5;
  const fromStart = index - first;
  const fromEnd = last - index;
  if (fromStart < 3) score += 3 - fromStart * 0.8;
  if (fromEnd < 3) score += 2.5 - fromEnd * 0.6;
  if (isError) score += 0.5;
  if (CODE_LISTING.test(text)) score *= 0.6;
  if (letterRatio(text) < 0.3) score *= 0.5;
  return score / Math.sqrt(Math.max(1, text.length / 100));
}

/** The condensed output, within `budget` tokens. */
export function condenseToolOutput(text: string, isError: boolean, budget: number, count: CountTokens, maxLineChars = 240): string {
  const raw = text.replace(/\r\n?/g, '\n').split('\n');
  const kept: Line[] = [];
  // Repeated lines (progress bars, retries, one test per line) keep their last occurrence and a count; digits do not make a line new.
  const lastOf = new Map<string, number>();
  const repeats = new Map<string, number>();
  const keyOf = (l: string) => l.trim().toLowerCase().replace(/\d+/g, '#').replace(/\s+/g, ' ');
  raw.forEach((l, i) => {
    if (isNoiseLine(l)) return;
    const key = keyOf(l);
    lastOf.set(key, i);
    repeats.set(key, (repeats.get(key) ?? 0) + 1);
  });
  const indices = [...lastOf.values()].sort((a, b) => a - b);
  if (indices.length === 0) return '';
  const first = indices[0];
  const last = indices[indices.length - 1];
  for (const i of indices) {
    // Indentation is kept up to two spaces: tracebacks and listings stay readable.
    const line = raw[i].trimEnd().replace(/^(\s{2})\s+/, '$1').replace(/\t/g, ' ');
    const times = repeats.get(keyOf(raw[i])) ?? 1;
    const text = truncateChars(line, maxLineChars) + (times > 1 ? ` [×${times}]` : '');
    kept.push({ index: i, text, score: lineScore(line, i, first, last, isError) });
  }
  const ranked = [...kept].sort((a, b) => b.score - a.score || a.index - b.index);
  const header = (n: number) => `[${n} of ${kept.length} lines kept]`;
  const withHeader = budget >= 60 && kept.length > 8;
  let used = withHeader ? count(`${header(kept.length)}\n`) : 0;
  const chosen = new Set<Line>();
  let misses = 0;
  for (const l of ranked) {
    const remaining = budget - used;
    if (remaining < 2 || misses > 3_000) break;
    if (l.text.length / 6 > remaining + 2) {
      misses++;
      continue;
    }
    // A gap marker may be needed on either side: charge one line for it.
    l.cost = count(`${l.text}\n`) + 1;
    if (l.cost <= remaining) {
      chosen.add(l);
      used += l.cost;
      misses = 0;
    } else misses++;
  }
  const lines: string[] = [];
  if (withHeader && chosen.size < kept.length) lines.push(header(chosen.size));
  // "…" wherever kept lines were left out between, before or after the chosen ones.
  let previous = -1;
  kept.forEach((l, k) => {
    if (!chosen.has(l)) return;
    if (k !== previous + 1) lines.push('…');
    lines.push(l.text);
    previous = k;
  });
  if (previous >= 0 && previous !== kept.length - 1) lines.push('…');
  return lines.join('\n');
}
