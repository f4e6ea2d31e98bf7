import {
  CanonicalMessage,
  FieldProblem,
  groupResponsesItems,
  parseAnthropicMessages,
  parseAnthropicSystem,
  parseOpenAIMessages,
  parseResponsesGroup,
  PolicyInput,
} from '@compactor/compaction';
import type { IncomingHttpHeaders } from 'node:http';
import { SESSION_ID_PATTERN } from '../common/validation';
import { ArrayPlace, MessagesLayout, scanMessages, unchangedElements } from './json-scan';
import { policySchema } from '../sessions/session-config';
import { ProxyError, ProxyProvider } from './provider-errors';

const CACHE_MARKER = Buffer.from('"cache_control"');

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A Responses request's `input` items as parsed from its bytes, kept for the conversation's next request: an agent re-sends
 * every item each turn, and an item whose bytes are unchanged (the same range, inside the prefix both bodies share) is
 * not parsed again. Reuse is decided by the bytes alone, so whichever request's items are offered, the result is the same.
 */
export interface ParsedItems extends ArrayPlace {
  /** Responses only: the items parsed. The other shapes keep their messages' byte ranges only, where the next scan resumes (scanMessages). */
  items?: readonly unknown[];
}

/** The shape of a proxied request's conversation: Anthropic Messages, OpenAI Chat Completions, or OpenAI Responses `input` items. */
export type ProxyShape = ProxyProvider | 'responses';

/** The upstream a shape goes to. */
export const providerOf = (shape: ProxyShape): ProxyProvider => (shape === 'anthropic' ? 'anthropic' : 'openai');

function invalid(problems: readonly FieldProblem[]): ProxyError {
  const shown = problems.slice(0, 5).map((p) => `${p.field}: ${p.message}`);
  return new ProxyError(400, 'invalid_request', `Compactor proxy: ${shown.join('; ')}${problems.length > 5 ? ` (and ${problems.length - 5} more)` : ''}`);
}

/**
 * A Messages / Chat Completions request as the proxy reads it. A client re-sends its whole
 * history with every request, so the messages are not parsed with the body: their byte ranges
 * are found (scanMessages), and each one is parsed, then converted to canonical form, only when
 * needed (the new ones, the first one, those carrying cache markers). The messages already
 * stored are recognised by their unchanged bytes (see ConversationResolver's key cache).
 */
export class ProxyRequest {
  /** How many messages the body holds. */
  readonly messageCount: number;
  /**
   * OpenAI system/developer messages before the first turn (Anthropic sends `system` apart: 0).
   * Anthropic `role: "system"` entries of `messages` are not leading: they are mid-conversation
   * system messages, part of the conversation, recorded and forwarded in place.
   */
  readonly leading: number;
  /** The index after the conversation: a trailing assistant message (a prefill) is forwarded after the context, not recorded. */
  readonly end: number;
  /** The request's system prompt as canonical messages (Anthropic `system`, OpenAI leading system messages). */
  readonly system: CanonicalMessage[];
  readonly model: string | undefined;
  readonly stream: boolean;
  readonly maxTokens: number | undefined;
  /** The upstream provider the request goes to (a Responses request goes to OpenAI's). */
  readonly provider: ProxyProvider;
  /** Responses: the `input` items, and each conversation message's [start, end) range of them (consecutive items of one role). */
  private readonly items?: unknown[];
  /** Responses, read from bytes: each item's [start, end) offsets. */
  private readonly itemRanges?: Array<[number, number]>;
  private readonly groups?: Array<[number, number]>;
  /** Responses: the first group that is not a system group (later system groups are mid-conversation developer messages). */
  private readonly firstTurn: number = 0;
  private readonly parsed = new Map<number, CanonicalMessage>();
  private readonly raws = new Map<number, unknown>();

