/**
 * OpenAI Chat Completions ⇄ canonical. Each OpenAI message is one canonical message (a `tool`
 * message is a canonical `tool` message with one tool_result); `developer` is kept as a
 * system message whose extras say `role: 'developer'`; tool call arguments are kept
 * byte-exact in `argumentsText`.
 */
import { Block, CanonicalMessage, ImageBlock, ImageSource, OpaqueBlock, Provider, TextBlock, ToolResultBlock, ToolUseBlock } from './canonical';
import { imageSizeFromBase64 } from './image-size';
import {
  checkToolId,
  checkToolName,
  extrasGoTo,
  extrasOf,
  isRecord,
  kindOf,
  onlyKeys,
  ParseResult,
  Problems,
  safeJson,
  withExtras,
} from './util';

// ---------------------------------------------------------------------------------------------
// Parsing

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool'];

export function parseOpenAIMessages(input: unknown, path: string): ParseResult<CanonicalMessage[]> {
  const problems = new Problems();
  if (!Array.isArray(input)) {
    problems.add(path, `must be an array of messages (got ${kindOf(input)})`);
    return problems.result([]);
  }
  const out: CanonicalMessage[] = [];
  for (let i = 0; i < input.length && !problems.full; i++) {
    const message = parseOpenAIMessage(input[i], `${path}[${i}]`, problems);
    if (message) out.push(message);
  }
  return problems.result(out);
}

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

function opaque(raw: unknown): OpaqueBlock {
  return { type: 'opaque', provider: 'openai', raw };
}

type PartContext = 'system' | 'user' | 'assistant' | 'tool';

function parsePart(value: unknown, path: string, context: PartContext, problems: Problems): TextBlock | ImageBlock | OpaqueBlock | undefined {
  if (!isRecord(value)) {
    problems.add(path, `must be a content part object (got ${kindOf(value)})`);
    return undefined;
  }
  if (typeof value.type !== 'string') {
    problems.add(`${path}.type`, value.type === undefined ? 'is required (a string)' : `must be a string (got ${kindOf(value.type)})`);
    return undefined;
  }
  if (value.type === 'text') {
    if (typeof value.text !== 'string') {
      problems.add(`${path}.text`, value.text === undefined ? 'is required (a string)' : `must be a string (got ${kindOf(value.text)})`);
      return undefined;
    }
    return { type: 'text', text: value.text, ...withExtras(extrasOf(value, ['type', 'text']), 'openai') };
  }
  if (value.type === 'image_url' && context === 'user') {
    const image = value.image_url;
    if (!isRecord(image) || typeof image.url !== 'string') {
      problems.add(isRecord(image) ? `${path}.image_url.url` : `${path}.image_url`, isRecord(image) ? 'must be a string' : 'must be an object with a string url');
      return undefined;
    }
    // Anything beyond {url, detail} is kept whole, so nothing is lost.
    if (!onlyKeys(value, ['type', 'image_url']) || !onlyKeys(image, ['url', 'detail'])) return opaque(value);
    const match = DATA_URL.exec(image.url);
    const source: ImageSource = match ? { kind: 'base64', mediaType: match[1], data: match[2] } : { kind: 'url', url: image.url };
    const size = source.kind === 'base64' ? imageSizeFromBase64(source.data) : undefined;
    return { type: 'image', source, ...size, ...withExtras(extrasOf(image, ['url']), 'openai') };
  }
  // input_audio, file, refusal, and anything newer: kept byte-exact.
  return opaque(value);
}

function parseParts(value: unknown[], path: string, context: PartContext, problems: Problems): Array<TextBlock | ImageBlock | OpaqueBlock> {
  const out: Array<TextBlock | ImageBlock | OpaqueBlock> = [];
  for (let j = 0; j < value.length && !problems.full; j++) {
    const part = parsePart(value[j], `${path}[${j}]`, context, problems);
    if (part) out.push(part);
  }
  return out;
}

