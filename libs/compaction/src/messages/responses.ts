/**
 * OpenAI Responses API `input` items ⇄ canonical. The Responses API sends a flat list of items;
 * the canonical model has messages of one role whose tool calls and results sit in adjacent
 * messages. Consecutive items of one canonical role make one canonical message:
 * - `message` items (with or without `type`): role `user` → user, `system`/`developer` → system,
 *   `assistant` → assistant; each content part is a block (`input_text`/`output_text` → text,
 *   anything else kept opaque);
 * - `function_call` / `custom_tool_call` → a tool_use block of an assistant message (the call's
 *   `call_id` is the id), `function_call_output` / `custom_tool_call_output` → a tool_result block of
 *   a tool message, so a call and its output pair as tool_use/tool_result do (Guarantee 2);
 * - every other item (`reasoning` with its `encrypted_content`, OpenAI's `compaction` items,
 *   `item_reference`, web search calls, newer types) → an opaque block of an assistant message,
 *   kept whole and written back in place.
 * The message's extras keep each item's own fields (`id`, `status`, `type`, the role) in `items`,
 * one entry per item with its block count, so writing the message back gives the same items.
 * A message whose blocks a compaction stage removed or that came from another shape is written
 * from its blocks alone.
 */
import { FieldProblem } from '../errors';
import { Block, CanonicalMessage, ImageBlock, OpaqueBlock, Role, TextBlock, ToolResultBlock, ToolUseBlock } from './canonical';
import { checkToolId, checkToolName, extrasGoTo, isRecord, kindOf, ParseResult, Problems, safeJson } from './util';
import { OPENAI_TOOL_ERROR_PREFIX } from './openai';

type Item = Record<string, unknown>;

/** One item of a canonical message: its own fields (the modelled ones set to null, so their place in the key order is kept) and how many blocks it became. */
export interface ResponsesItemShape {
  n: number;
  item: Item;
  /** The message item's content was a plain string. */
  s?: true;
}

const CALL_ITEMS = new Set(['function_call', 'custom_tool_call']);
const OUTPUT_ITEMS = new Set(['function_call_output', 'custom_tool_call_output']);

/** The canonical role an input item belongs to, or undefined (with a problem) for one that is not an item. */
export function responsesItemRole(value: unknown): Role | undefined {
  if (!isRecord(value)) return undefined;
  const type = value.type ?? (value.role !== undefined ? 'message' : undefined);
  if (type === 'message') {
    if (value.role === 'user') return 'user';
    if (value.role === 'assistant') return 'assistant';
    if (value.role === 'system' || value.role === 'developer') return 'system';
    return undefined;
  }
  if (typeof type !== 'string') return undefined;
  if (OUTPUT_ITEMS.has(type)) return 'tool';
  return 'assistant';
}

/**
 * The items' grouping into canonical messages: [start, end) index ranges of consecutive items of
 * one role. An item that is no item (not an object, no type, an unknown role) is a group of its own,
 * so its parse names it.
 */
export function groupResponsesItems(items: readonly unknown[]): Array<[number, number]> {
  const groups: Array<[number, number]> = [];
  let start = 0;
  for (let i = 1; i <= items.length; i++) {
    const role = i < items.length ? responsesItemRole(items[i]) : undefined;
    const prev = responsesItemRole(items[i - 1]);
    if (i === items.length || role === undefined || prev === undefined || role !== prev) {
      groups.push([start, i]);
      start = i;
    }
  }
  return groups;
}

/** Without the keys set to null (placeholders for the modelled fields). */
const withPlaceholders = (item: Item, modelled: readonly string[]): Item => {
  const out: Item = {};
  for (const key of Object.keys(item)) out[key] = modelled.includes(key) ? null : item[key];
  return out;
};

function textPart(part: Item, defaultType: string): TextBlock {
  const extras: Item = {};
  for (const key of Object.keys(part)) {
    if (key === 'text') continue;
    if (key === 'type' && part.type === defaultType) continue;
    extras[key] = part[key];
  }
  return { type: 'text', text: part.text as string, ...(Object.keys(extras).length > 0 ? { extras, origin: 'responses' as const } : {}) };
}