  /**
   * `body` without its messages when `layout` is given (then `body.messages` is an empty placeholder
   * and message i is read from `bytes` at `layout.items[i]`); otherwise `body.messages` holds them.
   */
  constructor(
    readonly shape: ProxyShape,
    readonly body: Record<string, unknown>,
    readonly bytes?: Buffer,
    /** Byte ranges of the conversation's messages (a Responses request's: of its item groups). */
    readonly layout?: MessagesLayout,
    /** Responses: the items of an earlier request of the conversation, reused where the bytes are the same. */
    previous?: ParsedItems,
    /** Messages already parsed from their bytes, by index (a Responses request's: items; see read). */
    preparsed?: ReadonlyMap<number, unknown>,
  ) {
    if (shape !== 'responses') for (const [i, value] of preparsed ?? []) this.raws.set(i, value);
    const provider = providerOf(shape);
    this.provider = provider;
    if (shape === 'responses') {
      const input = body.input;
      let items: unknown;
      if (layout) {
        // Each item parsed from its bytes (what grouping needs), unless an earlier request of the conversation had the same
        // bytes at the same place; a message's byte range spans its items, so the key cache recognises unchanged messages
        // as it does for the other shapes.
        const reused = previous?.items;
        const unchanged = previous && reused && bytes ? unchangedElements(previous, { bytes, start: layout.start, ranges: layout.items }) : () => false;
        items = layout.items.map(([start, end], k) => {
          if (unchanged(k)) return reused![k];
          if (preparsed?.has(k)) return preparsed.get(k);
          try {
            return JSON.parse(bytes!.toString('utf8', start, end)) as unknown;
          } catch {
            throw new ProxyError(400, 'invalid_json', `Compactor proxy: input[${k}] is not valid JSON`);
          }
        });
        this.itemRanges = layout.items;
      } else items = typeof input === 'string' ? [{ role: 'user', content: input }] : input;
      if (!Array.isArray(items)) throw invalid([{ field: 'input', message: 'must be a string or an array of input items' }]);
      this.items = items;
      this.groups = groupResponsesItems(items);
      if (layout) this.layout = { start: layout.start, end: layout.end, items: this.groups.map(([s, e]) => [layout.items[s][0], layout.items[e - 1][1]] as [number, number]) };
      const first = this.groups.findIndex(([start]) => !isSystemItem(items[start]));
      this.firstTurn = first < 0 ? this.groups.length : first;
    } else if (!layout && !Array.isArray(body.messages)) throw invalid([{ field: 'messages', message: 'must be an array of messages' }]);
    this.messageCount = this.groups ? this.groups.length : layout ? layout.items.length : (body.messages as unknown[]).length;
    const roleOf = (i: number) => {
      if (this.groups) return this.message(i).role;
      const m = this.raw(i);
      return isObject(m) ? m.role : undefined;
    };
    const count = this.messageCount;
    let leading = 0;
    if (provider === 'openai') while (leading < count && (roleOf(leading) === 'system' || roleOf(leading) === 'developer')) leading++;
    this.leading = leading;
    // A Responses request has no prefill: every item is conversation.
    this.end = shape !== 'responses' && count > leading && roleOf(count - 1) === 'assistant' ? count - 1 : count;
    if (provider === 'anthropic' && body.system !== undefined) {
      const s = parseAnthropicSystem(body.system, 'system');
      if (!s.ok) throw invalid(s.errors);
      this.system = [s.value];
    } else {
      this.system = Array.from({ length: leading }, (_, i) => this.message(i));
    }
    // Responses `instructions` are the request's own system prompt, forwarded as sent (counted in its budget, never stored).
    if (shape === 'responses' && body.instructions !== undefined && body.instructions !== null) {
      if (typeof body.instructions !== 'string') throw invalid([{ field: 'instructions', message: 'must be a string' }]);
      if (body.instructions !== '') this.system = [{ role: 'system', blocks: [{ type: 'text', text: body.instructions }] }, ...this.system];
    }
    this.model = typeof body.model === 'string' && body.model.trim() !== '' ? body.model.trim().slice(0, 200) : undefined;
    this.stream = body.stream === true;
    const maxTokens = shape === 'responses' ? body.max_output_tokens : provider === 'anthropic' ? body.max_tokens : (body.max_completion_tokens ?? body.max_tokens);
    this.maxTokens = typeof maxTokens === 'number' && Number.isFinite(maxTokens) && maxTokens > 0 ? Math.floor(maxTokens) : undefined;
  }

  /** Reads the raw bytes a proxy route received: the body without its messages, which are read one by one when needed. */
  static parse(shape: ProxyShape, raw: unknown, previous?: ParsedItems): ProxyRequest {
    const bytes = Buffer.isBuffer(raw) ? raw : Buffer.alloc(0);
    return ProxyRequest.fromLayout(shape, bytes, ProxyRequest.layoutOf(shape, bytes, previous), previous);
  }

