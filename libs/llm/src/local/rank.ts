/**
 * Ranking for the local summarizer: scores the units that extraction (`extract.ts`) found, marks
 * the request sentences that state the goal, scores one record per file, then drops superseded
 * facts, folds duplicates and spreads the scores over messages and commands.
 */
import { analyze, contentTerms, extractFacts, type Fact, GENERIC_TERMS, letterRatio, type Signals } from './signals';
import type { Category } from './structure';
import { type FileEntry, normForDedupe, type RawUnit, type Source, type Unit } from './unit';

export interface RankInput {
  /** Every unit extracted, duplicates included, in order of appearance. */
  raw: readonly RawUnit[];
  /** The units left once duplicates folded into their latest occurrence. */
  unique: RawUnit[];
  files: readonly FileEntry[];
  goal?: string;
  /** Positions handed out by the extraction (the span's length in units). */
  positions: number;
  merge: boolean;
}

/** Scored, deduplicated candidates from a span's extracted units; superseded facts are dropped (latest value wins). */
export function rankUnits(input: RankInput): Unit[] {
  const unique = input.unique;
  const goalTerms = new Set(contentTerms(input.goal ?? ''));
  const maxPos = Math.max(1, input.positions);
  const terms = unique.map((r) => [...new Set(contentTerms(r.text))]);
  const topical = topicality(unique, terms);
  // The goal: the request's most on-topic sentences, by the mean weight of their terms (what
  // the rest of the span keeps talking about, said densely), a second one only when close.
  const candidates = unique
    .map((r, i) => ({ r, t: terms[i].length >= 3 ? (topical[i] * Math.sqrt(terms[i].length)) / terms[i].length : 0 }))
    .filter((x) => x.r.request && x.r.form === 'prose' && !x.r.text.trimEnd().endsWith(':'));
  const onTopic = candidates.filter((x) => x.t > 0);
  if (onTopic.length > 0)
    onTopic
      .sort((a, b) => b.t - a.t || a.r.pos - b.r.pos)
      .slice(0, 2)
      .forEach((x, i, all) => {
        if (i === 0 || x.t >= 0.8 * all[0].t) x.r.lead = true;
      });
  else {
    // Too little of the session to tell what it keeps talking about: the request's first sentence states it (a title, an opening line).
    const first = candidates.filter((x) => x.r.text.length >= 20 && x.r.text.split(/\s+/).length >= 4).sort((a, b) => a.r.pos - b.r.pos)[0];
    if (first) first.r.lead = true;
  }
  // The agent's latest stated intentions are the open tasks; earlier ones were mostly carried out since.
  const assistantMessages = [...new Set(input.raw.filter((r) => r.source === 'assistant' && r.form === 'prose').map((r) => r.message))];
  const recent = new Set(assistantMessages.slice(-2));
  let lastAction: RawUnit | undefined;
  for (const r of input.raw) if (r.form === 'command' && (!lastAction || r.pos > lastAction.pos)) lastAction = r;
  if (lastAction) lastAction.bonus += 1.5;
  // A command on files whose outcome is unknown says no more than the files' records below (the latest action stays: it says where things stand).
  const redundant = (r: RawUnit) => r.blind === true && r !== lastAction && (r.ownPaths?.length ?? 0) > 0;
  const units: Unit[] = unique.flatMap((r, i) =>
    redundant(r)
      ? []
      : [scoreUnit(r, terms[i], topical[i], goalTerms, maxPos, input.merge, r.source === 'assistant' && r.form === 'prose' && recent.has(r.message))],
  );
  // Files: one record each, with what was done to it.
  for (const f of input.files) {
    const text = `${f.path}${f.verbs.length ? ` (${f.verbs.join(', ')})` : ''}`;
    const mentions = f.messages.size;
    let score = 1 + (f.edited ? 3 : 0) + (f.verbs.length > 0 ? 1 : 0) + Math.min(2.5, Math.log2(1 + mentions)) + 1.2 * (f.lastPos / maxPos);
    score += Math.min(3, overlap(contentTerms(f.path.replace(/[/._-]/g, ' ')), goalTerms)) * 1.2;
    // A file only mentioned, never acted on, is context at most.
    if (f.verbs.length === 0) score *= 0.5;
    units.push({ text, pos: f.lastPos, source: 'assistant', form: 'file', category: 'file', score, facts: [], norm: normForDedupe(text), message: -1 });
  }
  return diversify(dedupe(dropSuperseded(discountBoilerplate(units, input.raw))));
}

