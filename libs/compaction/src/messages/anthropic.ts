/**
 * Anthropic Messages ⇄ canonical. Parsing keeps everything needed to write the same JSON
 * back (content string vs array, unknown fields in `extras`, unknown blocks as `opaque`);
 * `toAnthropic` writes provider fields only to their origin, merges adjacent same-role
 * turns that came from elsewhere, and always starts with a user turn.
 */
import {
  Block,
  CanonicalMessage,
  ImageBlock,
  ImageSource,
  OpaqueBlock,
  Provider,
  TextBlock,
  ToolResultBlock,
  ToolResultContent,
  ToolUseBlock,
} from './canonical';
import { imageSizeFromBase64 } from './image-size';
import {
  checkString,
  checkToolId,
  checkToolName,
  extrasGoTo,
  extrasOf,
  has,
  isRecord,
  kindOf,
  onlyKeys,
  ParseResult,
  Problems,
  safeJson,
  shortHash,
  withExtras,
} from './util';

// ---------------------------------------------------------------------------------------------
// Parsing

export function parseAnthropicMessages(input: unknown, path: string): ParseResult<CanonicalMessage[]> {
  const problems = new Problems();
  if (!Array.isArray(input)) {
    problems.add(path, `must be an array of messages (got ${kindOf(input)})`);
    return problems.result([]);
  }
  const out: CanonicalMessage[] = [];
  for (let i = 0; i < input.length && !problems.full; i++) {
    const message = parseAnthropicMessage(input[i], `${path}[${i}]`, problems);
    if (message) out.push(message);
  }
  return problems.result(out);
}

/** The `system` parameter: a string, or an array of text blocks (with cache_control etc.). */
export function parseAnthropicSystem(input: unknown, path: string): ParseResult<CanonicalMessage> {
  const problems = new Problems();
  const message: CanonicalMessage = { role: 'system', blocks: [], origin: 'anthropic' };
  if (typeof input === 'string') {
    message.blocks.push({ type: 'text', text: input });
    message.contentForm = 'string';
  } else if (Array.isArray(input)) {
    message.contentForm = 'parts';
    for (let j = 0; j < input.length && !problems.full; j++) {
      const item: unknown = input[j];
      const field = `${path}[${j}]`;
      if (!isRecord(item)) {
        problems.add(field, `must be a text block object (got ${kindOf(item)})`);
      } else if (item.type !== 'text') {
        problems.add(`${field}.type`, "must be 'text': the system prompt takes text blocks only");
      } else {
        const block = parseText(item, field, problems);
        if (block) message.blocks.push(block);
      }
    }
  } else {
    problems.add(path, `must be a string or an array of text blocks (got ${kindOf(input)})`);
  }
  return problems.result(message);
}

function parseAnthropicMessage(value: unknown, path: string, problems: Problems): CanonicalMessage | undefined {
  if (!isRecord(value)) {
    problems.add(path, `must be an object with role and content (got ${kindOf(value)})`);
    return undefined;
  }
  const before = problems.count;
  const role = value.role;
  if (role === undefined) problems.add(`${path}.role`, 'is required');
  else if (role !== 'user' && role !== 'assistant' && role !== 'system') problems.add(`${path}.role`, "must be 'user', 'assistant' or 'system'");
  // A `system` entry is a mid-conversation system message (Claude Opus 4.8 and later): kept where it is.
  const message: CanonicalMessage =
    role === 'system'
      ? { role: 'system', blocks: [], origin: 'anthropic', inConversation: true }
      : { role: role === 'assistant' ? 'assistant' : 'user', blocks: [], origin: 'anthropic' };
  const content = value.content;
  if (typeof content === 'string') {
    message.blocks.push({ type: 'text', text: content });
    message.contentForm = 'string';
  } else if (Array.isArray(content)) {
    message.contentForm = 'parts';
    // An empty system message is meaningful (Claude Code sends `content: []` with a per-turn `output_config`).
    if (content.length === 0 && role === 'user') problems.add(`${path}.content`, 'must contain at least one content block');
    for (let j = 0; j < content.length && !problems.full; j++) {
      const block = parseAnthropicBlock(content[j], `${path}.content[${j}]`, problems);
      if (block) message.blocks.push(block);
    }
  } else if (content === undefined) {
    problems.add(`${path}.content`, 'is required (a string or an array of content blocks)');
  } else {
    problems.add(`${path}.content`, `must be a string or an array of content blocks (got ${kindOf(content)})`);
  }
  const extras = extrasOf(value, ['role', 'content']);
  if (extras) message.extras = extras;
  return problems.count === before ? message : undefined;
}