function opaque(raw: unknown): OpaqueBlock {
  return { type: 'opaque', provider: 'responses', raw };
}

function parseParts(content: unknown[], path: string, defaultType: string, problems: Problems): Array<TextBlock | OpaqueBlock> {
  const out: Array<TextBlock | OpaqueBlock> = [];
  content.forEach((part, j) => {
    if (!isRecord(part)) problems.add(`${path}[${j}]`, `must be a content part object (got ${kindOf(part)})`);
    else if (typeof part.type !== 'string') problems.add(`${path}[${j}].type`, 'is required (a string)');
    else if ((part.type === 'input_text' || part.type === 'output_text') && typeof part.text !== 'string') problems.add(`${path}[${j}].text`, 'is required (a string)');
    else if (part.type === 'input_text' || part.type === 'output_text') out.push(textPart(part, defaultType));
    else out.push(opaque(part));
  });
  return out;
}

/** One item's blocks and shape, or undefined (with problems) when it is not a valid item. */
function parseItem(value: unknown, path: string, problems: Problems): { blocks: Block[]; shape: ResponsesItemShape } | undefined {
  if (!isRecord(value)) {
    problems.add(path, `must be an input item object (got ${kindOf(value)})`);
    return undefined;
  }
  const type = value.type ?? (value.role !== undefined ? 'message' : undefined);
  if (typeof type !== 'string') {
    problems.add(`${path}.type`, value.type === undefined ? 'is required (a string), or a role for a message' : `must be a string (got ${kindOf(value.type)})`);
    return undefined;
  }
  const before = problems.count;
  if (type === 'message') {
    const role = value.role;
    if (role !== 'user' && role !== 'assistant' && role !== 'system' && role !== 'developer') {
      problems.add(`${path}.role`, "must be 'user', 'assistant', 'system' or 'developer'");
      return undefined;
    }
    const defaultType = role === 'assistant' ? 'output_text' : 'input_text';
    const content = value.content;
    if (typeof content === 'string') return { blocks: [{ type: 'text', text: content }], shape: { n: 1, item: withPlaceholders(value, ['content']), s: true } };
    if (!Array.isArray(content)) {
      problems.add(`${path}.content`, content === undefined ? 'is required (a string or an array of content parts)' : `must be a string or an array of content parts (got ${kindOf(content)})`);
      return undefined;
    }
    const blocks = parseParts(content, `${path}.content`, defaultType, problems);
    return problems.count === before ? { blocks, shape: { n: blocks.length, item: withPlaceholders(value, ['content']) } } : undefined;
  }
  if (CALL_ITEMS.has(type)) {
    const id = checkToolId(value.call_id, `${path}.call_id`, problems);
    const name = checkToolName(value.name, `${path}.name`, problems);
    const argsKey = type === 'custom_tool_call' ? 'input' : 'arguments';
    const args = value[argsKey];
    if (typeof args !== 'string') problems.add(`${path}.${argsKey}`, args === undefined ? 'is required (a string)' : `must be a string (got ${kindOf(args)})`);
    if (id === undefined || name === undefined || typeof args !== 'string') return undefined;
    let input: unknown = args;
    if (type === 'function_call') {
      try {
        input = JSON.parse(args);
      } catch {
        input = args;
      }
    }
    const block: ToolUseBlock = { type: 'tool_use', id, name, input, argumentsText: args };
    return { blocks: [block], shape: { n: 1, item: withPlaceholders(value, ['call_id', 'name', argsKey]) } };
  }
  if (OUTPUT_ITEMS.has(type)) {
    const id = checkToolId(value.call_id, `${path}.call_id`, problems);
    const output = value.output;
    let content: ToolResultBlock['content'] | undefined;
    if (typeof output === 'string') content = output;
    else if (Array.isArray(output)) content = parseParts(output, `${path}.output`, 'input_text', problems);
    else problems.add(`${path}.output`, output === undefined ? 'is required (a string or an array of content parts)' : `must be a string or an array of content parts (got ${kindOf(output)})`);
    if (id === undefined || content === undefined || problems.count !== before) return undefined;
    return { blocks: [{ type: 'tool_result', toolUseId: id, content, isError: false }], shape: { n: 1, item: withPlaceholders(value, ['call_id', 'output']) } };
  }
  // reasoning (encrypted_content), compaction, item_reference, web_search_call, …: kept whole, written back in place.
  return { blocks: [opaque(value)], shape: { n: 1, item: {} } };
}

