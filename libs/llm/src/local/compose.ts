/**
 * Composing a summary from scored units under a token budget: rank (score, then recency, then
 * position), skip near-duplicates, keep any one category from crowding out the others, and
 * render the chosen units in their original order inside their sections.
 */
import type { Unit } from './unit';
import type { Category, Section } from './structure';

export type CountTokens = (text: string) => number;

export interface ComposeOptions {
  sections: Section[];
  /** Whether every section heading is printed (the instructions asked for them) or only non-empty ones. */
  allSections: boolean;
  /** Printed under a section that got no item (only with allSections). */
  placeholder?: string;
  /** First line, e.g. `[SUMMARY]`. */
  prefix?: string;
  /** Categories chosen first, up to half the budget (merge: constraints and decisions). */
  first?: Category[];
  /** Largest share of the budget one category takes before every other had its turn. */
  categoryShare: number;
}

const MIN_SCORE = 1;
const SEED_ORDER: readonly Category[] = ['goal', 'constraint', 'decision', 'error', 'file', 'state', 'task', 'command'];

export function bullet(text: string): string {
  return `- ${text}`;
}

/** Ranked order: score, then the later unit, then position (deterministic). */
export function rank(units: Unit[]): Unit[] {
  return units
    .map((u, i) => ({ u, i }))
    .sort((a, b) => b.u.score - a.u.score || b.u.pos - a.u.pos || a.i - b.i)
    .map((x) => x.u);
}

function sectionIndex(sections: Section[]): Map<Category, number> {
  const map = new Map<Category, number>();
  sections.forEach((s, i) => s.categories.forEach((c) => map.set(c, i)));
  return map;
}

/** The chosen units, within `budget` tokens including headings and prefix. */
export function choose(units: Unit[], budget: number, count: CountTokens, options: ComposeOptions): Unit[] {
  const where = sectionIndex(options.sections);
  const headingCost = options.sections.map((s) => count(`${s.heading}\n`));
  const placeholderCost = options.placeholder ? count(`${bullet(options.placeholder)}\n`) : 0;
  let used = options.prefix ? count(`${options.prefix}\n`) : 0;
  if (options.allSections) used += headingCost.reduce((a, b) => a + b, 0) + placeholderCost * options.sections.length;
  const opened = new Set<number>();
  const perCategory = new Map<Category, number>();
  const chosen: Unit[] = [];
  const chosenSet = new Set<Unit>();
  const chosenNorms: string[] = [];
  const costs = new Map<Unit, number>();
  const ranked = rank(units);

  const tryAdd = (u: Unit, categoryCap: number): boolean => {
    // Filler is not worth its tokens: a unit below the floor is left out even when room is left.
    if (chosenSet.has(u) || u.score < MIN_SCORE) return false;
    const remaining = budget - used;
    if (remaining < 3) return false;
    // Cheap lower bound before counting: no unit packs more than ~6 characters per token on average.
    if (u.text.length / 6 > remaining + 2) return false;
    // A unit already said by a longer chosen one adds nothing.
    if (u.norm.length <= 400 && chosenNorms.some((n) => n.includes(u.norm))) return false;
    let cost = costs.get(u);
    if (cost === undefined) {
      cost = count(`${bullet(u.text)}\n`);
      costs.set(u, cost);
    }
    const section = where.get(u.category) ?? 0;
    const extra = options.allSections ? (opened.has(section) ? 0 : -placeholderCost) : opened.has(section) ? 0 : headingCost[section];
    if (cost + extra > remaining) return false;
    const catUsed = perCategory.get(u.category) ?? 0;
    if (catUsed + cost > categoryCap) return false;
    used += cost + extra;
    opened.add(section);
    perCategory.set(u.category, catUsed + cost);
    chosen.push(u);
    chosenSet.add(u);
    chosenNorms.push(u.norm);
    return true;
  };

  const pass = (candidates: Unit[], cap: (c: Category) => number) => {
    let misses = 0;
    for (const u of candidates) {
      if (budget - used < 3 || misses > 3_000) break;
      if (tryAdd(u, cap(u.category))) misses = 0;
      else misses++;
    }
  };
  // Seed: the best unit of each kind first (within a quarter of the budget each), so a small
  // budget still says what the goal is, what changed, what failed and where things stand.
  for (const category of SEED_ORDER) {
    let tries = 0;
    for (const u of ranked) {
      if (u.category !== category || u.score < MIN_SCORE) continue;
      if (tryAdd(u, budget / 4) || ++tries >= 20) break;
    }
  }
  if (options.first?.length) {
    const firstSet = new Set(options.first);
    pass(
      ranked.filter((u) => firstSet.has(u.category)),
      () => budget / 2,
    );
  }
  pass(ranked, () => budget * options.categoryShare);
  pass(ranked, () => Infinity);
  return chosen;
}

/** The summary text: prefix, then each section's heading and its units in original order. */
export function render(chosen: Unit[], options: ComposeOptions): string {
  const where = sectionIndex(options.sections);
  const bySection: Unit[][] = options.sections.map(() => []);
  for (const u of chosen) bySection[where.get(u.category) ?? 0].push(u);
  const lines: string[] = [];
  if (options.prefix) lines.push(options.prefix);
  options.sections.forEach((s, i) => {
    const items = bySection[i].sort((a, b) => a.pos - b.pos);
    if (items.length === 0 && !options.allSections) return;
    lines.push(s.heading);
    if (items.length === 0 && options.placeholder) lines.push(bullet(options.placeholder));
    for (const u of items) lines.push(bullet(u.text));
  });
  return lines.join('\n');
}

/** The longest prefix of `text` (cut at a word when possible) within `maxTokens`; binary search on length. */
export function truncateToTokens(text: string, maxTokens: number, count: CountTokens): string {
  if (maxTokens <= 0) return '';
  if (count(text) <= maxTokens) return text;
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (count(`${text.slice(0, mid)}…`) <= maxTokens) lo = mid;
    else hi = mid - 1;
  }
  if (lo === 0) {
    // Not even one character and the ellipsis: one character alone is one token or so.
    for (let n = Math.min(text.length, 4); n > 0; n--) if (count(text.slice(0, n)) <= maxTokens) return text.slice(0, n);
    // A character that costs more tokens than allowed (rare scripts, emoji): say that something was cut.
    return count('…') <= maxTokens ? '…' : '';
  }
  // Never split a surrogate pair.
  const end = /[\uD800-\uDBFF]/.test(text.charAt(lo - 1)) ? lo - 1 : lo;
  const cut = text.slice(0, end);
  const space = cut.lastIndexOf(' ');
  const trimmed = space > end * 0.7 ? cut.slice(0, space) : cut;
  return `${trimmed.trimEnd()}…`;
}