function blockType(value: unknown, path: string, problems: Problems): string | undefined {
  if (!isRecord(value)) {
    problems.add(path, `must be a content block object (got ${kindOf(value)})`);
    return undefined;
  }
  if (typeof value.type !== 'string') {
    problems.add(`${path}.type`, value.type === undefined ? 'is required (a string)' : `must be a string (got ${kindOf(value.type)})`);
    return undefined;
  }
  return value.type;
}

function opaque(raw: unknown): OpaqueBlock {
  return { type: 'opaque', provider: 'anthropic', raw };
}

function parseText(value: Record<string, unknown>, path: string, problems: Problems): TextBlock | undefined {
  const text = checkString(value.text, `${path}.text`, problems);
  if (text === undefined) return undefined;
  return { type: 'text', text, ...withExtras(extrasOf(value, ['type', 'text']), 'anthropic') };
}

/** An image block, or an opaque block when its source is of a kind the canonical shape does not model (file ids, …). */
function parseImage(value: Record<string, unknown>, path: string, problems: Problems): ImageBlock | OpaqueBlock | undefined {
  const source = value.source;
  if (!isRecord(source)) {
    problems.add(`${path}.source`, `must be an object (got ${kindOf(source)})`);
    return undefined;
  }
  let parsed: ImageSource | undefined;
  if (source.type === 'base64') {
    const mediaType = checkString(source.media_type, `${path}.source.media_type`, problems);
    const data = checkString(source.data, `${path}.source.data`, problems);
    if (mediaType === undefined || data === undefined) return undefined;
    if (!onlyKeys(source, ['type', 'media_type', 'data'])) return opaque(value);
    parsed = { kind: 'base64', mediaType, data };
  } else if (source.type === 'url') {
    const url = checkString(source.url, `${path}.source.url`, problems);
    if (url === undefined) return undefined;
    if (!onlyKeys(source, ['type', 'url'])) return opaque(value);
    parsed = { kind: 'url', url };
  } else if (typeof source.type === 'string') {
    return opaque(value);
  } else {
    problems.add(`${path}.source.type`, 'must be a string');
    return undefined;
  }
  const size = parsed.kind === 'base64' ? imageSizeFromBase64(parsed.data) : undefined;
  return { type: 'image', source: parsed, ...size, ...withExtras(extrasOf(value, ['type', 'source']), 'anthropic') };
}

function parseToolResultContent(value: unknown, path: string, problems: Problems): ToolResultContent | undefined {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) {
    problems.add(path, `must be a string or an array of content blocks (got ${kindOf(value)})`);
    return undefined;
  }
  const out: Array<TextBlock | ImageBlock | OpaqueBlock> = [];
  const before = problems.count;
  for (let k = 0; k < value.length && !problems.full; k++) {
    const item: unknown = value[k];
    const field = `${path}[${k}]`;
    const type = blockType(item, field, problems);
    if (type === undefined || !isRecord(item)) continue;
    const block = type === 'text' ? parseText(item, field, problems) : type === 'image' ? parseImage(item, field, problems) : opaque(item);
    if (block) out.push(block);
  }
  return problems.count === before ? out : undefined;
}