  /**
   * As parse, but what parse would parse at once of `largeBytes` or more is parsed by `parseOffThread` (a worker thread)
   * first: the last message (the new one, whose role the request's reading needs: a prefill is an assistant message), or
   * a Responses request's items that an earlier request of the conversation did not have. A message or item it cannot
   * give back as a value is parsed as parse would, and answered the same.
   */
  static async read(
    shape: ProxyShape,
    raw: unknown,
    previous: ParsedItems | undefined,
    largeBytes: number,
    parseOffThread: (bytes: Buffer) => Promise<{ ok: boolean; value?: unknown }>,
  ): Promise<ProxyRequest> {
    const bytes = Buffer.isBuffer(raw) ? raw : Buffer.alloc(0);
    const layout = ProxyRequest.layoutOf(shape, bytes, previous);
    if (!layout) return ProxyRequest.fromLayout(shape, bytes, layout, previous);
    let wanted: number[];
    if (shape === 'responses') {
      // Every item is parsed with the request (grouping needs them), but those an earlier request parsed from the same bytes.
      const reused = previous?.items;
      const unchanged = previous && reused ? unchangedElements(previous, { bytes, start: layout.start, ranges: layout.items }) : () => false;
      wanted = layout.items.flatMap(([start, end], k) => (end - start >= largeBytes && !unchanged(k) ? [k] : []));
    } else {
      const last = layout.items.length - 1;
      wanted = last >= 0 && layout.items[last][1] - layout.items[last][0] >= largeBytes ? [last] : [];
    }
    if (wanted.length === 0) return ProxyRequest.fromLayout(shape, bytes, layout, previous);
    const preparsed = new Map<number, unknown>();
    for (const k of wanted) {
      const parsed = await parsedOffThread(bytes, layout.items[k], parseOffThread);
      if (parsed) preparsed.set(k, parsed.value);
    }
    return ProxyRequest.fromLayout(shape, bytes, layout, previous, preparsed);
  }

  /** The byte ranges of the body's conversation array (`messages`, or a Responses request's `input`), when it has one. */
  private static layoutOf(shape: ProxyShape, bytes: Buffer, previous?: ParsedItems): MessagesLayout | undefined {
    // A Responses request's conversation is its `input` items (grouped into messages by the constructor).
    // The scan resumes after the elements the conversation's previous body shares (offered by key and session header: the
    // layout found is the same whichever body is offered).
    return scanMessages(bytes, shape === 'responses' ? 'input' : 'messages', previous);
  }

  private static fromLayout(shape: ProxyShape, bytes: Buffer, layout: MessagesLayout | undefined, previous?: ParsedItems, preparsed?: ReadonlyMap<number, unknown>): ProxyRequest {
    const slot = shape === 'responses' ? 'input' : 'messages';
    const notJson = () => new ProxyError(400, 'invalid_json', 'Compactor proxy: the request body is not valid JSON');
    if (layout) {
      let rest: unknown;
      try {
        rest = JSON.parse(`${bytes.toString('utf8', 0, layout.start)}[]${bytes.toString('utf8', layout.end)}`);
      } catch {
        throw notJson();
      }
      // The placeholder is what JSON.parse kept (no later duplicate key won).
      if (isObject(rest) && Array.isArray(rest[slot]) && (rest[slot] as unknown[]).length === 0) return new ProxyRequest(shape, rest, bytes, layout, previous, preparsed);
    }
    let body: unknown;
    try {
      body = JSON.parse(bytes.toString('utf8'));
    } catch {
      throw notJson();
    }
    if (!isObject(body)) throw new ProxyError(400, 'invalid_request', 'Compactor proxy: the request body must be a JSON object');
    return new ProxyRequest(shape, body);
  }

  /** Raw message i, as the client sent it (parsed from its bytes on first use). */
  raw(i: number): unknown {
    if (this.groups) return this.items!.slice(this.groups[i][0], this.groups[i][1]);
    if (!this.layout) return (this.body.messages as unknown[])[i];
    if (this.raws.has(i)) return this.raws.get(i);
    const [start, end] = this.layout.items[i];
    let value: unknown;
    try {
      value = JSON.parse(this.bytes!.toString('utf8', start, end));
    } catch {
      throw new ProxyError(400, 'invalid_json', `Compactor proxy: messages[${i}] is not valid JSON`);
    }
    this.raws.set(i, value);
    return value;
  }

  /**
   * Conversation messages [leading, end) of at least `minBytes` that were read by layout and are not parsed yet (not a
   * Responses request's: its items are parsed with the request), in order.
   */
  largeUnparsed(minBytes: number): number[] {
    if (!this.layout || this.groups) return [];
    const out: number[] = [];
    for (let i = this.leading; i < this.end; i++) {
      const [start, end] = this.layout.items[i];
      if (end - start >= minBytes && !this.raws.has(i)) out.push(i);
    }
    return out;
  }

