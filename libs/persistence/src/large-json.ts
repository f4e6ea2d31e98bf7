import { randomUUID } from 'node:crypto';

/** Strings at least this long (UTF-16 units) are sent to PostgreSQL once per message and escaped there (1 MB). */
export const LARGE_JSON_STRING = 1 << 20;

/**
 * A message's json columns as statement parameters. `text` is `JSON.stringify(value)` with each large string
 * replaced by a placeholder string; `strings[i]` is sent once, as plain text, and PostgreSQL puts
 * `to_json(strings[i])::text` where `"${tokens[i]}"` stands.
 */
export interface LargeStrings {
  tokens: string[];
  strings: string[];
}

/** The large strings of `values` (distinct by value), in order of appearance; empty for the usual message. */
export function largeStringsOf(values: unknown[]): string[] {
  const found = new Set<string>();
  const stack: unknown[] = [...values];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === 'string') {
      if (value.length >= LARGE_JSON_STRING) found.add(value);
    } else if (Array.isArray(value)) {
      for (const item of value) stack.push(item);
    } else if (typeof value === 'object' && value !== null) {
      for (const key of Object.keys(value)) stack.push((value as Record<string, unknown>)[key]);
    }
  }
  // PostgreSQL's to_json escapes a string as JSON.stringify does only for well-formed UTF-16 (the API refuses lone surrogates, and
  // text cannot hold U+0000): anything else keeps JSON.stringify's own text.
  return [...found].filter((s) => (s as unknown as { isWellFormed(): boolean }).isWellFormed() && !s.includes('\u0000'));
}

/** Placeholders for `strings`: `compactor-large-<uuid>`, none of which occurs in any of the strings. */
export function largeStringTokens(strings: string[]): LargeStrings | undefined {
  if (strings.length === 0) return undefined;
  const tokens = strings.map(() => `compactor-large-${randomUUID()}`);
  // A token inside a large string would be replaced there too (by a later replace); never with random UUIDs, but checked.
  if (strings.some((s) => tokens.some((t) => s.includes(t)))) return undefined;
  return { tokens, strings };
}

/**
 * `JSON.stringify(value)` with each of `large.strings` written as its token, or undefined when the token does not
 * appear exactly where the strings were (a token in the rest of the value: never with random UUIDs, but checked),
 * so that PostgreSQL's `replace` gives back `JSON.stringify(value)` byte for byte.
 */
export function skeletonJson(value: unknown, large: LargeStrings): string | undefined {
  const index = new Map(large.strings.map((s, i) => [s, i]));
  const replaced = large.tokens.map(() => 0);
  const text = JSON.stringify(value, (_key, item: unknown) => {
    if (typeof item === 'string' && item.length >= LARGE_JSON_STRING) {
      const i = index.get(item);
      if (i !== undefined) {
        replaced[i] += 1;
        return large.tokens[i];
      }
    }
    return item;
  });
  for (let i = 0; i < large.tokens.length; i += 1) {
    if (occurrences(text, `"${large.tokens[i]}"`) !== replaced[i]) return undefined;
  }
  return text;
}

function occurrences(text: string, part: string): number {
  let count = 0;
  for (let at = text.indexOf(part); at !== -1; at = text.indexOf(part, at + part.length)) count += 1;
  return count;
}

/**
 * The SQL expression of a json column whose text is `skeleton` (parameter `$skeleton`) with each token
 * (parameters `pairs[i][0]`) replaced by `to_json` of its string (parameters `pairs[i][1]`).
 */
export function largeJsonExpression(skeleton: string, pairs: Array<[string, string]>): string {
  return `${pairs.reduce((sql, [token, text]) => `replace(${sql}, '"' || ${token}::text || '"', to_json(${text}::text)::text)`, `${skeleton}::text`)}::json`;
}