/** A sentence frame said this many times in one span, with other names in its slots, is boilerplate. */
const BOILERPLATE_REPEATS = 3;

/**
 * A unit's frame: its words lower-cased, with every token that names something (holds a digit,
 * `_`, `/`, `.`, `-`, a backtick, a quote, or a capital after its first letter) as one slot.
 * "I'll grep for callers of `a_b` first" and "I'll grep for callers of `c_d` first" share one.
 */
export function sentenceFrame(text: string): string {
  const words: string[] = [];
  for (const raw of text.split(/\s+/)) {
    if (!raw) continue;
    const token = trimPunctuation(raw);
    if (!token) continue;
    const slot = SLOT_CHARS.test(token) || (token.length > 1 && token.slice(1) !== token.slice(1).toLowerCase());
    const word = slot ? '#' : token.toLowerCase();
    if (word === '#' && words[words.length - 1] === '#') continue;
    words.push(word);
  }
  return words.join(' ');
}

const SLOT_CHARS = /[0-9_/.`'"\\-]/;
const EDGE_PUNCTUATION = new Set([...',;:!?()[]{}'].map((c) => c.charCodeAt(0)));

function trimPunctuation(token: string): string {
  let start = 0;
  let end = token.length;
  while (start < end && EDGE_PUNCTUATION.has(token.charCodeAt(start))) start++;
  while (end > start && (EDGE_PUNCTUATION.has(token.charCodeAt(end - 1)) || token.charCodeAt(end - 1) === 46)) end--;
  return token.slice(start, end);
}

/**
 * Redundancy is low information: prose whose frame recurs in the span (the agent's stock
 * narration, "Let me look at `x`", said again and again with another name) weighs less the more
 * often it recurs, so a statement said once is not crowded out by it. The user's constraints,
 * units carrying a setting's value, tool output, commands and file records keep their score.
 */
export function discountBoilerplate(units: Unit[], raw: readonly RawUnit[]): Unit[] {
  const frames = new Map<string, number>();
  const frameOf = new Map<string, string>();
  const frame = (text: string) => {
    let f = frameOf.get(text);
    if (f === undefined) {
      f = sentenceFrame(text);
      frameOf.set(text, f);
    }
    return f;
  };
  // Word trigrams of the frames, each counted once per sentence: the stock narration said again with other plain words
  // in one or two places shares most of them ("Now let me update the todo status and test the functionality:", "… and
  // integrate everything in the page.tsx:", claude-code-fe5e1c67).
  const grams = new Map<string, number>();
  const gramsOf = new Map<string, string[]>();
  const trigrams = (f: string) => {
    let g = gramsOf.get(f);
    if (g === undefined) {
      const words = f.split(' ');
      const set = new Set<string>();
      for (let i = 0; i + 2 < words.length; i++) set.add(`${words[i]} ${words[i + 1]} ${words[i + 2]}`);
      g = [...set];
      gramsOf.set(f, g);
    }
    return g;
  };
  const counted = new Set<string>();
  for (const r of raw) {
    if (r.form !== 'prose' || r.source === 'tool') continue;
    const f = frame(r.text);
    // Too short to be a frame of its own ("Done.", "Thanks.").
    if (f.split(' ').length < 4) continue;
    frames.set(f, (frames.get(f) ?? 0) + 1);
    // A sentence repeated word for word is one sentence for its trigrams (the frame count above has it).
    if (counted.has(r.text)) continue;
    counted.add(r.text);
    for (const g of trigrams(f)) grams.set(g, (grams.get(g) ?? 0) + 1);
  }
  return units.map((u) => {
    if (u.form !== 'prose' || u.source === 'tool' || u.facts.length > 0 || (u.category === 'constraint' && u.source === 'user')) return u;
    const f = frame(u.text);
    let n = frames.get(f) ?? 0;
    // Near repeats: most of its trigrams recur in other sentences; it counts as often as its median trigram recurs.
    const g = f.split(' ').length >= 6 ? trigrams(f).map((x) => grams.get(x) ?? 0) : [];
    if (g.length > 0 && g.filter((c) => c >= BOILERPLATE_REPEATS).length * 2 > g.length) n = Math.max(n, g.sort((a, b) => a - b)[g.length >> 1]);
    return n >= BOILERPLATE_REPEATS ? { ...u, score: u.score / (1 + Math.log2(n - 1)) } : u;
  });
}

/**
 * How much a unit is about what the span is about: the weights of its terms (a term weighs
 * more the more messages it recurs in, from three on, and nothing when it is in nearly all of
 * them, like boilerplate), normalized by the square root of their number.
 */
function topicality(raw: RawUnit[], terms: string[][]): number[] {
  // Document frequency by message: a term counts once per message it appears in.
  const df = new Map<string, { last: number; n: number }>();
  const allMessages = new Set<number>();
  raw.forEach((r, i) => {
    const from = r.messages ?? [r.message];
    for (const m of from) allMessages.add(m);
    for (const t of terms[i]) {
      const d = df.get(t);
      if (!d) df.set(t, { last: from[from.length - 1], n: from.length });
      else
        for (const m of from)
          if (m !== d.last) {
            d.n++;
            d.last = m;
          }
    }
  });
  const total = allMessages.size;
  if (total < 3) return raw.map(() => 0);
  const cap = Math.max(2, 0.6 * total);
  return terms.map((ts) => {
    if (ts.length === 0) return 0;
    let sum = 0;
    for (const t of ts) {
      const n = df.get(t)?.n ?? 0;
      if (n >= 3 && n <= cap && !GENERIC_TERMS.has(t)) sum += Math.log2(n) - 1;
    }
    return sum / Math.sqrt(ts.length);
  });
}

function overlap(terms: string[], goal: Set<string>): number {
  if (goal.size === 0) return 0;
  const seen = new Set<string>();
  for (const t of terms) if (goal.has(t)) seen.add(t);
  return seen.size;
}

const SOURCE_BASE: Record<Source, number> = { user: 1.5, assistant: 0.6, system: 0.6, tool: 0.2, summary: 1 };

function categorize(r: RawUnit, s: Signals, facts: Fact[], recentPlan: boolean): Category {
  if (r.form === 'command') return r.editLike ? 'file' : 'command';
  if (r.hint && r.hint !== 'note') return r.hint;
  if (r.lead) return 'goal';
  if (r.form !== 'code' && (s.errorStrong > 0 || (r.source === 'tool' && s.errorWeak > 0 && s.success === 0))) return 'error';
  if (s.constraint > 0 && r.source === 'user') return 'constraint';
  if (s.decision > 0 && r.source !== 'tool') return 'decision';
  if (recentPlan && s.done === 0 && (s.task > 0 || s.narration || s.constraint > 0)) return 'task';
  if (s.task > 0 && s.done === 0 && (r.source === 'user' || r.source === 'summary')) return 'task';
  if (s.testSummary > 0 || s.success > 0 || s.done > 0 || facts.length > 0 || s.unitNumbers > 0) return 'state';
  if (r.source === 'user') return 'goal';
  if (s.errorWeak > 0) return 'error';
  return r.hint ?? 'note';
}

function scoreUnit(r: RawUnit, terms: string[], topical: number, goalTerms: Set<string>, maxPos: number, merge: boolean, recentPlan: boolean): Unit {
  const s = analyze(r.text);
  const facts = r.facts ?? (r.form === 'code' ? [] : extractFacts(r.text));
  const category = categorize(r, s, facts, recentPlan);
  const user = r.source === 'user';
  const tool = r.source === 'tool';
  let score = SOURCE_BASE[r.source] * r.weight + r.bonus;
  score += Math.min(s.constraint, 2) * (user ? 2.5 * r.weight : r.source === 'summary' ? 1.5 : 0.6);
  score += Math.min(s.decision, 2) * (tool ? 0.4 : 2.5);
  score += Math.min(s.errorStrong, 2) * (r.form === 'code' ? 0.4 : 3);
  // In an instruction, "bug" or "fixed" names the task rather than reporting an outcome.
  score += Math.min(s.errorWeak, 3) * (user ? 0.15 : 0.5);
  score += Math.min(s.testSummary, 2) * 3 + Math.min(s.success, 2) * (user ? 0.2 : 0.6);
  score += Math.min(s.task, 2) * (tool ? 0.2 : 1.6);
  // Files are recorded once in the ledger; a tool line naming one adds little.
  score += Math.min(s.paths.length, 3) * (tool ? 0.4 : 1);
  score += Math.min(s.identifiers, 4) * 0.35;
  score += Math.min(s.unitNumbers, 3) * 0.8 + Math.min(s.numbers, 3) * 0.15;
  score += facts.length > 0 ? 1.5 : 0;
  score += Math.min(3, overlap(terms, goalTerms)) * 1.2;
  score += Math.min(2.5, topical * 0.6);
  if (r.form === 'command' && !r.blind) score += 1.5;
  // A command with no known outcome adds little to the file ledger's record of what it touched.
  if (r.blind) score *= 0.4;
  if (r.lead) score += 2.5;
  if (category === 'task' && recentPlan) score += 1;
  else if (s.narration && s.decision === 0 && s.constraint === 0) score -= 0.8;
  if (letterRatio(r.text) < 0.3) score *= 0.5;
  if (r.form === 'code') score *= r.request ? 0.8 : 0.45;
  // Fragments and lead-ins ("but I get the following error:") say little alone.
  if ((r.text.length < 12 || !/\S\s+\S/.test(r.text)) && s.errorStrong === 0 && s.testSummary === 0) score *= 0.3;
  if (r.form === 'prose' && r.text.trimEnd().endsWith(':')) score *= 0.6;
  if (merge && (category === 'constraint' || category === 'decision')) score += 3;
  // Later is more current.
  score += (tool ? 0.6 : 1.2) * (r.pos / maxPos);
  // Value per token: long units must earn their length.
  score /= Math.sqrt(Math.max(1, r.text.length / 160));
  // Pleasantries carry nothing, however much room is left.
  if (s.chatter && s.constraint + s.decision + s.errorStrong + s.task === 0 && facts.length === 0) score = 0;
  return { text: r.text, pos: r.pos, source: r.source, form: r.form, category, score, facts, norm: r.norm ?? normForDedupe(r.text), message: r.message };
}

/** Latest value wins: a unit whose every fact is restated later with another value is dropped; the restatement is boosted. */
export function dropSuperseded(units: Unit[]): Unit[] {
  const ordered = [...units].sort((a, b) => a.pos - b.pos);
  const latest = new Map<string, { value: string; pos: number }>();
  for (const u of ordered) for (const f of u.facts) latest.set(f.key, { value: f.value, pos: u.pos });
  const seen = new Map<string, Set<string>>();
  const out: Unit[] = [];
  for (const u of ordered) {
    let changed = false;
    for (const f of u.facts) {
      const values = seen.get(f.key) ?? new Set<string>();
      if (values.size > (values.has(f.value) ? 1 : 0)) changed = true;
      values.add(f.value);
      seen.set(f.key, values);
    }
    if (u.facts.length === 0 || u.category === 'error') {
      out.push(u);
      continue;
    }
    const stale = u.facts.every((f) => {
      const l = latest.get(f.key);
      return l !== undefined && l.pos > u.pos && l.value !== f.value;
    });
    if (stale) continue;
    out.push(changed ? { ...u, score: u.score + 2, category: u.category === 'note' || u.category === 'goal' ? 'state' : u.category } : u);
  }
  return out;
}

/** Diminishing returns per message (and per command verb): its second-best unit counts a little less, the next less again (floor one half). */
export function diversify(units: Unit[]): Unit[] {
  // Commands group by their verb (twenty `curl` calls are one kind of thing), other units by message.
  const groupOf = (u: Unit) => (u.form === 'command' ? `$${u.text.replace(/^\$\s*/, '').split(/[\s:]/)[0]}` : u.message < 0 ? null : `m${u.message}`);
  const groups = new Map<string, Unit[]>();
  for (const u of units) {
    const g = groupOf(u);
    if (g === null) continue;
    const list = groups.get(g) ?? [];
    list.push(u);
    groups.set(g, list);
  }
  const factor = new Map<Unit, number>();
  for (const list of groups.values()) {
    list
      .slice()
      .sort((a, b) => b.score - a.score || a.pos - b.pos)
      .forEach((u, i) => factor.set(u, Math.max(0.5, 0.92 ** i)));
  }
  return units.map((u) => (factor.has(u) ? { ...u, score: u.score * (factor.get(u) ?? 1) } : u));
}

/** Exact duplicates (normalized) keep one unit: the latest position, the highest score. */
export function dedupe(units: Unit[]): Unit[] {
  const best = new Map<string, Unit>();
  for (const u of units) {
    if (!u.norm) continue;
    const prev = best.get(u.norm);
    if (!prev) best.set(u.norm, u);
    else best.set(u.norm, { ...(u.pos > prev.pos ? u : prev), score: Math.max(u.score, prev.score) });
  }
  return [...best.values()].sort((a, b) => a.pos - b.pos);
}