  /**
   * Parses messages `indexes` with `parse` (a worker thread: a message of megabytes took 50 ms of the event loop to
   * decode and parse), each from a copy of its bytes. A message the worker cannot give back as a value (not JSON, too
   * deep, unstorable text) is left for raw(i), which answers it as before.
   */
  async preparse(indexes: readonly number[], parse: (bytes: Buffer) => Promise<{ ok: boolean; value?: unknown }>): Promise<void> {
    if (!this.layout || !this.bytes) return;
    for (const i of indexes) {
      if (this.raws.has(i)) continue;
      const parsed = await parsedOffThread(this.bytes, this.layout.items[i], parse);
      if (parsed) this.raws.set(i, parsed.value);
    }
  }

  /** Read from bytes: the conversation's byte ranges (a Responses request's items, with the items as parsed), for the conversation's next request (see ParsedItems). */
  get parsedItems(): ParsedItems | undefined {
    if (!this.bytes || !this.layout) return undefined;
    if (this.shape !== 'responses') return { bytes: this.bytes, start: this.layout.start, ranges: this.layout.items };
    return this.items && this.itemRanges ? { bytes: this.bytes, start: this.layout.start, ranges: this.itemRanges, items: this.items } : undefined;
  }

  /**
   * Raw messages [from, to) as JSON array elements, comma-separated: the client's own bytes when the body was read by
   * layout (a Responses message is its items), else written from the parsed value.
   */
  rawJson(from: number, to: number): string {
    if (to <= from) return '';
    if (this.layout && this.bytes) return this.bytes.toString('utf8', this.layout.items[from][0], this.layout.items[to - 1][1]);
    const values = this.groups ? this.rawSlice(from, to).flatMap((m) => m as unknown[]) : this.rawSlice(from, to);
    return values.map((v) => JSON.stringify(v)).join(',');
  }

  /** Raw messages [from, to). */
  rawSlice(from: number, to: number = this.messageCount): unknown[] {
    return Array.from({ length: Math.max(0, to - from) }, (_, k) => this.raw(from + k));
  }

  /** Whether raw message i carries a `cache_control` marker (a text search: cheap, and parsing happens only when it does). */
  hasCacheMarker(i: number): boolean {
    if (!this.layout) return JSON.stringify(this.raw(i) ?? null).includes('"cache_control"');
    const [start, end] = this.layout.items[i];
    return this.bytes!.subarray(start, end).includes('"cache_control"');
  }

  /**
   * The indexes of the raw messages that carry a `cache_control` marker (see hasCacheMarker), in order: read by layout,
   * one search of the body's conversation bytes, however long the conversation.
   */
  cacheMarkedMessages(): number[] {
    if (!this.layout || !this.bytes) return Array.from({ length: this.messageCount }, (_, i) => i).filter((i) => this.hasCacheMarker(i));
    const items = this.layout.items;
    const out: number[] = [];
    let at = this.bytes.indexOf(CACHE_MARKER, this.layout.start);
    let k = 0;
    while (at >= 0 && at < this.layout.end) {
      // Items are in byte order: the first one ending after the marker's start holds it, if it starts before it.
      while (k < items.length && items[k][1] < at + CACHE_MARKER.length) k++;
      if (k >= items.length) break;
      if (items[k][0] <= at) {
        out.push(k);
        at = this.bytes.indexOf(CACHE_MARKER, items[k][1]);
        k++;
      } else at = this.bytes.indexOf(CACHE_MARKER, at + 1);
    }
    return out;
  }

  /** Whether there is a trailing assistant message (a prefill). */
  get prefill(): boolean {
    return this.end < this.messageCount;
  }

  /** Indexes of the conversation's messages (between the leading system prompts and a prefill). */
  get conversationLength(): number {
    return this.end - this.leading;
  }

  /** Raw message i in canonical form, parsed on first use; a message that does not parse is a 400 naming its fields. */
  message(i: number): CanonicalMessage {
    let out = this.parsed.get(i);
    if (out) return out;
    if (this.groups) {
      const [start, end] = this.groups[i];
      // A system group after the first conversation message is a mid-conversation developer message.
      const result = parseResponsesGroup(this.items!.slice(start, end), 'input', start, i > this.firstTurn);
      if (!result.ok) throw invalid(result.errors);
      this.parsed.set(i, result.value);
      return result.value;
    }
    const parse = this.provider === 'anthropic' ? parseAnthropicMessages : parseOpenAIMessages;
    const result = parse([this.raw(i)], 'messages');
    if (!result.ok) throw invalid(result.errors.map((p) => ({ ...p, field: p.field.replace(/^messages\[0\]/, `messages[${i}]`) })));
    out = result.value[0];
    this.parsed.set(i, out);
    return out;
  }

