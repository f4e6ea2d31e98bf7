/**
 * Validation of messages posted in canonical form. The result holds only the canonical
 * fields (rebuilt, so stray fields such as `seq` or `tokens` from a history read are not
 * stored); opaque blocks stay byte-exact.
 */
import { Block, CanonicalMessage, ImageBlock, OpaqueBlock, Provider, Role, TextBlock, ToolResultBlock } from './canonical';
import { imageSizeFromBase64 } from './image-size';
import { checkString, checkToolId, checkToolName, has, isRecord, kindOf, ParseResult, Problems } from './util';

const ROLES: Role[] = ['system', 'user', 'assistant', 'tool'];
const PROVIDERS: Provider[] = ['anthropic', 'openai', 'responses'];
const FORMS = ['string', 'parts', 'null', 'absent'] as const;

export function parseCanonicalMessages(input: unknown, path: string): ParseResult<CanonicalMessage[]> {
  const problems = new Problems();
  if (!Array.isArray(input)) {
    problems.add(path, `must be an array of messages (got ${kindOf(input)})`);
    return problems.result([]);
  }
  const out: CanonicalMessage[] = [];
  for (let i = 0; i < input.length && !problems.full; i++) {
    const message = parseMessage(input[i], `${path}[${i}]`, problems);
    if (message) out.push(message);
  }
  return problems.result(out);
}

function optionalBoolean(obj: Record<string, unknown>, key: string, path: string, problems: Problems): boolean | undefined {
  if (!has(obj, key) || obj[key] === undefined) return undefined;
  if (typeof obj[key] === 'boolean') return obj[key];
  problems.add(`${path}.${key}`, `must be a boolean (got ${kindOf(obj[key])})`);
  return undefined;
}

function optionalExtras(obj: Record<string, unknown>, path: string, problems: Problems): Record<string, unknown> | undefined {
  if (!has(obj, 'extras') || obj.extras === undefined) return undefined;
  if (isRecord(obj.extras)) return obj.extras;
  problems.add(`${path}.extras`, `must be an object (got ${kindOf(obj.extras)})`);
  return undefined;
}

function optionalOrigin(obj: Record<string, unknown>, path: string, problems: Problems): Provider | undefined {
  if (!has(obj, 'origin') || obj.origin === undefined) return undefined;
  if (PROVIDERS.includes(obj.origin as Provider)) return obj.origin as Provider;
  problems.add(`${path}.origin`, "must be 'anthropic', 'openai' or 'responses'");
  return undefined;
}

/** `extras` and `origin` of a block, copied when present. */
function extrasFields(obj: Record<string, unknown>, path: string, problems: Problems): { extras?: Record<string, unknown>; origin?: Provider } {
  const extras = optionalExtras(obj, path, problems);
  const origin = optionalOrigin(obj, path, problems);
  return { ...(extras ? { extras } : {}), ...(origin ? { origin } : {}) };
}

function parseMessage(value: unknown, path: string, problems: Problems): CanonicalMessage | undefined {
  if (!isRecord(value)) {
    problems.add(path, `must be an object with role and blocks (got ${kindOf(value)})`);
    return undefined;
  }
  const before = problems.count;
  const role = value.role;
  if (role === undefined) problems.add(`${path}.role`, 'is required');
  else if (!ROLES.includes(role as Role)) problems.add(`${path}.role`, `must be one of ${ROLES.map((r) => `'${r}'`).join(', ')}`);
  const blocks: Block[] = [];
  if (!Array.isArray(value.blocks)) {
    problems.add(`${path}.blocks`, value.blocks === undefined ? 'is required (an array of blocks)' : `must be an array of blocks (got ${kindOf(value.blocks)})`);
  } else {
    if (value.blocks.length === 0 && role !== 'assistant') problems.add(`${path}.blocks`, 'must contain at least one block');
    for (let j = 0; j < value.blocks.length && !problems.full; j++) {
      const block = parseBlock(value.blocks[j], `${path}.blocks[${j}]`, problems, false);
      if (block) blocks.push(block);
    }
  }
  const message: CanonicalMessage = { role: role as Role, blocks };
  if (has(value, 'contentForm') && value.contentForm !== undefined) {
    if (FORMS.includes(value.contentForm as (typeof FORMS)[number])) message.contentForm = value.contentForm as (typeof FORMS)[number];
    else problems.add(`${path}.contentForm`, `must be one of ${FORMS.map((f) => `'${f}'`).join(', ')}`);
  }
  const pinned = optionalBoolean(value, 'pinned', path, problems);
  if (pinned !== undefined) message.pinned = pinned;
  const inConversation = optionalBoolean(value, 'inConversation', path, problems);
  if (inConversation && role !== 'system') problems.add(`${path}.inConversation`, "applies to system messages only (a system message that sits in the conversation)");
  else if (inConversation) message.inConversation = true;
  if (has(value, 'tags') && value.tags !== undefined) {
    const tags = value.tags;
    if (!Array.isArray(tags) || !tags.every((t) => typeof t === 'string' && t.length > 0 && t.length <= 64) || tags.length > 32) {
      problems.add(`${path}.tags`, 'must be an array of at most 32 strings of 1–64 characters');
    } else message.tags = tags as string[];
  }
  const extras = optionalExtras(value, path, problems);
  if (extras) message.extras = extras;
  const origin = optionalOrigin(value, path, problems);
  if (origin) message.origin = origin;
  return problems.count === before ? message : undefined;
}