function parseToolCall(value: unknown, path: string, problems: Problems): ToolUseBlock | OpaqueBlock | undefined {
  if (!isRecord(value)) {
    problems.add(path, `must be a tool call object (got ${kindOf(value)})`);
    return undefined;
  }
  if (value.type !== undefined && typeof value.type !== 'string') {
    problems.add(`${path}.type`, `must be a string (got ${kindOf(value.type)})`);
    return undefined;
  }
  if (value.type !== 'function') {
    if (value.type === undefined) {
      problems.add(`${path}.type`, "is required ('function')");
      return undefined;
    }
    // A call of another type (`custom`, …): kept whole; its id still names the call.
    checkToolId(value.id, `${path}.id`, problems);
    return { type: 'opaque', provider: 'openai', raw: value, slot: 'tool_calls' };
  }
  const id = checkToolId(value.id, `${path}.id`, problems);
  const fn = value.function;
  if (!isRecord(fn)) {
    problems.add(`${path}.function`, `must be an object with name and arguments (got ${kindOf(fn)})`);
    return undefined;
  }
  const name = checkToolName(fn.name, `${path}.function.name`, problems);
  if (typeof fn.arguments !== 'string') {
    problems.add(`${path}.function.arguments`, fn.arguments === undefined ? 'is required (a JSON string)' : `must be a string (got ${kindOf(fn.arguments)})`);
    return undefined;
  }
  if (id === undefined || name === undefined) return undefined;
  let input: unknown;
  try {
    input = JSON.parse(fn.arguments);
  } catch {
    input = fn.arguments;
  }
  let extras = extrasOf(value, ['id', 'type', 'function']);
  // Unknown fields inside `function` are kept by keeping the whole object (it is written back as is).
  if (!onlyKeys(fn, ['name', 'arguments'])) extras = { ...extras, function: fn };
  return { type: 'tool_use', id, name, input, argumentsText: fn.arguments, ...withExtras(extras, 'openai') };
}

function parseOpenAIMessage(value: unknown, path: string, problems: Problems): CanonicalMessage | undefined {
  if (!isRecord(value)) {
    problems.add(path, `must be an object with a role (got ${kindOf(value)})`);
    return undefined;
  }
  const before = problems.count;
  const role = value.role;
  if (role === undefined) {
    problems.add(`${path}.role`, 'is required');
    return undefined;
  }
  if (typeof role !== 'string' || !ROLES.includes(role)) {
    problems.add(
      `${path}.role`,
      role === 'function'
        ? "the legacy 'function' role is not supported: send tool results as role 'tool' with tool_call_id"
        : `must be one of ${ROLES.map((r) => `'${r}'`).join(', ')}`,
    );
    return undefined;
  }
  const content = value.content;
  const message: CanonicalMessage = { role: role === 'developer' ? 'system' : (role as CanonicalMessage['role']), blocks: [], origin: 'openai' };
  const known = ['role', 'content'];

  if (role === 'tool') {
    known.push('tool_call_id');
    let toolUseId: string | undefined;
    let from: 'tool_call_ids' | undefined;
    if (value.tool_call_id !== undefined) {
      toolUseId = checkToolId(value.tool_call_id, `${path}.tool_call_id`, problems);
    } else if (Array.isArray(value.tool_call_ids) && value.tool_call_ids.length === 1) {
      // SWE-agent names the call in `tool_call_ids` (kept in extras) and sends no tool_call_id.
      toolUseId = checkToolId(value.tool_call_ids[0], `${path}.tool_call_ids[0]`, problems);
      from = 'tool_call_ids';
    } else {
      problems.add(`${path}.tool_call_id`, 'is required (the id of the tool call this message answers)');
    }
    let resultContent: ToolResultBlock['content'] | undefined;
    if (typeof content === 'string') {
      resultContent = content;
      message.contentForm = 'string';
    } else if (Array.isArray(content)) {
      resultContent = parseParts(content, `${path}.content`, 'tool', problems) as ToolResultBlock['content'];
      message.contentForm = 'parts';
    } else {
      problems.add(`${path}.content`, content === undefined ? 'is required (a string or an array of text parts)' : `must be a string or an array of text parts (got ${kindOf(content)})`);
    }
    if (toolUseId !== undefined && resultContent !== undefined) {
      message.blocks.push({ type: 'tool_result', toolUseId, content: resultContent, isError: false, ...(from ? { toolUseIdFrom: from } : {}) });
    }
  } else if (role === 'assistant') {
    if (content === undefined) message.contentForm = 'absent';
    else if (content === null) message.contentForm = 'null';
    else if (typeof content === 'string') {
      message.contentForm = 'string';
      message.blocks.push({ type: 'text', text: content });
    } else if (Array.isArray(content)) {
      message.contentForm = 'parts';
      message.blocks.push(...parseParts(content, `${path}.content`, 'assistant', problems));
    } else {
      problems.add(`${path}.content`, `must be a string, null or an array of parts (got ${kindOf(content)})`);
    }
    const calls = value.tool_calls;
    if (Array.isArray(calls) && calls.length > 0) {
      known.push('tool_calls');
      for (let k = 0; k < calls.length && !problems.full; k++) {
        const call = parseToolCall(calls[k], `${path}.tool_calls[${k}]`, problems);
        if (call) message.blocks.push(call);
      }
    } else if (calls !== undefined && calls !== null && !Array.isArray(calls)) {
      problems.add(`${path}.tool_calls`, `must be an array of tool calls (got ${kindOf(calls)})`);
    }
    // An empty or null `tool_calls` stays in extras, so it comes back as sent.
  } else {
    // system, developer, user
    if (typeof content === 'string') {
      message.contentForm = 'string';
      message.blocks.push({ type: 'text', text: content });
    } else if (Array.isArray(content)) {
      message.contentForm = 'parts';
      if (content.length === 0) problems.add(`${path}.content`, 'must contain at least one part');
      message.blocks.push(...parseParts(content, `${path}.content`, role === 'user' ? 'user' : 'system', problems));
    } else {
      problems.add(`${path}.content`, content === undefined ? 'is required (a string or an array of parts)' : `must be a string or an array of parts (got ${kindOf(content)})`);
    }
  }

  const rest = extrasOf(value, known);
  const extras = role === 'developer' ? { ...rest, role: 'developer' } : rest;
  if (extras) message.extras = extras;
  return problems.count === before ? message : undefined;
}

