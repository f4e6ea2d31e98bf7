import {
  anthropicSystemTurn,
  anthropicTurns,
  Block,
  CanonicalMessage,
  inConversationSystemsInPlace,
  keyedBlockIndexes,
  SessionMessage,
  toAnthropic,
  toOpenAI,
  toResponses,
} from '@compactor/compaction';
import { randomUUID } from 'node:crypto';
import type { ProxyRequest } from './proxy-request';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Compaction's own system messages (goal block, checkpoints), which go after the request's system prompt. */
function isGenerated(message: CanonicalMessage): boolean {
  return message.role === 'system' && (message.tags ?? []).some((t) => t === 'goal' || t === 'checkpoint');
}

function cacheControlOf(block: Block): unknown {
  if (block.type === 'opaque') return isObject(block.raw) ? block.raw.cache_control : undefined;
  return block.extras?.cache_control;
}

function withoutCacheControl(block: Block): Block {
  if (block.type === 'opaque') {
    if (!isObject(block.raw) || !('cache_control' in block.raw)) return block;
    const { cache_control: _dropped, ...raw } = block.raw;
    return { ...block, raw };
  }
  let out: Block = block;
  if (block.extras && 'cache_control' in block.extras) {
    const { cache_control: _dropped, ...extras } = block.extras;
    const copy = { ...block, extras } as Block & { extras?: Record<string, unknown> };
    if (Object.keys(extras).length === 0) delete copy.extras;
    out = copy;
  }
  if (out.type === 'tool_result' && Array.isArray(out.content) && out.content.some((c) => cacheControlOf(c as Block) !== undefined)) {
    out = { ...out, content: out.content.map((c) => withoutCacheControl(c as Block)) as typeof out.content };
  }
  return out;
}

function withCacheControl(block: Block, marker: unknown): Block {
  if (block.type === 'opaque') return isObject(block.raw) ? { ...block, raw: { ...block.raw, cache_control: marker } } : block;
  if (block.type === 'thinking' || block.type === 'redacted_thinking') return block;
  return { ...block, extras: { ...block.extras, cache_control: marker }, origin: block.origin ?? 'anthropic' } as Block;
}

/**
 * Anthropic cache markers (`cache_control`): the stored copies of earlier requests' markers are
 * stale (Anthropic takes at most four), so every marker in the context is removed and the
 * request's own are put back on the same blocks, found by seq; markers on messages the context
 * no longer holds whole (summarized) are left out.
 */
/** Context messages without their stale markers, per original message object. */
const unmarked = new WeakMap<CanonicalMessage, CanonicalMessage>();

/** Whether a message carries a cache marker on a block or inside a tool result, per message object (messages are never changed). */
const markedMessages = new WeakMap<CanonicalMessage, boolean>();

function hasStaleMarker(message: CanonicalMessage): boolean {
  let stale = markedMessages.get(message);
  if (stale === undefined) {
    stale = message.blocks.some((b) => cacheControlOf(b) !== undefined || (b.type === 'tool_result' && Array.isArray(b.content) && b.content.some((c) => cacheControlOf(c as Block) !== undefined)));
    markedMessages.set(message, stale);
  }
  return stale;
}

export function withRequestCacheMarkers(context: SessionMessage[], request: ProxyRequest, seqOf: ReadonlyArray<number | undefined>): SessionMessage[] {
  const wanted = new Map<number, Map<number, unknown>>();
  // Only the few messages carrying a marker are looked at (found by one text search of the body, parsing is not cheap).
  for (const i of request.cacheMarkedMessages()) {
    const k = i - request.leading;
    const seq = k >= 0 && k < request.conversationLength ? seqOf[k] : undefined;
    if (seq === undefined) continue;
    const message = request.turn(k);
    keyedBlockIndexes(message).forEach((blockIndex, position) => {
      const marker = cacheControlOf(message.blocks[blockIndex]);
      if (marker === undefined) return;
      const forSeq = wanted.get(seq) ?? new Map<number, unknown>();
      forSeq.set(position, marker);
      wanted.set(seq, forSeq);
    });
  }
  return context.map((m) => {
    const markers = m.message.role === 'system' && !m.message.inConversation ? undefined : wanted.get(m.seq);
    const stale = hasStaleMarker(m.message);
    if (!stale && !markers) return m;
    if (!markers) {
      // The same copy on every request, so its serialization is reused too.
      let copy = unmarked.get(m.message);
      if (!copy) {
        copy = { ...m.message, blocks: m.message.blocks.map(withoutCacheControl) };
        unmarked.set(m.message, copy);
      }
      return { ...m, message: copy };
    }
    const keyed = keyedBlockIndexes(m.message);
    const blocks = m.message.blocks.map((b, i) => {
      const clean = stale ? withoutCacheControl(b) : b;
      const position = keyed.indexOf(i);
      return position >= 0 && markers.has(position) ? withCacheControl(clean, markers.get(position)) : clean;
    });
    return { ...m, message: { ...m.message, blocks } };
  });
}