function parseAnthropicBlock(value: unknown, path: string, problems: Problems): Block | undefined {
  const type = blockType(value, path, problems);
  if (type === undefined || !isRecord(value)) return undefined;
  switch (type) {
    case 'text':
      return parseText(value, path, problems);
    case 'image':
      return parseImage(value, path, problems);
    case 'tool_use': {
      const id = checkToolId(value.id, `${path}.id`, problems);
      const name = checkToolName(value.name, `${path}.name`, problems);
      const inputOk = isRecord(value.input);
      if (!inputOk) problems.add(`${path}.input`, `must be an object (got ${kindOf(value.input)})`);
      if (id === undefined || name === undefined || !inputOk) return undefined;
      const block: ToolUseBlock = { type: 'tool_use', id, name, input: value.input, ...withExtras(extrasOf(value, ['type', 'id', 'name', 'input']), 'anthropic') };
      return block;
    }
    case 'tool_result': {
      const toolUseId = checkToolId(value.tool_use_id, `${path}.tool_use_id`, problems);
      const contentOmitted = !has(value, 'content');
      const content = contentOmitted ? '' : parseToolResultContent(value.content, `${path}.content`, problems);
      const isErrorOmitted = !has(value, 'is_error');
      if (!isErrorOmitted && typeof value.is_error !== 'boolean') problems.add(`${path}.is_error`, `must be a boolean (got ${kindOf(value.is_error)})`);
      if (toolUseId === undefined || content === undefined || (!isErrorOmitted && typeof value.is_error !== 'boolean')) return undefined;
      const block: ToolResultBlock = {
        type: 'tool_result',
        toolUseId,
        content,
        isError: value.is_error === true,
        ...(contentOmitted ? { contentOmitted: true } : {}),
        ...(isErrorOmitted ? { isErrorOmitted: true } : {}),
        ...withExtras(extrasOf(value, ['type', 'tool_use_id', 'content', 'is_error']), 'anthropic'),
      };
      return block;
    }
    case 'thinking': {
      const thinking = checkString(value.thinking, `${path}.thinking`, problems);
      const signature = checkString(value.signature, `${path}.signature`, problems);
      if (thinking === undefined || signature === undefined) return undefined;
      return { type: 'thinking', thinking, signature, ...withExtras(extrasOf(value, ['type', 'thinking', 'signature']), 'anthropic') };
    }
    case 'redacted_thinking': {
      const data = checkString(value.data, `${path}.data`, problems);
      if (data === undefined) return undefined;
      return { type: 'redacted_thinking', data, ...withExtras(extrasOf(value, ['type', 'data']), 'anthropic') };
    }
    default:
      // document, search_result, server_tool_use, web_search_tool_result, container_upload, …: kept byte-exact, never validated.
      return opaque(value);
  }
}

// ---------------------------------------------------------------------------------------------
// Serializing

const ANTHROPIC_ID = /^[A-Za-z0-9_-]+$/;

/** Anthropic accepts tool ids of `[A-Za-z0-9_-]` only: other ids (OpenAI-compatible servers' `functions.x:0`) are rewritten deterministically. */
export function anthropicToolId(id: string): string {
  return ANTHROPIC_ID.test(id) ? id : `${id.replace(/[^A-Za-z0-9_-]/g, '_')}_${shortHash(id)}`;
}

/** Text that stands in for the first user turn when a conversation would start with the assistant. */
export const ANTHROPIC_FIRST_USER_PLACEHOLDER = '(conversation continues)';

type Out = Record<string, unknown>;

function extrasFor(block: { extras?: Record<string, unknown>; origin?: Provider }, message: CanonicalMessage): Out {
  return block.extras && extrasGoTo(block, message, 'anthropic') ? block.extras : {};
}

function imageOut(block: ImageBlock, message: CanonicalMessage): Out {
  const source =
    block.source.kind === 'base64'
      ? { type: 'base64', media_type: block.source.mediaType, data: block.source.data }
      : { type: 'url', url: block.source.url };
  return { type: 'image', source, ...extrasFor(block, message) };
}

/** Anthropic wants an object: OpenAI arguments that did not parse to one are wrapped, never lost. */
function anthropicInput(block: ToolUseBlock): unknown {
  if (isRecord(block.input)) return block.input;
  if (block.input === undefined || block.input === null) return {};
  const text = block.argumentsText ?? (typeof block.input === 'string' ? block.input : safeJson(block.input));
  return text.trim() === '' ? {} : { arguments: text };
}

function toolResultContentOut(block: ToolResultBlock, message: CanonicalMessage): unknown {
  if (typeof block.content === 'string') return block.content;
  const out: unknown[] = [];
  for (const item of block.content) {
    if (item.type === 'text') out.push({ type: 'text', text: item.text, ...extrasFor(item, message) });
    else if (item.type === 'image') out.push(imageOut(item, message));
    else if (item.provider === 'anthropic') out.push(item.raw);
  }
  return out;
}

