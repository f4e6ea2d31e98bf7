/**
 * The proxy's view of a conversation (SPEC.md, REST API, the proxy): which of a request's
 * messages are already in the session's history, which are new, and whether the client's
 * history diverged from the stored one (an earlier message edited, a rewind).
 *
 * Messages are compared block by block on a normalised form, so what clients change between
 * identical turns never counts as a change: `cache_control` markers, thinking blocks the client
 * stripped, empty text blocks, surrounding whitespace, `citations: null` and other provider
 * fields a client may echo back or drop (`refusal`, `annotations`), a string content versus one
 * text block, key order in tool arguments, and how consecutive blocks of one role are split into
 * messages. The system prompt at the start is left out: the request's own is forwarded.
 */
import { createHash } from 'node:crypto';
import { Block, CanonicalMessage, ToolResultContent } from '../messages/canonical';
import { isRecord } from '../messages/util';

/** The normalised blocks of one message, each as a short key (role group + kind + hash). */
export type MessageKeys = string[];

const hash = (text: string): string => createHash('sha1').update(text).digest('base64url').slice(0, 22);

/** JSON with sorted keys and without `cache_control`, so equal values give equal text. */
export function normalisedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(normalisedJson).join(',')}]`;
  if (isRecord(value)) {
    const keys = Object.keys(value)
      .filter((k) => k !== 'cache_control' && value[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${normalisedJson(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function resultContentKey(content: ToolResultContent): string {
  if (typeof content === 'string') return content.trim();
  // Text-only content compares as its text, so `"x"` and `[{type:'text',text:'x'}]` are the same result.
  if (content.every((c) => c.type === 'text')) return content.map((c) => (c.type === 'text' ? c.text : '')).join('').trim();
  return normalisedJson(
    content.map((c) => (c.type === 'text' ? { t: c.text } : c.type === 'image' ? { i: c.source } : { o: c.raw })),
  );
}

/** Role group of a block: a tool result is `r` whether it came as an Anthropic user block or an OpenAI tool message. */
function group(message: CanonicalMessage, block: Block): string {
  if (block.type === 'tool_result') return 'r';
  switch (message.role) {
    case 'assistant':
      return 'a';
    case 'system':
      return 's';
    default:
      return 'u';
  }
}

/** The key of one block, or undefined for a block the comparison ignores (thinking, empty text). */
export function blockKey(message: CanonicalMessage, block: Block): string | undefined {
  const g = group(message, block);
  switch (block.type) {
    case 'text': {
      const text = block.text.trim();
      return text === '' ? undefined : `${g}t${hash(text)}`;
    }
    case 'image':
      return `${g}i${hash(normalisedJson(block.source))}`;
    case 'tool_use':
      return `${g}c${hash(normalisedJson([block.id, block.name, block.input]))}`;
    case 'tool_result': {
      // The call's id and error flag as JSON (no raw line break in it), a line break, then the content's key as it is: a
      // tool result of megabytes is hashed, not escaped into JSON first (30 MB took ~50 ms more of the event loop).
      const digest = createHash('sha1').update(normalisedJson([block.toolUseId, block.isError])).update('\n').update(resultContentKey(block.content));
      return `${g}r${digest.digest('base64url').slice(0, 22)}`;
    }
    case 'thinking':
    case 'redacted_thinking':
      return undefined;
    case 'opaque':
      return isResponsesReasoning(block) ? undefined : `${g}o${hash(normalisedJson(block.raw))}`;
  }
}

/** The keys of a message's blocks, in order, leaving out the ones the comparison ignores. */
export function messageKeys(message: CanonicalMessage): MessageKeys {
  const keys: string[] = [];
  for (const block of message.blocks) {
    const key = blockKey(message, block);
    if (key !== undefined) keys.push(key);
  }
  return keys;
}

/** Whether the comparison looks at a block (`blockKey` gives it a key): not thinking, not an empty text. */
export function isComparedBlock(block: Block): boolean {
  if (block.type === 'text') return block.text.trim() !== '';
  return block.type !== 'thinking' && block.type !== 'redacted_thinking' && !isResponsesReasoning(block);
}

/** A Responses `reasoning` item: the model's thinking, which clients may send back trimmed or not at all (compared like thinking: not). */
function isResponsesReasoning(block: Block): boolean {
  return block.type === 'opaque' && block.provider === 'responses' && isRecord(block.raw) && block.raw.type === 'reasoning';
}

/** Indexes (into the message's blocks) of the blocks `messageKeys` keeps, in order. */
export function keyedBlockIndexes(message: CanonicalMessage): number[] {
  const out: number[] = [];
  message.blocks.forEach((block, i) => {
    if (isComparedBlock(block)) out.push(i);
  });
  return out;
}

/** How many messages at the start are system prompts (OpenAI `system`/`developer` messages before the first turn). */
export function leadingSystemCount(messages: readonly CanonicalMessage[]): number {
  let n = 0;
  while (n < messages.length && messages[n].role === 'system') n++;
  return n;
}

/** A stored message as the matcher needs it: its seq and keys. */
export interface StoredKeys {
  seq: number;
  keys: MessageKeys;
}

export type ConversationMatch =
  /**
   * The request carries the whole stored history, then `messages.slice(newFrom)` that are new
   * (possibly none). `seqOf[i]` is the stored seq request message i matches exactly (same keys),
   * when it does.
   */
  | { kind: 'extends'; newFrom: number; matchedThroughSeq: number; seqOf: Array<number | undefined> }
  /**
   * The request stops inside the stored history, and what it lacks is assistant output only (an
   * answer recorded for an earlier attempt of this very request: an SDK retry, a regenerate).
   * The context is forwarded through `matchedThroughSeq`.
   */
  | { kind: 'behind'; matchedThroughSeq: number; seqOf: Array<number | undefined> }
  /** The histories differ at a block both have, or the request lacks more than an answer: a fork. */
  | { kind: 'diverged'; commonBlocks: number; divergedAtSeq: number | undefined };

function sameKeys(a: MessageKeys, b: MessageKeys): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The agent loop's usual request, without the block-by-block walk: request message j has exactly stored message j's
 * keys (at least one), for every stored message, and the request has more. The keys of the messages a proxy appended are
 * the request's own key arrays, so each comparison is mostly one identity test. The result is what the block-by-block
 * walk gives for such a request: every stored block is matched, the last one ends a message, the rest is new, and each
 * matched request message holds exactly its stored message's keys.
 */
function alignedExtension(stored: readonly StoredKeys[], request: readonly MessageKeys[]): ConversationMatch | undefined {
  if (stored.length === 0 || request.length <= stored.length) return undefined;
  for (let j = 0; j < stored.length; j++) {
    const keys = stored[j].keys;
    if (keys.length === 0 || !sameKeys(keys, request[j])) return undefined;
  }
  const seqOf: Array<number | undefined> = new Array(request.length).fill(undefined);
  for (let j = 0; j < stored.length; j++) seqOf[j] = stored[j].seq;
  return { kind: 'extends', newFrom: stored.length, matchedThroughSeq: stored[stored.length - 1].seq, seqOf };
}

/**
 * Compares a request's messages (leading system prompts already left out, keys per message)
 * with the stored history (leading system prompts left out too), block by block.
 * `baseSeq` is the seq the history starts after (the stored leading system prompts).
 */
export function matchConversation(stored: readonly StoredKeys[], request: readonly MessageKeys[], baseSeq = 0): ConversationMatch {
  return alignedExtension(stored, request) ?? matchBlockByBlock(stored, request, baseSeq);
}

/** matchConversation without its shortcut for the usual request (exported for the property test comparing the two). */
export function matchBlockByBlock(stored: readonly StoredKeys[], request: readonly MessageKeys[], baseSeq = 0): ConversationMatch {
  const s: Array<{ key: string; seq: number }> = [];
  for (const m of stored) for (const key of m.keys) s.push({ key, seq: m.seq });
  const r: Array<{ key: string; message: number }> = [];
  request.forEach((keys, message) => keys.forEach((key) => r.push({ key, message })));

  let common = 0;
  while (common < s.length && common < r.length && s[common].key === r[common].key) common++;

  const storedKeyCount = new Map(stored.map((m) => [m.seq, m.keys.length]));
  /** Request messages whose keys are exactly one stored message's keys. */
  const seqOf = (through: number): Array<number | undefined> => {
    const out: Array<number | undefined> = new Array(request.length).fill(undefined);
    const seqs = new Map<number, Set<number>>();
    const counts = new Map<number, number>();
    for (let i = 0; i < through; i++) {
      const set = seqs.get(r[i].message) ?? new Set<number>();
      set.add(s[i].seq);
      seqs.set(r[i].message, set);
      counts.set(r[i].message, (counts.get(r[i].message) ?? 0) + 1);
    }
    for (const [message, set] of seqs) {
      const [seq] = [...set];
      if (set.size === 1 && counts.get(message) === request[message].length && storedKeyCount.get(seq) === request[message].length) out[message] = seq;
    }
    return out;
  };
  const lastStoredSeq = stored.length > 0 ? stored[stored.length - 1].seq : baseSeq;
  const diverged = (): ConversationMatch => ({ kind: 'diverged', commonBlocks: common, divergedAtSeq: s[common]?.seq });

  if (common === s.length) {
    if (common === 0) {
      // Nothing stored besides the system prompt: every message of the request is new, unless
      // the history holds messages without keys only (e.g. a thinking-only turn), then compare counts.
      const storedEmpty = stored.length;
      return { kind: 'extends', newFrom: Math.min(storedEmpty, request.length), matchedThroughSeq: lastStoredSeq, seqOf: seqOf(0) };
    }
    const last = r[common - 1].message;
    // The last stored block ends inside a request message: that message was changed (a block added).
    if (common < r.length && r[common].message === last) return diverged();
    return { kind: 'extends', newFrom: last + 1, matchedThroughSeq: lastStoredSeq, seqOf: seqOf(common) };
  }
  if (common === r.length) {
    const rest = s.slice(common);
    const splitsStored = common > 0 && s[common].seq === s[common - 1].seq;
    if (!splitsStored && rest.every((x) => x.key.startsWith('a'))) {
      const matchedThroughSeq = common > 0 ? s[common - 1].seq : baseSeq;
      return { kind: 'behind', matchedThroughSeq, seqOf: seqOf(common) };
    }
  }
  return diverged();
}

/**
 * A session id for a conversation that names none (no `X-Compactor-Session`): a hash of its
 * opening, the system prompt and the first message, normalised as the matcher compares them,
 * so cache markers, thinking and retries give the same id.
 */
export function derivedSessionId(provider: string, system: readonly CanonicalMessage[], messages: readonly CanonicalMessage[]): string {
  const opening = [...system.flatMap(messageKeys), '|', ...(messages.length > 0 ? messageKeys(messages[0]) : [])];
  const digest = createHash('sha256').update(`${provider}\n${opening.join('\n')}`).digest('hex').slice(0, 32);
  return `proxy-${digest}`;
}