  /** Whether this is a Responses request chained by `previous_response_id` (the upstream holds its earlier turns). */
  get chained(): boolean {
    return this.shape === 'responses' && this.body.previous_response_id !== undefined && this.body.previous_response_id !== null;
  }

  /**
   * Raw messages [from, to) as the append path takes them: the provider's own messages, or for Responses the canonical
   * messages of their item groups (each keeps its items' own fields, so the history gives the same items back).
   */
  appendRows(from: number, to: number): { format: ProxyProvider | 'canonical'; rows: unknown[] } {
    if (this.shape !== 'responses') return { format: this.provider, rows: this.rawSlice(from, to) };
    return { format: 'canonical', rows: Array.from({ length: Math.max(0, to - from) }, (_, k) => this.message(from + k)) };
  }

  /**
   * A problem's field as the client sent it. Sequence checks name canonical blocks (`messages[i].blocks[j].toolUseId`, i a
   * message of this request); a Responses request's message i is a group of items, so the field becomes the item's
   * (`input[k].call_id`). Other shapes' fields are already theirs.
   */
  clientField(field: string): string {
    if (!this.groups || !field.startsWith('messages[')) return field;
    const close = field.indexOf(']');
    const i = Number(field.slice('messages['.length, close));
    const rest = field.slice(close + 1);
    if (!Number.isInteger(i) || i < 0 || i >= this.groups.length) return field;
    const [start, end] = this.groups[i];
    if (!rest.startsWith('.blocks[')) return end - start === 1 ? `input[${start}]` : `input[${start}..${end - 1}]`;
    const blockClose = rest.indexOf(']');
    const j = Number(rest.slice('.blocks['.length, blockClose));
    const leaf = rest.slice(blockClose + 1);
    // Which item of the group block j came from (each item's block count is in the message's extras).
    const shapes = (this.message(i).extras?.items ?? []) as Array<{ n: number }>;
    let item = 0;
    for (let seen = 0; item < shapes.length - 1 && seen + shapes[item].n <= j; item++) seen += shapes[item].n;
    const itemLeaf = leaf === '.toolUseId' || leaf === '.id' ? '.call_id' : '';
    return `input[${start + item}]${itemLeaf}`;
  }

  /** Conversation message k (0 = the first after the leading system prompts). */
  turn(k: number): CanonicalMessage {
    return this.message(this.leading + k);
  }

}

/** The value of the JSON in bytes [start, end), parsed by `parse` from a copy of them (transferable), or undefined when it gave none. */
async function parsedOffThread(
  bytes: Buffer,
  [start, end]: readonly [number, number],
  parse: (bytes: Buffer) => Promise<{ ok: boolean; value?: unknown }>,
): Promise<{ value: unknown } | undefined> {
  const copy = Buffer.allocUnsafeSlow(end - start);
  bytes.copy(copy, 0, start, end);
  const reply = await parse(copy);
  return reply.ok ? { value: reply.value } : undefined;
}

function isSystemItem(item: unknown): boolean {
  return isObject(item) && (item.type === undefined || item.type === 'message') && (item.role === 'system' || item.role === 'developer');
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  const text = Array.isArray(value) ? value[0] : value;
  return text === undefined || text.trim() === '' ? undefined : text.trim();
}

/** `X-Compactor-Session`: the session this conversation is recorded in (derived from its opening when absent). */
export function sessionIdHeader(headers: IncomingHttpHeaders): string | undefined {
  const id = header(headers, 'x-compactor-session');
  if (id !== undefined && !SESSION_ID_PATTERN.test(id)) {
    throw new ProxyError(400, 'invalid_session_id', 'Compactor proxy: X-Compactor-Session must be 1-128 characters of letters, digits, ".", "_", ":" or "-"');
  }
  return id;
}

/** `X-Compactor-Policy`: a preset name for a session the proxy creates (ignored for existing sessions). */
export function policyHeader(headers: IncomingHttpHeaders): PolicyInput | undefined {
  const value = header(headers, 'x-compactor-policy');
  if (value === undefined) return undefined;
  const parsed = policySchema.safeParse(value);
  if (!parsed.success) throw new ProxyError(400, 'invalid_policy', `Compactor proxy: X-Compactor-Policy ${parsed.error.issues[0]?.message ?? 'is not a preset name'}`);
  return parsed.data;
}