// ---------------------------------------------------------------------------------------------
// Serializing

type Out = Record<string, unknown>;

/** Prefix given to a failed tool result's content when it goes to OpenAI, which has no error flag. */
export const OPENAI_TOOL_ERROR_PREFIX = 'Error: ';

function extrasFor(block: { extras?: Record<string, unknown>; origin?: Provider }, message: CanonicalMessage): Out {
  return block.extras && extrasGoTo(block, message, 'openai') ? block.extras : {};
}

function imageUrl(block: ImageBlock): string {
  return block.source.kind === 'base64' ? `data:${block.source.mediaType};base64,${block.source.data}` : block.source.url;
}

function partOut(block: Block, message: CanonicalMessage, allowImages: boolean): unknown {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text, ...extrasFor(block, message) };
    case 'image':
      return allowImages ? { type: 'image_url', image_url: { url: imageUrl(block), ...extrasFor(block, message) } } : undefined;
    case 'opaque':
      return block.provider === 'openai' && block.slot === undefined ? block.raw : undefined;
    default:
      return undefined;
  }
}

function toolCallOut(block: ToolUseBlock, message: CanonicalMessage): Out {
  const args = block.argumentsText ?? (typeof block.input === 'string' ? block.input : safeJson(block.input ?? {}));
  return { id: block.id, type: 'function', function: { name: block.name, arguments: args }, ...extrasFor(block, message) };
}

/**
 * Content from text parts. Back to OpenAI: the form it came in. From elsewhere: a single
 * text is written as a string (what every OpenAI-compatible server takes), more as parts.
 */
function textualContent(parts: unknown[], blocks: Block[], message: CanonicalMessage, same: boolean): string | unknown[] {
  const single = blocks.length === 1 && blocks[0].type === 'text' ? blocks[0] : undefined;
  if (!single) return parts;
  if (same && message.contentForm === 'parts') return parts;
  return single.text;
}

