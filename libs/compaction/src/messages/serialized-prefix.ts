/**
 * A provider-valid context serialized for Anthropic or OpenAI in time proportional to what was added
 * (issue: the agent loop's hot path). The messages that are final (valid-prefix.ts) are converted and
 * written to JSON once; a read after an append converts only the messages after them. The bytes are
 * always exactly `JSON.stringify` of the whole conversion's `messages` (and Anthropic's `system`):
 * - OpenAI: `toOpenAI` writes each message on its own, so any split gives the same array;
 * - Anthropic: `toAnthropic` also merges adjacent same-role turns, places in-conversation system
 *   messages by their neighbours and opens with a user turn. A split is kept only where none of that
 *   reaches across it: an assistant message right after a user or tool message, no in-conversation
 *   system message after the split, and the placeholder user turn `toAnthropic` puts before a
 *   conversation that starts with the assistant left out of the part after the split. Anywhere else
 *   the whole conversion runs (the property tests compare both).
 */
import { ANTHROPIC_FIRST_USER_PLACEHOLDER, toAnthropic } from './anthropic';
import { CanonicalMessage } from './canonical';
import { toOpenAI } from './openai';

export type SerializedFormat = 'anthropic' | 'openai';

export interface SerializedPrefix {
  readonly format: SerializedFormat;
  /** Messages [0, count) of `input` are written in `chunks`. */
  readonly count: number;
  readonly input: readonly CanonicalMessage[];
  /** JSON of the converted messages, a chunk per extension: elements joined by commas, no brackets. */
  readonly chunks: readonly Buffer[];
  /** Anthropic's `system` of the whole context (only the final part holds system prompts), as JSON. */
  readonly system: string | undefined;
  /** The role of the last element written (undefined: none yet). */
  readonly lastRole: string | undefined;
}

export interface SerializedMessages {
  /** JSON of `system`, when there is one. */
  system: string | undefined;
  /** JSON of the `messages` array's elements, in chunks to be joined by commas (empty chunks left out). */
  chunks: Buffer[];
  /** What to pass next time (undefined: nothing can be kept). */
  prefix: SerializedPrefix | undefined;
  /** Whether `prefix` was used. */
  incremental: boolean;
}

const MAX_CHUNKS = 64;
/** How far back from the final part's end a split is looked for (an agent's turn rarely has more messages). */
const MAX_SPLIT_SEARCH = 64;
const COMMA = Buffer.from(',');
const elementsJson = (elements: unknown[]): Buffer => Buffer.from(JSON.stringify(elements).slice(1, -1));
const roleOf = (element: unknown): string | undefined => (element as { role?: string } | undefined)?.role;

function convert(format: SerializedFormat, messages: CanonicalMessage[], continuing: boolean): { system?: unknown; messages: unknown[] } {
  if (format === 'openai') return { messages: toOpenAI(messages) };
  const out = toAnthropic(messages);
  if (!continuing) return out;
  // The part after a split starts with an assistant message: the placeholder opening turn toAnthropic puts before it is not the context's.
  const first = out.messages[0] as { role?: unknown; content?: unknown } | undefined;
  const placeholder = first !== undefined && first.role === 'user' && first.content === ANTHROPIC_FIRST_USER_PLACEHOLDER && messages[0]?.role === 'assistant';
  return { ...out, messages: placeholder ? out.messages.slice(1) : out.messages };
}

/** Whether Anthropic's conversion can split before message `k`: an assistant message after a user or tool one, and no system message from there on. */
function splitsAt(messages: readonly CanonicalMessage[], k: number, end: number): boolean {
  if (k === 0) return true;
  const before = messages[k - 1].role;
  if (k >= end || messages[k].role !== 'assistant' || (before !== 'user' && before !== 'tool')) return false;
  for (let i = k; i < end; i += 1) if (messages[i].role === 'system') return false;
  return true;
}

/** Written after a part whose last element has `lastRole`: the added elements must not merge into it. */
const joins = (format: SerializedFormat, lastRole: string | undefined, added: unknown[]) =>
  format === 'openai' || lastRole === undefined || added.length === 0 || (roleOf(added[0]) === 'assistant' && lastRole === 'user');

function sameStart(prefix: SerializedPrefix, messages: readonly CanonicalMessage[]): boolean {
  if (prefix.count > messages.length) return false;
  if (prefix.input === messages) return true;
  for (let i = 0; i < prefix.count; i += 1) if (prefix.input[i] !== messages[i]) return false;
  return true;
}

const concatChunks = (chunks: readonly Buffer[]) => Buffer.concat(chunks.flatMap((c, i) => (i === 0 ? [c] : [COMMA, c])));

/**
 * The `messages` (and Anthropic `system`) of `toAnthropic`/`toOpenAI` of `messages`, as JSON chunks.
 * `final` is how many leading messages no append can change (valid-prefix.ts); `prefix` is what the
 * last call on the same context returned.
 */
export function serializeMessagesIncremental(format: SerializedFormat, messages: CanonicalMessage[], final: number, prefix?: SerializedPrefix): SerializedMessages {
  const whole = (): SerializedMessages => {
    const out = convert(format, messages, false);
    const chunk = elementsJson(out.messages);
    return { system: out.system === undefined ? undefined : JSON.stringify(out.system), chunks: chunk.length ? [chunk] : [], prefix: undefined, incremental: false };
  };
  const anthropic = format === 'anthropic';
  if (final > messages.length) return whole();
  // Anthropic: the last place at or before the final part's end where the conversion splits (any prefix of the final part is final too).
  if (anthropic) {
    const floor = Math.max(1, final - MAX_SPLIT_SEARCH);
    while (final >= floor && !splitsAt(messages, final, messages.length)) final -= 1;
    if (final < floor) return whole();
  }
  if (final <= 0) return whole();

  let base = prefix && prefix.format === format && prefix.count > 0 && prefix.count <= final && sameStart(prefix, messages) ? prefix : undefined;
  if (base && anthropic && base.count < final && !splitsAt(messages, base.count, final)) base = undefined;
  let next: SerializedPrefix | undefined;
  if (base && base.count === final) next = base;
  else if (base) {
    const added = convert(format, messages.slice(base.count, final), true).messages;
    if (joins(format, base.lastRole, added)) {
      const json = elementsJson(added);
      let chunks = json.length ? [...base.chunks, json] : [...base.chunks];
      if (chunks.length > MAX_CHUNKS) chunks = [concatChunks(chunks)];
      next = { format, count: final, input: messages, chunks, system: base.system, lastRole: roleOf(added[added.length - 1]) ?? base.lastRole };
    } else base = undefined;
  }
  if (!next) {
    const out = convert(format, messages.slice(0, final), false);
    const json = elementsJson(out.messages);
    next = { format, count: final, input: messages, chunks: json.length ? [json] : [], system: out.system === undefined ? undefined : JSON.stringify(out.system), lastRole: roleOf(out.messages[out.messages.length - 1]) };
  }
  const tail = convert(format, messages.slice(final), true).messages;
  if (!joins(format, next.lastRole, tail)) return { ...whole(), prefix: next };
  const json = elementsJson(tail);
  return { system: next.system, chunks: json.length ? [...next.chunks, json] : [...next.chunks], prefix: next, incremental: base !== undefined };
}

/** The JSON array of the chunks' elements. */
export function messagesArrayJson(chunks: readonly Buffer[]): Buffer {
  return Buffer.concat([Buffer.from('['), concatChunks(chunks), Buffer.from(']')]);
}