export interface ForwardInput {
  request: ProxyRequest;
  /** The fitted context. */
  context: SessionMessage[];
  /** Whether a compaction's version is in force. */
  compacted: boolean;
  /** Stored system prompts at the start of the history: the request's own replace them. */
  leadingSystemSeqs: ReadonlySet<number>;
  /** Forward only history through this seq (a retried request, see matchConversation's `behind`). */
  throughSeq?: number;
  /** Request conversation index → stored seq, for the cache markers. */
  seqOf: ReadonlyArray<number | undefined>;
}

/**
 * JSON of a context message in each provider's shape, as UTF-8 bytes, per message object: context messages are shared
 * across requests while unchanged, so a forwarded body is mostly copied, not written or encoded again.
 */
const serialized: Record<'anthropic' | 'openai' | 'responses', WeakMap<CanonicalMessage, Buffer>> = { anthropic: new WeakMap(), openai: new WeakMap(), responses: new WeakMap() };

function jsonOf(provider: 'anthropic' | 'openai' | 'responses', message: CanonicalMessage): Buffer {
  let out = serialized[provider].get(message);
  if (out === undefined) {
    const written =
      provider === 'anthropic'
        ? message.role === 'system' && message.inConversation
          ? [anthropicSystemTurn(message)]
          : toAnthropic([message]).messages
        : provider === 'responses'
          ? toResponses([message])
          : toOpenAI([message]);
    out = Buffer.from(written.map((m) => JSON.stringify(m)).join(','));
    serialized[provider].set(message, out);
  }
  return out;
}

/**
 * The JSON of the messages a conversation forwarded last, comma-separated, per provider and first message object: a
 * conversation's next body holds the same message objects at its start (the context source shares them while they stay
 * in the context), so it copies their bytes at once and writes only the messages after the first one that differs.
 */
interface Joined {
  messages: readonly CanonicalMessage[];
  /** The byte length of `bytes` through message i. */
  ends: number[];
  /** A view of the body they were forwarded in. */
  bytes: Buffer;
}

const joinedOf: Record<'anthropic' | 'openai' | 'responses', WeakMap<CanonicalMessage, Joined>> = { anthropic: new WeakMap(), openai: new WeakMap(), responses: new WeakMap() };

/**
 * `messages.map((m) => jsonOf(provider, m))` joined by commas (empty ones left out), as the parts to copy, and a
 * function that keeps them for the conversation's next body once they are copied into `body` at `at`.
 */
function joinedJson(provider: 'anthropic' | 'openai' | 'responses', messages: readonly CanonicalMessage[]): { parts: Buffer[]; length: number; keep: (body: Buffer, at: number) => void } {
  if (messages.length === 0) return { parts: [], length: 0, keep: () => undefined };
  const previous = joinedOf[provider].get(messages[0]);
  let same = 0;
  if (previous) {
    const n = Math.min(previous.messages.length, messages.length);
    while (same < n && previous.messages[same] === messages[same]) same++;
  }
  const ends = same > 0 ? previous!.ends.slice(0, same) : [];
  let length = same > 0 ? ends[same - 1] : 0;
  const parts: Buffer[] = length > 0 ? [previous!.bytes.subarray(0, length)] : [];
  for (let i = same; i < messages.length; i++) {
    const json = jsonOf(provider, messages[i]);
    if (json.length > 0) {
      if (length > 0) {
        parts.push(COMMA);
        length += 1;
      }
      parts.push(json);
      length += json.length;
    }
    ends.push(length);
  }
  return { parts, length, keep: (body, at) => joinedOf[provider].set(messages[0], { messages, ends, bytes: body.subarray(at, at + length) }) };
}

/**
 * Whether writing each turn on its own gives what `toAnthropic` gives for the whole list: it merges
 * adjacent same-role turns unless both came from Anthropic, puts a placeholder before a first
 * assistant turn from elsewhere, and leaves out the results of OpenAI calls it cannot write.
 */
function anthropicTurnByTurn(turns: CanonicalMessage[]): boolean {
  if (turns.length > 0 && turns[0].role === 'assistant' && turns[0].origin !== 'anthropic') return false;
  // toAnthropic moves an in-conversation system message whose place Anthropic would refuse into `system`.
  if (!inConversationSystemsInPlace(turns)) return false;
  for (let i = 0; i < turns.length; i++) {
    const m = turns[i];
    if (m.blocks.some((b) => b.type === 'opaque' && b.slot === 'tool_calls')) return false;
    const prev = turns[i - 1];
    const role = (x: CanonicalMessage) => (x.role === 'assistant' || x.role === 'system' ? x.role : 'user');
    if (prev && role(prev) === role(m) && !(prev.origin === 'anthropic' && m.origin === 'anthropic')) return false;
  }
  return true;
}

const MESSAGES_SLOT = `compactor-messages-${randomUUID()}`;
const COMMA = Buffer.from(',');
const OPEN = Buffer.from('[');
const CLOSE = Buffer.from(']');

/**
 * The body sent upstream, as bytes: the request's own fields (model, tools, tool choice, thinking,
 * stream, …) and system prompt, with the conversation replaced by the compacted context. The goal
 * block and checkpoint summaries go right after the request's system prompt. Each context message
 * is serialized once while it stays in the context (the body is hundreds of kilobytes; the new
 * part of each request is small).
 */