/** One tool message per tool_result; images in the result cannot go in a tool message and are returned for a user message. */
function toolMessage(block: ToolResultBlock, message: CanonicalMessage, same: boolean, images: unknown[]): Out {
  let content: string | unknown[];
  if (typeof block.content === 'string') {
    content = block.content;
  } else {
    const parts: unknown[] = [];
    for (const item of block.content) {
      if (item.type === 'image') images.push(partOut(item, message, true));
      else {
        const part = partOut(item, message, false);
        if (part !== undefined) parts.push(part);
      }
    }
    const texts = block.content.filter((b): b is TextBlock => b.type === 'text');
    if (same) content = parts;
    else if (parts.length === 0) content = '';
    else if (parts.length === 1 && texts.length === 1) content = texts[0].text;
    else content = parts;
  }
  if (block.isError && !same) {
    if (typeof content === 'string') content = `${OPENAI_TOOL_ERROR_PREFIX}${content}`;
    else {
      const first = content[0] as { type?: unknown; text?: unknown } | undefined;
      content =
        first && first.type === 'text' && typeof first.text === 'string'
          ? [{ ...first, text: `${OPENAI_TOOL_ERROR_PREFIX}${first.text}` }, ...content.slice(1)]
          : [{ type: 'text', text: OPENAI_TOOL_ERROR_PREFIX }, ...content];
    }
  }
  return {
    role: 'tool',
    ...(block.toolUseIdFrom ? {} : { tool_call_id: block.toolUseId }),
    content,
    ...(same && message.role === 'tool' && message.extras ? message.extras : {}),
  };
}

/**
 * Canonical → OpenAI Chat Completions `messages`. A user message that carries tool_result
 * blocks (Anthropic style) becomes one `tool` message per result, then a user message with
 * the rest (and any images the results held). Thinking, redacted thinking, Anthropic-only
 * blocks and `cache_control` are left out; a message left with nothing is not written.
 */
export function toOpenAI(messages: CanonicalMessage[]): unknown[] {
  const out: unknown[] = [];
  for (const m of messages) {
    const same = m.origin === 'openai';
    const extras = same && m.extras ? m.extras : {};
    if (m.role === 'tool' || m.role === 'user') {
      const images: unknown[] = [];
      const rest: Block[] = [];
      for (const b of m.blocks) {
        if (b.type === 'tool_result') out.push(toolMessage(b, m, same, images));
        else rest.push(b);
      }
      if (m.role === 'tool') {
        for (const b of rest) {
          const part = partOut(b, m, true);
          if (part !== undefined) images.push(part);
        }
        if (images.length > 0) out.push({ role: 'user', content: images });
        continue;
      }
      const parts: unknown[] = [...images];
      for (const b of rest) {
        const part = partOut(b, m, true);
        if (part !== undefined) parts.push(part);
      }
      const hadResults = rest.length !== m.blocks.length;
      if (parts.length === 0 && (hadResults || !same)) continue;
      const content = images.length > 0 ? parts : textualContent(parts, rest, m, same);
      out.push({ role: 'user', content, ...(hadResults ? {} : extras) });
    } else if (m.role === 'system') {
      const parts: unknown[] = [];
      const texts: Block[] = [];
      for (const b of m.blocks) {
        if (b.type !== 'text' && !(b.type === 'opaque' && same)) continue;
        const part = partOut(b, m, false);
        if (part !== undefined) {
          parts.push(part);
          texts.push(b);
        }
      }
      if (parts.length === 0 && !same) continue;
      out.push({ role: 'system', content: textualContent(parts, texts, m, same), ...extras });
    } else {
      const parts: unknown[] = [];
      const contentBlocks: Block[] = [];
      const calls: unknown[] = [];
      for (const b of m.blocks) {
        if (b.type === 'tool_use') calls.push(toolCallOut(b, m));
        else if (b.type === 'opaque' && b.slot === 'tool_calls') {
          if (b.provider === 'openai') calls.push(b.raw);
        } else {
          if (!same && b.type === 'text' && b.text === '') continue;
          const part = partOut(b, m, false);
          if (part !== undefined) {
            parts.push(part);
            contentBlocks.push(b);
          }
        }
      }
      let content: { content?: unknown } = {};
      if (same && m.contentForm === 'absent' && parts.length === 0) content = {};
      else if (same && m.contentForm === 'null' && parts.length === 0) content = { content: null };
      else if (parts.length === 0) {
        if (calls.length === 0 && !same) continue; // only thinking or Anthropic-only blocks: nothing to write
        content = { content: calls.length > 0 ? null : '' };
      } else content = { content: textualContent(parts, contentBlocks, m, same) };
      out.push({ role: 'assistant', ...content, ...extras, ...(calls.length > 0 ? { tool_calls: calls } : {}) });
    }
  }
  return out;
}