/**
 * A group of consecutive items of one role (see groupResponsesItems) as one canonical message.
 * `inConversation`: a system group after the conversation started (a mid-conversation developer message).
 */
export function parseResponsesGroup(items: readonly unknown[], path: string, firstIndex = 0, inConversation = false): ParseResult<CanonicalMessage> {
  const problems = new Problems();
  const blocks: Block[] = [];
  const shapes: ResponsesItemShape[] = [];
  let role: Role | undefined;
  items.forEach((value, k) => {
    const parsed = parseItem(value, `${path}[${firstIndex + k}]`, problems);
    if (!parsed) return;
    role ??= responsesItemRole(value);
    blocks.push(...parsed.blocks);
    shapes.push(parsed.shape);
  });
  const message: CanonicalMessage = {
    role: role ?? 'user',
    blocks,
    origin: 'responses',
    extras: { items: shapes },
    ...(role === 'system' && inConversation ? { inConversation: true } : {}),
  };
  return problems.result(message);
}

/** A whole Responses `input` (a string is one user message) as canonical messages, consecutive items of one role in one message. */
export function parseResponsesInput(input: unknown, path: string): ParseResult<CanonicalMessage[]> {
  const items = typeof input === 'string' ? [{ role: 'user', content: input }] : input;
  if (!Array.isArray(items)) return { ok: false, errors: [{ field: path, message: `must be a string or an array of input items (got ${kindOf(input)})` }] };
  const out: CanonicalMessage[] = [];
  const errors: FieldProblem[] = [];
  let started = false;
  for (const [start, end] of groupResponsesItems(items)) {
    const parsed = parseResponsesGroup(items.slice(start, end), path, start, started);
    if (!parsed.ok) errors.push(...parsed.errors);
    else {
      out.push(parsed.value);
      if (parsed.value.role !== 'system') started = true;
    }
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: out };
}

// ---------------------------------------------------------------------------------------------
// Serializing

function itemShapes(message: CanonicalMessage): ResponsesItemShape[] | undefined {
  if (message.origin !== 'responses' || !isRecord(message.extras) || !Array.isArray(message.extras.items)) return undefined;
  const shapes = message.extras.items as ResponsesItemShape[];
  const total = shapes.reduce((n, s) => n + (isRecord(s) && typeof s.n === 'number' ? s.n : NaN), 0);
  return total === message.blocks.length ? shapes : undefined;
}

function imageUrl(block: ImageBlock): string {
  return block.source.kind === 'base64' ? `data:${block.source.mediaType};base64,${block.source.data}` : block.source.url;
}

function partOut(block: Block, message: CanonicalMessage, defaultType: string): unknown {
  switch (block.type) {
    case 'text':
      return { type: defaultType, text: block.text, ...(block.extras && extrasGoTo(block, message, 'responses') ? block.extras : {}) };
    case 'image':
      return defaultType === 'input_text' ? { type: 'input_image', image_url: imageUrl(block) } : undefined;
    case 'opaque':
      return block.provider === 'responses' ? block.raw : undefined;
    default:
      return undefined;
  }
}

function resultOutput(block: ToolResultBlock, message: CanonicalMessage): unknown {
  const same = message.origin === 'responses';
  if (typeof block.content === 'string') return block.isError && !same ? `${OPENAI_TOOL_ERROR_PREFIX}${block.content}` : block.content;
  const parts = block.content.map((c) => partOut(c, message, 'input_text')).filter((p) => p !== undefined);
  if (same) return parts;
  const texts = block.content.filter((c): c is TextBlock => c.type === 'text');
  const text = texts.map((t) => t.text).join('\n');
  if (parts.length === texts.length) return block.isError ? `${OPENAI_TOOL_ERROR_PREFIX}${text}` : text;
  return parts;
}

