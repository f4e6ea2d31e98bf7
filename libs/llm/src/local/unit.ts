/**
 * The units of the local summarizer: what extraction (`extract.ts`) finds in a span and ranking
 * (`rank.ts`) scores, and the normalized text both deduplicate on.
 */
import type { Fact } from './signals';
import type { Category } from './structure';

export type Source = 'user' | 'assistant' | 'system' | 'tool' | 'summary';
export type Form = 'prose' | 'line' | 'code' | 'command' | 'file';

/** A scored candidate for the summary. */
export interface Unit {
  text: string;
  /** Order of appearance in the input (later = more recent). */
  pos: number;
  source: Source;
  form: Form;
  category: Category;
  score: number;
  facts: Fact[];
  /** Normalized text for deduplication. */
  norm: string;
  /** The message it came from (-1 for records spanning messages, like files). */
  message: number;
}

export interface RawUnit {
  text: string;
  pos: number;
  /** Index of the message it came from. */
  message: number;
  /** Messages holding the same text (set when duplicates fold into the latest occurrence). */
  messages?: number[];
  source: Source;
  form: Form;
  /** Multiplies the source's weight (long pasted user documents weigh less than short instructions). */
  weight: number;
  bonus: number;
  hint?: Category;
  /** Facts set by the extractor (a command's outcome), instead of parsing the text. */
  facts?: Fact[];
  /** For commands: the verb attributed to files the output names when the command names none. */
  verb?: string;
  ownPaths?: string[];
  editLike?: boolean;
  /** From the human turn that states the request. */
  request?: boolean;
  /** Normalized text, set when the extraction finishes. */
  norm?: string;
  /** The request's most on-topic sentences: they state the goal. */
  lead?: boolean;
  /** A command whose outcome is unknown (its output was masked, or it printed nothing telling): the file ledger already says what it touched. */
  blind?: boolean;
}

export interface FileEntry {
  path: string;
  verbs: string[];
  messages: Set<number>;
  firstPos: number;
  lastPos: number;
  edited: boolean;
}

/** Lower-case text with whitespace collapsed and edge punctuation dropped, for deduplication ("unmatched ']'" and "unmatched ')'" stay apart). */
export function normForDedupe(text: string): string {
  const folded = /\s\s|[\t\n\r\f\v]/.test(text) ? text.replace(/\s+/g, ' ') : text;
  let start = 0;
  let end = folded.length;
  while (start < end && LEADING_EDGE.has(folded.charCodeAt(start))) start++;
  while (end > start && TRAILING_EDGE.has(folded.charCodeAt(end - 1))) end--;
  return folded.slice(start, end).toLowerCase();
}

const TRAILING_EDGE = new Set([...' .,;:!?'].map((c) => c.charCodeAt(0)));
const LEADING_EDGE = new Set([...' -*•>.,;:!?'].map((c) => c.charCodeAt(0)));