function blockOut(block: Block, message: CanonicalMessage, crossing: boolean): unknown {
  switch (block.type) {
    case 'text':
      // Anthropic rejects empty text blocks; one that came from Anthropic is written back as received.
      if (crossing && block.text === '') return undefined;
      return { type: 'text', text: block.text, ...extrasFor(block, message) };
    case 'image':
      return imageOut(block, message);
    case 'tool_use':
      return { type: 'tool_use', id: anthropicToolId(block.id), name: block.name, input: anthropicInput(block), ...extrasFor(block, message) };
    case 'tool_result': {
      const keepOmitted = block.contentOmitted === true && block.content === '';
      const own = extrasGoTo(block, message, 'anthropic');
      const isError = block.isError ? { is_error: true } : block.isErrorOmitted || !own ? {} : { is_error: false };
      return {
        type: 'tool_result',
        tool_use_id: anthropicToolId(block.toolUseId),
        ...(keepOmitted ? {} : { content: toolResultContentOut(block, message) }),
        ...isError,
        ...extrasFor(block, message),
      };
    }
    case 'thinking':
      return { type: 'thinking', thinking: block.thinking, signature: block.signature, ...extrasFor(block, message) };
    case 'redacted_thinking':
      return { type: 'redacted_thinking', data: block.data, ...extrasFor(block, message) };
    case 'opaque':
      return block.provider === 'anthropic' ? block.raw : undefined;
  }
}

function isPlainText(block: Block | undefined): block is TextBlock {
  return block !== undefined && block.type === 'text' && block.extras === undefined;
}

/** The system prompt: a string when one message sent it as a string, else an array of text blocks. */
function systemOut(systems: CanonicalMessage[]): string | unknown[] | undefined {
  if (systems.length === 0) return undefined;
  if (systems.length === 1) {
    const only = systems[0];
    const form = only.contentForm ?? (only.blocks.length === 1 && isPlainText(only.blocks[0]) ? 'string' : 'parts');
    if (form === 'string' && only.blocks.length === 1 && only.blocks[0].type === 'text') return only.blocks[0].text;
  }
  const blocks: unknown[] = [];
  for (const m of systems) {
    for (const b of m.blocks) {
      if (b.type !== 'text') continue;
      if (b.text === '' && m.origin !== 'anthropic') continue;
      blocks.push({ type: 'text', text: b.text, ...extrasFor(b, m) });
    }
  }
  return blocks;
}

interface Turn {
  role: 'user' | 'assistant' | 'system';
  content: string | unknown[];
  extras: Out;
  fromAnthropic: boolean;
}

function asArray(content: string | unknown[]): unknown[] {
  if (typeof content !== 'string') return content;
  return content === '' ? [] : [{ type: 'text', text: content }];
}

/** Content of a message written as received: a string when it came as one, else its blocks. */
function contentOf(m: CanonicalMessage, blocks: unknown[]): string | unknown[] {
  const fromAnthropic = m.origin === 'anthropic';
  const form = m.contentForm === 'string' || (m.contentForm === undefined && m.blocks.length === 1 && isPlainText(m.blocks[0])) ? 'string' : 'parts';
  const single = m.blocks.length === 1 && m.blocks[0].type === 'text' ? m.blocks[0] : undefined;
  return form === 'string' && single && (fromAnthropic || single.text !== '') ? single.text : blocks;
}

/**
 * An in-conversation system message as Anthropic takes it in `messages`: `{role: 'system',
 * content, ...}` with its own fields (`cache_control`, Claude Code's `output_config`, `clear_at`)
 * and blocks (`tool_addition`, …) as received.
 */
export function anthropicSystemTurn(m: CanonicalMessage): Record<string, unknown> {
  const blocks: unknown[] = [];
  for (const b of m.blocks) {
    const out = blockOut(b, m, m.origin !== 'anthropic');
    if (out !== undefined) blocks.push(out);
  }
  return { role: 'system', content: contentOf(m, blocks), ...(m.origin === 'anthropic' && m.extras ? m.extras : {}) };
}

/** Whether a turn in the written list is an in-conversation system message that Anthropic accepts there (placement rules). */
function systemInPlace(turns: ReadonlyArray<{ role: string }>, x: number): boolean {
  const prev = turns[x - 1];
  const next = turns[x + 1];
  return prev !== undefined && prev.role === 'user' && (next === undefined || next.role === 'assistant');
}

/**
 * Whether each in-conversation system message of `messages` (written one per turn, as the proxy
 * does while nothing merges) sits where Anthropic accepts it: right after a user turn, and last or
 * before an assistant turn.
 */