function parseImage(value: Record<string, unknown>, path: string, problems: Problems): ImageBlock | undefined {
  const source = value.source;
  let block: ImageBlock | undefined;
  if (isRecord(source) && source.kind === 'base64') {
    const mediaType = checkString(source.mediaType, `${path}.source.mediaType`, problems);
    const data = checkString(source.data, `${path}.source.data`, problems);
    if (mediaType !== undefined && data !== undefined) block = { type: 'image', source: { kind: 'base64', mediaType, data } };
  } else if (isRecord(source) && source.kind === 'url') {
    const url = checkString(source.url, `${path}.source.url`, problems);
    if (url !== undefined) block = { type: 'image', source: { kind: 'url', url } };
  } else {
    problems.add(`${path}.source`, "must be {kind:'base64', mediaType, data} or {kind:'url', url}");
  }
  if (!block) return undefined;
  for (const key of ['width', 'height'] as const) {
    const v = value[key];
    if (v === undefined) continue;
    if (typeof v === 'number' && Number.isInteger(v) && v > 0 && v <= 1_000_000) block[key] = v;
    else problems.add(`${path}.${key}`, 'must be a positive integer');
  }
  if (block.width === undefined && block.height === undefined && block.source.kind === 'base64') {
    Object.assign(block, imageSizeFromBase64(block.source.data));
  }
  return { ...block, ...extrasFields(value, path, problems) };
}

function parseBlock(value: unknown, path: string, problems: Problems, inResult: boolean): Block | undefined {
  if (!isRecord(value)) {
    problems.add(path, `must be a block object (got ${kindOf(value)})`);
    return undefined;
  }
  const before = problems.count;
  const type = value.type;
  const allowed = inResult ? ['text', 'image', 'opaque'] : ['text', 'image', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking', 'opaque'];
  let block: Block | undefined;
  switch (typeof type === 'string' && allowed.includes(type) ? type : '') {
    case 'text': {
      const text = checkString(value.text, `${path}.text`, problems);
      if (text !== undefined) block = { type: 'text', text, ...extrasFields(value, path, problems) };
      break;
    }
    case 'image':
      block = parseImage(value, path, problems);
      break;
    case 'tool_use': {
      const id = checkToolId(value.id, `${path}.id`, problems);
      const name = checkToolName(value.name, `${path}.name`, problems);
      if (!has(value, 'input')) problems.add(`${path}.input`, 'is required');
      let argumentsText: string | undefined;
      if (value.argumentsText !== undefined) argumentsText = checkString(value.argumentsText, `${path}.argumentsText`, problems);
      if (id !== undefined && name !== undefined) {
        block = { type: 'tool_use', id, name, input: value.input, ...(argumentsText !== undefined ? { argumentsText } : {}), ...extrasFields(value, path, problems) };
      }
      break;
    }
    case 'tool_result': {
      const toolUseId = checkToolId(value.toolUseId, `${path}.toolUseId`, problems);
      let content: ToolResultBlock['content'] | undefined;
      if (typeof value.content === 'string') content = value.content;
      else if (Array.isArray(value.content)) {
        const items: Array<TextBlock | ImageBlock | OpaqueBlock> = [];
        for (let k = 0; k < value.content.length && !problems.full; k++) {
          const item = parseBlock(value.content[k], `${path}.content[${k}]`, problems, true);
          if (item) items.push(item as TextBlock | ImageBlock | OpaqueBlock);
        }
        content = items;
      } else problems.add(`${path}.content`, `must be a string or an array of text, image and opaque blocks (got ${kindOf(value.content)})`);
      const isError = optionalBoolean(value, 'isError', path, problems);
      const contentOmitted = optionalBoolean(value, 'contentOmitted', path, problems);
      const isErrorOmitted = optionalBoolean(value, 'isErrorOmitted', path, problems);
      if (value.toolUseIdFrom !== undefined && value.toolUseIdFrom !== 'tool_call_ids') problems.add(`${path}.toolUseIdFrom`, "must be 'tool_call_ids'");
      if (toolUseId !== undefined && content !== undefined) {
        block = {
          type: 'tool_result',
          toolUseId,
          content,
          isError: isError ?? false,
          ...(contentOmitted ? { contentOmitted } : {}),
          ...(isErrorOmitted ? { isErrorOmitted } : {}),
          ...(value.toolUseIdFrom === 'tool_call_ids' ? { toolUseIdFrom: 'tool_call_ids' as const } : {}),
          ...extrasFields(value, path, problems),
        };
      }
      break;
    }
    case 'thinking': {
      const thinking = checkString(value.thinking, `${path}.thinking`, problems);
      const signature = checkString(value.signature, `${path}.signature`, problems);
      if (thinking !== undefined && signature !== undefined) block = { type: 'thinking', thinking, signature, ...extrasFields(value, path, problems) };
      break;
    }
    case 'redacted_thinking': {
      const data = checkString(value.data, `${path}.data`, problems);
      if (data !== undefined) block = { type: 'redacted_thinking', data, ...extrasFields(value, path, problems) };
      break;
    }
    case 'opaque': {
      if (!PROVIDERS.includes(value.provider as Provider)) problems.add(`${path}.provider`, "must be 'anthropic', 'openai' or 'responses'");
      if (!has(value, 'raw')) problems.add(`${path}.raw`, 'is required (the provider block as received)');
      if (value.slot !== undefined && value.slot !== 'tool_calls') problems.add(`${path}.slot`, "must be 'tool_calls'");
      if (PROVIDERS.includes(value.provider as Provider) && has(value, 'raw')) {
        block = { type: 'opaque', provider: value.provider as Provider, raw: value.raw, ...(value.slot === 'tool_calls' ? { slot: 'tool_calls' as const } : {}) };
      }
      break;
    }
    default:
      problems.add(
        `${path}.type`,
        `must be one of ${allowed.map((t) => `'${t}'`).join(', ')}${inResult ? '' : ' (any other provider block goes in an opaque block)'}`,
      );
  }
  return problems.count === before ? block : undefined;
}