export function forwardBody(input: ForwardInput): Buffer {
  const { request } = input;
  let kept = input.context.filter((m) => !(m.message.role === 'system' && input.leadingSystemSeqs.has(m.seq) && !isGenerated(m.message)));
  if (input.throughSeq !== undefined) {
    const through = input.throughSeq;
    kept = kept.filter((m) => m.message.role === 'system' || m.seq <= through);
  }
  // The request's own messages (its leading system prompts, a prefill) go as the client sent them.
  const prefill = Buffer.from(request.rawJson(request.end, request.messageCount));
  // In-conversation system messages (Anthropic `role: "system"` entries of `messages`) are conversation: forwarded in place.
  const isSystemPrompt = (m: SessionMessage) => m.message.role === 'system' && !m.message.inConversation;
  const systems = kept.filter(isSystemPrompt).map((m) => m.message);
  // A Responses request's conversation is its `input` (items); the others' is `messages`.
  const slot = request.shape === 'responses' ? 'input' : 'messages';
  const fields: Json = { [slot]: MESSAGES_SLOT };
  // The conversation's pieces in order; the context messages' JSON as one joined piece where it can be (see joinedJson).
  let messages: Array<Buffer | ReturnType<typeof joinedJson>>;

  if (request.shape === 'responses') {
    // The request's own leading developer/system items first (its `instructions` stay where they are), then the goal block
    // and checkpoints as developer messages, then the compacted conversation, each message as its items.
    const rest = kept.filter((m) => !isSystemPrompt(m)).map((m) => m.message);
    messages = [Buffer.from(request.rawJson(0, request.leading)), joinedJson('responses', [...systems, ...rest])];
  } else if (request.provider === 'openai') {
    const rest = kept.filter((m) => !isSystemPrompt(m)).map((m) => m.message);
    messages = [Buffer.from(request.rawJson(0, request.leading)), joinedJson('openai', [...systems, ...rest]), prefill];
  } else {
    const marked = withRequestCacheMarkers(kept, request, input.seqOf);
    const rest = marked.filter((m) => !isSystemPrompt(m)).map((m) => m.message);
    const turns = input.compacted ? anthropicTurns(rest) : rest;
    // In-conversation system messages that lost their place (their user turn summarized) are moved into `system` by toAnthropic.
    let moved: unknown[] = [];
    if (anthropicTurnByTurn(turns)) messages = [joinedJson('anthropic', turns)];
    else {
      const written = toAnthropic(turns);
      messages = written.messages.map((m) => Buffer.from(JSON.stringify(m)));
      moved = written.system === undefined ? [] : typeof written.system === 'string' ? [{ type: 'text', text: written.system }] : written.system;
    }
    messages.push(prefill);
    if (systems.length > 0 || moved.length > 0) {
      const own = request.body.system;
      const ownBlocks = own === undefined ? [] : typeof own === 'string' ? (own === '' ? [] : [{ type: 'text', text: own }]) : Array.isArray(own) ? own : [];
      const generated = systems.flatMap((m) => m.blocks.flatMap((b) => (b.type === 'text' && b.text !== '' ? [{ type: 'text', text: b.text }] : [])));
      const added = [...generated, ...moved];
      fields.system = [...ownBlocks, ...added];
    }
  }
  let before: Buffer;
  let after: Buffer;
  if (request.layout && request.bytes && Object.keys(fields).length === 1) {
    // Only the conversation changes: the request's other fields go as the client's own bytes, not written again.
    before = request.bytes.subarray(0, request.layout.start);
    after = request.bytes.subarray(request.layout.end);
  } else {
    const [head, tail] = JSON.stringify(replaceFields(request.body, fields, slot)).split(`"${MESSAGES_SLOT}"`);
    before = Buffer.from(head);
    after = Buffer.from(tail);
  }
  const chunks: Buffer[] = [before, OPEN];
  let length = before.length + OPEN.length;
  const joined: Array<{ at: number; keep: (body: Buffer, at: number) => void }> = [];
  for (const m of messages) {
    if (m.length === 0) continue;
    if (chunks.length > 2) {
      chunks.push(COMMA);
      length += COMMA.length;
    }
    if (Buffer.isBuffer(m)) chunks.push(m);
    else {
      joined.push({ at: length, keep: m.keep });
      for (const part of m.parts) chunks.push(part);
    }
    length += m.length;
  }
  chunks.push(CLOSE, after);
  const body = Buffer.concat(chunks, length + CLOSE.length + after.length);
  for (const j of joined) j.keep(body, j.at);
  return body;
}

/** The body with some fields replaced, in the body's own key order (new fields go before the conversation's `slot`). */
function replaceFields(body: Json, fields: Json, slot: string): Json {
  const out: Json = {};
  for (const key of Object.keys(body)) {
    if (key === slot) {
      for (const [k, v] of Object.entries(fields)) if (!(k in body)) out[k] = v;
    }
    out[key] = key in fields ? fields[key] : body[key];
  }
  for (const [k, v] of Object.entries(fields)) if (!(k in out)) out[k] = v;
  return out;
}