export function inConversationSystemsInPlace(messages: readonly CanonicalMessage[]): boolean {
  const roles = messages.map((m) => ({ role: m.role === 'tool' ? 'user' : m.role }));
  return messages.every((m, x) => !(m.role === 'system' && m.inConversation) || systemInPlace(roles, x));
}

/**
 * Canonical → Anthropic request body (`system`, `messages`). System messages become `system`,
 * except in-conversation ones (Anthropic `role: "system"` entries of `messages`), which stay in
 * place while Anthropic's placement rules allow it: right after a user turn, and last or before an
 * assistant turn. One whose neighbours are gone (summarized, dropped) joins `system` instead.
 * Thinking, `cache_control`, citations and Anthropic-only blocks are written back; OpenAI-only
 * fields and blocks are left out. Adjacent same-role turns are merged unless both came from
 * Anthropic (the API took them that way and merges them itself), so a round trip gives back the
 * same array; a conversation that would start with the assistant gets a placeholder user turn first.
 */
export function toAnthropic(messages: CanonicalMessage[]): { system?: string | unknown[]; messages: unknown[] } {
  const systems = messages.filter((m) => m.role === 'system' && !m.inConversation);
  // Tool calls that cannot be written to Anthropic (OpenAI calls of unknown types): their results go too.
  const unwritable = new Set<string>();
  for (const m of messages) {
    for (const b of m.blocks) {
      if (b.type === 'opaque' && b.slot === 'tool_calls' && isRecord(b.raw) && typeof b.raw.id === 'string') unwritable.add(b.raw.id);
    }
  }

  const turns: Turn[] = [];
  const inConversation = new Map<Turn, CanonicalMessage>();
  for (const m of messages) {
    if (m.role === 'system') {
      if (!m.inConversation) continue;
      const { role: _role, content, ...extras } = anthropicSystemTurn(m);
      const turn: Turn = { role: 'system', content: content as string | unknown[], extras, fromAnthropic: true };
      inConversation.set(turn, m);
      turns.push(turn);
      continue;
    }
    const role = m.role === 'assistant' ? 'assistant' : 'user';
    const fromAnthropic = m.origin === 'anthropic';
    const blocks: unknown[] = [];
    for (const b of m.blocks) {
      if (b.type === 'tool_result' && unwritable.has(b.toolUseId)) continue;
      const out = blockOut(b, m, !fromAnthropic);
      if (out !== undefined) blocks.push(out);
    }
    const content = contentOf(m, blocks);
    if (!fromAnthropic && asArray(content).length === 0) continue; // nothing of it can be written here
    turns.push({ role, content, extras: fromAnthropic && m.extras ? m.extras : {}, fromAnthropic });
  }

  // In-conversation system messages that Anthropic would not take where they are join `system`, in order.
  const moved: CanonicalMessage[] = [];
  const placed: Turn[] = [];
  turns.forEach((turn, x) => {
    const message = inConversation.get(turn);
    if (!message || (placed.length > 0 && systemInPlace([...placed, turn, ...turns.slice(x + 1, x + 2)], placed.length))) placed.push(turn);
    // Only its text can go to `system` (an empty one, or a tool change, has no place there).
    else if (message.blocks.some((b) => b.type === 'text' && b.text !== '')) moved.push(message);
  });

  const merged: Turn[] = [];
  for (const turn of placed) {
    const last = merged[merged.length - 1];
    if (last && last.role === turn.role && turn.role !== 'system' && !(last.fromAnthropic && turn.fromAnthropic)) {
      merged[merged.length - 1] = {
        role: last.role,
        content: [...asArray(last.content), ...asArray(turn.content)],
        extras: last.extras,
        fromAnthropic: false,
      };
    } else {
      merged.push(turn);
    }
  }
  if (merged.length > 0 && merged[0].role === 'assistant' && !merged[0].fromAnthropic) {
    merged.unshift({ role: 'user', content: ANTHROPIC_FIRST_USER_PLACEHOLDER, extras: {}, fromAnthropic: false });
  }

  const movedSet = new Set(moved);
  const system = systemOut(moved.length === 0 ? systems : messages.filter((m) => m.role === 'system' && (!m.inConversation || movedSet.has(m))));
  return {
    ...(system !== undefined ? { system } : {}),
    messages: merged.map((t) => ({ role: t.role, content: t.content, ...t.extras })),
  };
}
