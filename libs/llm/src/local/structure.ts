/**
 * The shape of a local summary: the sections the instructions ask for (any list of title-case
 * headings: markdown, numbered, bulleted or bold), or, when they ask for none, a compact
 * bulleted summary grouped by category. Items are routed into sections by what they are.
 */

import { boldLabel, listedLabel, markdownHeading } from './line-scan';

/** What an extracted item is: it decides the section it lands in. */
export type Category = 'goal' | 'constraint' | 'decision' | 'file' | 'command' | 'error' | 'state' | 'task' | 'note';

export const CATEGORIES: readonly Category[] = ['goal', 'constraint', 'decision', 'file', 'command', 'error', 'state', 'task', 'note'];

export interface Section {
  /** The line that opens the section, e.g. `## Technical Context` or `Files:`. */
  heading: string;
  categories: Category[];
}

/** The compact format's groups, in order. */
export const COMPACT_GROUPS: readonly { label: string; categories: Category[] }[] = [
  { label: 'Goal/constraints', categories: ['goal', 'constraint'] },
  { label: 'Decisions', categories: ['decision'] },
  { label: 'Files', categories: ['file'] },
  { label: 'Commands', categories: ['command'] },
  { label: 'Errors', categories: ['error'] },
  { label: 'State/values', categories: ['state'] },
  { label: 'Open tasks', categories: ['task'] },
  { label: 'Notes', categories: ['note'] },
];

const SMALL_WORDS = new Set(['a', 'an', 'and', 'or', 'of', 'the', 'to', 'in', 'on', 'for', 'with', 'by', 'vs', 'at', '&', '/', '-', '+']);

/** "Technical Context", "Debugging & Issues", "Goal": every significant word capitalised, at most 6 words. */
function isTitleCase(text: string): boolean {
  const words = text.split(/\s+/).filter(Boolean);
  if (words.length === 0 || words.length > 6) return false;
  if (!/^[A-Z0-9]/.test(words[0])) return false;
  return words.every((w) => SMALL_WORDS.has(w.toLowerCase()) || /^[A-Z0-9(]/.test(w));
}

interface HeadingHit {
  style: string;
  title: string;
  line: number;
}

function headingOf(line: string): HeadingHit | null {
  const t = line.trim();
  const markdown = markdownHeading(t);
  if (markdown) {
    const title = markdown.title.replace(/\*\*/g, '').replace(/:$/, '').trim();
    return title.length <= 60 ? { style: markdown.hashes, title, line: 0 } : null;
  }
  // Bold, optionally bulleted or numbered: "**Key Decisions**: …", "1. **Goal**".
  const bold = boldLabel(t);
  if (bold !== undefined && isTitleCase(bold.replace(/:$/, '').trim())) return { style: 'bold', title: bold.replace(/:$/, '').trim(), line: 0 };
  // Numbered or bulleted title-case label, alone or followed by ":"/"—" and a description.
  const listed = listedLabel(t);
  if (listed && isTitleCase(listed.label.trim())) return { style: /\d/.test(listed.marker) ? 'number' : 'bullet', title: listed.label.trim(), line: 0 };
  return null;
}

/**
 * The section headings the instructions ask for: the largest group (≥ 3) of headings of one
 * style (same markdown level, numbered, bulleted or bold). Null when they ask for none.
 */
export function detectSections(instructions: string): string[] | null {
  const groups = new Map<string, HeadingHit[]>();
  const lines = instructions.split(/\r?\n/);
  // Headings inside a fence count too: a prompt often quotes its template in one.
  for (let i = 0; i < lines.length; i++) {
    const hit = headingOf(lines[i]);
    if (!hit) continue;
    hit.line = i;
    const list = groups.get(hit.style) ?? [];
    if (!list.some((h) => h.title.toLowerCase() === hit.title.toLowerCase())) list.push(hit);
    groups.set(hit.style, list);
  }
  let best: HeadingHit[] | null = null;
  for (const list of groups.values()) {
    if (list.length < 3 || list.length > 16) continue;
    if (!best || list.length > best.length || (list.length === best.length && list[0].line < best[0].line)) best = list;
  }
  return best ? best.map((h) => h.title) : null;
}

/** The category a heading names (first rule that matches), or null. */
export function categoryOfHeading(heading: string): Category | null {
  const h = heading.toLowerCase();
  if (/pending|next|todo|to-do|remaining|open (?:tasks?|items?|questions?)|follow|outstanding|unresolved|backlog/.test(h)) return 'task';
  if (/debug|issue|error|problem|bug|fail|blocker|incident/.test(h)) return 'error';
  if (/decision|rationale|choice|trade-?off/.test(h)) return 'decision';
  if (/preference|style|convention|constraint|requirement|rule|instruction|guideline/.test(h)) return 'constraint';
  if (/code|change|file|implementation|modif|artifact|edit/.test(h)) return 'file';
  if (/technical|environment|tool|setup|config|command|stack|infra|dependenc/.test(h)) return 'command';
  if (/status|state|progress|current|result|value|outcome|complete|finding|fact/.test(h)) return 'state';
  if (/overview|goal|objective|project|context|summary|background|request|task|purpose|scope/.test(h)) return 'goal';
  if (/note|other|misc/.test(h)) return 'note';
  return null;
}

/** Where a category goes when no heading names it, in order of preference. */
const FALLBACK: Record<Category, Category[]> = {
  goal: ['note', 'state', 'constraint', 'decision'],
  constraint: ['goal', 'decision', 'state', 'note'],
  decision: ['state', 'goal', 'constraint', 'note'],
  file: ['state', 'command', 'note', 'goal'],
  command: ['file', 'state', 'note', 'goal'],
  error: ['state', 'task', 'note', 'goal'],
  state: ['note', 'goal', 'task', 'decision'],
  task: ['state', 'note', 'goal'],
  note: ['state', 'goal', 'decision', 'file'],
};

/** The instructions' sections with every category routed to exactly one of them. */
export function routeSections(headings: string[]): Section[] {
  const sections: Section[] = headings.map((title) => ({ heading: `## ${title}`, categories: [] }));
  const owner = new Map<Category, number>();
  headings.forEach((title, i) => {
    const c = categoryOfHeading(title);
    if (c && !owner.has(c)) owner.set(c, i);
  });
  for (const c of CATEGORIES) {
    let index = owner.get(c);
    if (index === undefined) {
      for (const alt of FALLBACK[c]) {
        index = owner.get(alt);
        if (index !== undefined) break;
      }
    }
    sections[index ?? sections.length - 1].categories.push(c);
  }
  return sections;
}

export function compactSections(): Section[] {
  return COMPACT_GROUPS.map((g) => ({ heading: `${g.label}:`, categories: [...g.categories] }));
}

/** Instructions that ask for the `[SUMMARY]` marker (seed 000's format). */
export function wantsSummaryTag(instructions: string): boolean {
  return instructions.includes('[SUMMARY]');
}
