import { LedgerEntry, ledgerOfText } from './ledger';
import { entryText, rankEntries } from './render';

/** At most this many characters of keys in one placeholder: a masked output stays a one-liner plus one line of keys. */
export const MAX_KEY_CHARS = 320;
/**
 * Paths are listed only when an output names a few: a directory listing's hundred names are not keys. A path the agent
 * created, edited or deleted is listed whatever their number: it is what the work changed (claude-code-fe5e1c67's note on
 * its dropped steps named no path, CLAUDE.md's creation among them, because they named more than six).
 */
const MAX_PATHS = 6;
const changed = (e: LedgerEntry) => e.state === 'created' || e.state === 'edited' || e.state === 'deleted';

/**
 * The facts-ledger keys of a tool output, for the placeholder that replaces it (SPEC.md "Facts
 * ledger"): settings and versions with their value, test results, URLs, hashes and ticket ids,
 * commands, and the paths of an output that names only a few; highest weight first, within
 * `MAX_KEY_CHARS`. Error lines are listed by the placeholder itself; `paths: false` leaves the
 * paths to a placeholder that lists them already (an offload digest).
 */
export function placeholderKeys(text: string, options: { paths?: boolean } = {}): string | undefined {
  return placeholderKeysOf(ledgerOfText(text), options);
}

/** `placeholderKeys` of a ledger's entries (a ledger kept message by message, say). */
export function placeholderKeysOf(all: readonly LedgerEntry[], options: { paths?: boolean } = {}): string | undefined {
  return keysWithin(rankedKeys(all, options), MAX_KEY_CHARS);
}

/** Ranked keys (rankedKeys) joined as a placeholder lists them, highest weight first, within `maxChars`. */
export function keysWithin(ranked: readonly string[], maxChars: number): string | undefined {
  const out: string[] = [];
  let used = 0;
  for (const t of ranked) {
    if (used + t.length + 2 > maxChars) continue;
    out.push(t);
    used += t.length + 2;
  }
  return out.length ? out.join('; ') : undefined;
}

/** The keys a placeholder would list, highest weight first, without its length cap (the caller bounds them). */
export function rankedKeys(all: readonly LedgerEntry[], options: { paths?: boolean } = {}): string[] {
  const entries = all.filter((e) => e.kind !== 'error' && e.kind !== 'constraint' && (options.paths !== false || e.kind !== 'path'));
  const paths = entries.filter((e) => e.kind === 'path').length;
  const ranked = rankEntries(entries.map((e) => (e.kind === 'path' || e.kind === 'identifier' ? { ...e, weight: Math.max(e.weight, 0.5) } : e))).filter(
    (e) => e.kind !== 'path' || paths <= MAX_PATHS || changed(e),
  );
  // A name that a listed qualified name ends with names the same member and says nothing more (`pixel_array` beside
  // `Dataset.pixel_array` in pydicom-1458__gpt4's issue text): identifiers only, where a dot qualifies a name.
  const tails = new Set<string>();
  for (const e of ranked) if (e.kind === 'identifier') for (let dot = e.value.indexOf('.'); dot > 0; dot = e.value.indexOf('.', dot + 1)) tails.add(e.value.slice(dot + 1));
  return ranked.filter((e) => e.kind !== 'identifier' || !tails.has(e.value)).map(entryText);
}