function callOut(block: ToolUseBlock): Item {
  return { type: 'function_call', call_id: block.id, name: block.name, arguments: block.argumentsText ?? (typeof block.input === 'string' ? block.input : safeJson(block.input ?? {})) };
}

/** Whether an opaque Responses block is a whole item (reasoning, compaction, …) rather than a content part (`input_image`, `refusal`, …). */
function isWholeItem(raw: unknown): boolean {
  if (!isRecord(raw) || typeof raw.type !== 'string') return false;
  return !(raw.type.startsWith('input_') || raw.type.startsWith('output_') || raw.type === 'refusal' || raw.type === 'summary_text');
}

/** Items written from a message's blocks alone (from another shape, or changed by a compaction stage). */
function derivedItems(m: CanonicalMessage): unknown[] {
  const out: unknown[] = [];
  const role = m.role === 'system' ? 'developer' : m.role === 'assistant' ? 'assistant' : 'user';
  const defaultType = role === 'assistant' ? 'output_text' : 'input_text';
  let parts: unknown[] = [];
  const flush = () => {
    if (parts.length > 0) out.push({ type: 'message', role, content: parts });
    parts = [];
  };
  for (const b of m.blocks) {
    if (b.type === 'tool_use') {
      flush();
      out.push(callOut(b));
    } else if (b.type === 'tool_result') {
      flush();
      out.push({ type: 'function_call_output', call_id: b.toolUseId, output: resultOutput(b, m) });
    } else if (b.type === 'opaque' && b.provider === 'responses' && isWholeItem(b.raw)) {
      // A whole item kept opaque (reasoning, compaction, …), not a content part.
      flush();
      out.push(b.raw);
    } else if (b.type === 'text' && b.text === '' && m.origin !== 'responses') {
      continue;
    } else {
      const part = partOut(b, m, defaultType);
      if (part !== undefined) parts.push(part);
    }
  }
  flush();
  return out;
}

function itemsFromShapes(m: CanonicalMessage, shapes: ResponsesItemShape[]): unknown[] {
  const out: unknown[] = [];
  let at = 0;
  for (const shape of shapes) {
    const blocks = m.blocks.slice(at, at + shape.n);
    at += shape.n;
    const item: Item = { ...shape.item };
    const type = item.type ?? 'message';
    const first = blocks[0];
    if (Object.keys(item).length === 0 && first?.type === 'opaque') out.push(first.raw);
    else if (type === 'message') {
      const defaultType = item.role === 'assistant' ? 'output_text' : 'input_text';
      item.content = shape.s && first?.type === 'text' ? first.text : blocks.map((b) => partOut(b, m, defaultType)).filter((p) => p !== undefined);
      out.push(item);
    } else if (first?.type === 'tool_use') {
      item.call_id = first.id;
      item.name = first.name;
      if (type === 'custom_tool_call') item.input = typeof first.input === 'string' ? first.input : (first.argumentsText ?? safeJson(first.input));
      else item.arguments = callOut(first).arguments;
      out.push(item);
    } else if (first?.type === 'tool_result') {
      item.call_id = first.toolUseId;
      item.output = resultOutput(first, m);
      out.push(item);
    } else out.push(...derivedItems({ ...m, blocks }));
  }
  return out;
}

/**
 * Canonical → Responses `input` items. Messages parsed from Responses items give those items back;
 * others are written from their blocks: text as `message` items (system → `developer`), tool_use as
 * `function_call`, tool_result as `function_call_output`; thinking and other shapes' opaque blocks are
 * left out.
 */
export function toResponses(messages: readonly CanonicalMessage[]): unknown[] {
  const out: unknown[] = [];
  for (const m of messages) {
    const shapes = itemShapes(m);
    out.push(...(shapes ? itemsFromShapes(m, shapes) : derivedItems(m)));
  }
  return out;
}
