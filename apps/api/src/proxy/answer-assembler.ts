import { StringDecoder } from 'node:string_decoder';
import type { ProxyShape } from './proxy-request';

/**
 * Reads the upstream's answer as it passes through (the bytes go to the client untouched) and
 * assembles the assistant message to record in the history, in the provider's own message shape:
 * text, tool calls (parallel ones too), thinking with its signature, and any other block whole.
 * `message()` is undefined until the answer completed (`message_stop`, OpenAI's finish reason or
 * `[DONE]`), and for an answer that failed or has nothing to record.
 */
export interface AnswerAssembler {
  push(chunk: Buffer): void;
  message(): Record<string, unknown> | undefined;
  /** The prompt tokens the upstream reported (Anthropic's input tokens with cache reads and writes; OpenAI's prompt_tokens), if it did. */
  inputTokens(): number | undefined;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Splits a byte stream into server-sent events (`event:` and `data:` fields), across chunk boundaries. */
export class SseReader {
  private readonly decoder = new StringDecoder('utf8');
  private buffer = '';

  constructor(private readonly onEvent: (event: string | undefined, data: string) => void) {}

  push(chunk: Buffer): void {
    this.buffer += this.decoder.write(chunk);
    for (;;) {
      const match = /\r\n\r\n|\n\n|\r\r/.exec(this.buffer);
      if (!match) break;
      const block = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      let event: string | undefined;
      const data: string[] = [];
      for (const line of block.split(/\r\n|\n|\r/)) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
      if (data.length > 0 || event !== undefined) this.onEvent(event, data.join('\n'));
    }
  }
}

/** Anthropic counts cached prompt tokens apart: the prompt is all three. */
function anthropicInputTokens(usage: unknown): number | undefined {
  if (!isObject(usage) || typeof usage.input_tokens !== 'number') return undefined;
  const part = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  return usage.input_tokens + part(usage.cache_creation_input_tokens) + part(usage.cache_read_input_tokens);
}

function openaiInputTokens(usage: unknown): number | undefined {
  return isObject(usage) && typeof usage.prompt_tokens === 'number' ? usage.prompt_tokens : undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Anthropic's `message_start` … `message_stop` events, content blocks assembled by index. */
export function anthropicStreamAssembler(): AnswerAssembler {
  const blocks: Json[] = [];
  const partialJson = new Map<number, string>();
  let stopped = false;
  let failed = false;
  let input: number | undefined;
  const reader = new SseReader((_event, data) => {
    const e = parseJson(data);
    if (!isObject(e)) return;
    const index = typeof e.index === 'number' ? e.index : -1;
    switch (e.type) {
      case 'message_start':
        blocks.length = 0;
        input = isObject(e.message) ? anthropicInputTokens(e.message.usage) : undefined;
        break;
      case 'content_block_start':
        if (index >= 0 && isObject(e.content_block)) blocks[index] = { ...e.content_block };
        break;
      case 'content_block_delta': {
        const block = blocks[index];
        const d = e.delta;
        if (!block || !isObject(d)) break;
        if (d.type === 'text_delta' && typeof d.text === 'string') block.text = `${typeof block.text === 'string' ? block.text : ''}${d.text}`;
        else if (d.type === 'input_json_delta' && typeof d.partial_json === 'string') partialJson.set(index, (partialJson.get(index) ?? '') + d.partial_json);
        else if (d.type === 'thinking_delta' && typeof d.thinking === 'string') block.thinking = `${typeof block.thinking === 'string' ? block.thinking : ''}${d.thinking}`;
        else if (d.type === 'signature_delta' && typeof d.signature === 'string') block.signature = `${typeof block.signature === 'string' ? block.signature : ''}${d.signature}`;
        else if (d.type === 'citations_delta' && d.citation !== undefined) block.citations = [...(Array.isArray(block.citations) ? block.citations : []), d.citation];
        break;
      }
      case 'content_block_stop': {
        const json = partialJson.get(index);
        const block = blocks[index];
        if (block && json !== undefined) {
          // The arguments arrive as JSON text in pieces; an empty text is an empty input.
          const input = json.trim() === '' ? {} : parseJson(json);
          if (input === undefined) failed = true;
          else block.input = input;
        }
        break;
      }
      case 'message_stop':
        stopped = true;
        break;
      case 'error':
        failed = true;
        break;
    }
  });
  return {
    push: (chunk) => reader.push(chunk),
    message: () => {
      const content = blocks.filter((b) => b !== undefined);
      return stopped && !failed && content.length > 0 ? { role: 'assistant', content } : undefined;
    },
    inputTokens: () => (stopped && !failed ? input : undefined),
  };
}

interface ToolCallParts {
  id?: string;
  type?: string;
  name: string;
  arguments: string;
  extra: Json;
}

/** OpenAI's `data:` chunks ending in `[DONE]`; the first choice is recorded, tool calls assembled by index. */
export function openaiStreamAssembler(): AnswerAssembler {
  let content: string | null = null;
  let refusal: string | null = null;
  const calls: ToolCallParts[] = [];
  let finished = false;
  let failed = false;
  let input: number | undefined;
  const reader = new SseReader((_event, data) => {
    if (data.trim() === '[DONE]') {
      finished = true;
      return;
    }
    const chunk = parseJson(data);
    if (!isObject(chunk)) return;
    if (chunk.error !== undefined) failed = true;
    // The usage chunk (stream_options.include_usage) comes last, with no choices.
    input = openaiInputTokens(chunk.usage) ?? input;
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    const choice = choices.find((c): c is Json => isObject(c) && (c.index === 0 || c.index === undefined));
    if (!choice) return;
    const delta = isObject(choice.delta) ? choice.delta : {};
    if (typeof delta.content === 'string') content = (content ?? '') + delta.content;
    if (typeof delta.refusal === 'string') refusal = (refusal ?? '') + delta.refusal;
    if (Array.isArray(delta.tool_calls)) {
      for (const part of delta.tool_calls) {
        if (!isObject(part)) continue;
        const at = typeof part.index === 'number' ? part.index : calls.length;
        const call = (calls[at] ??= { name: '', arguments: '', extra: {} });
        if (typeof part.id === 'string') call.id = part.id;
        if (typeof part.type === 'string') call.type = part.type;
        const fn = isObject(part.function) ? part.function : {};
        if (typeof fn.name === 'string') call.name += fn.name;
        if (typeof fn.arguments === 'string') call.arguments += fn.arguments;
      }
    }
    if (typeof choice.finish_reason === 'string') finished = true;
  });
  return {
    push: (chunk) => reader.push(chunk),
    message: () => {
      if (!finished || failed) return undefined;
      const toolCalls = calls
        .filter((c) => c !== undefined && c.id !== undefined)
        .map((c) => ({ id: c.id, type: c.type ?? 'function', function: { name: c.name, arguments: c.arguments } }));
      if ((content === null || content === '') && toolCalls.length === 0 && refusal === null) return undefined;
      return {
        role: 'assistant',
        content: content === '' && toolCalls.length > 0 ? null : content,
        ...(refusal !== null ? { refusal } : {}),
        ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
      };
    },
    inputTokens: () => (finished && !failed ? input : undefined),
  };
}

function responsesInputTokens(usage: unknown): number | undefined {
  return isObject(usage) && typeof usage.input_tokens === 'number' ? usage.input_tokens : undefined;
}

/**
 * Responses' `response.*` events: the output items as `response.output_item.done` gives them (in output order), or the
 * final `response.completed`'s `output` when it has them. Recorded as `{ output: items }`; an answer that failed or
 * stopped incomplete records nothing.
 */
export function responsesStreamAssembler(): AnswerAssembler {
  const items: Json[] = [];
  let final: unknown[] | undefined;
  let completed = false;
  let failed = false;
  let input: number | undefined;
  const reader = new SseReader((_event, data) => {
    const e = parseJson(data);
    if (!isObject(e)) return;
    switch (e.type) {
      case 'response.output_item.done':
        if (isObject(e.item)) items[typeof e.output_index === 'number' && e.output_index >= 0 && e.output_index < 10_000 ? e.output_index : items.length] = e.item;
        break;
      case 'response.completed': {
        completed = true;
        const response = isObject(e.response) ? e.response : {};
        if (Array.isArray(response.output) && response.output.length > 0) final = response.output;
        input = responsesInputTokens(response.usage);
        break;
      }
      case 'response.failed':
      case 'response.incomplete':
      case 'error':
        failed = true;
        break;
    }
  });
  return {
    push: (chunk) => reader.push(chunk),
    message: () => {
      const output = final ?? items.filter((i) => i !== undefined);
      return completed && !failed && output.length > 0 ? { output } : undefined;
    },
    inputTokens: () => (completed && !failed ? input : undefined),
  };
}

/** A non-streamed answer: the JSON body, read whole. */
export function jsonAnswerAssembler(provider: ProxyShape): AnswerAssembler {
  const chunks: Buffer[] = [];
  let parsed: { body: unknown } | undefined;
  const body = () => (parsed ??= { body: parseJson(Buffer.concat(chunks).toString('utf8')) }).body;
  return {
    push: (chunk) => {
      chunks.push(chunk);
      parsed = undefined;
    },
    inputTokens: () => {
      const b = body();
      if (!isObject(b)) return undefined;
      return provider === 'anthropic' ? anthropicInputTokens(b.usage) : provider === 'responses' ? responsesInputTokens(b.usage) : openaiInputTokens(b.usage);
    },
    message: () => {
      const body = parsed?.body ?? parseJson(Buffer.concat(chunks).toString('utf8'));
      if (!isObject(body)) return undefined;
      if (provider === 'responses') {
        const done = body.status === undefined || body.status === 'completed';
        return done && Array.isArray(body.output) && body.output.length > 0 ? { output: body.output } : undefined;
      }
      if (provider === 'anthropic') {
        return Array.isArray(body.content) && body.content.length > 0 ? { role: 'assistant', content: body.content } : undefined;
      }
      const choices = Array.isArray(body.choices) ? body.choices : [];
      const choice = choices.find((c): c is Json => isObject(c) && (c.index === 0 || c.index === undefined));
      const message = choice && isObject(choice.message) ? choice.message : undefined;
      if (!message) return undefined;
      const hasCalls = Array.isArray(message.tool_calls) && message.tool_calls.length > 0;
      if (!hasCalls && (message.content === null || message.content === undefined || message.content === '') && typeof message.refusal !== 'string') return undefined;
      return { ...message, role: 'assistant' };
    },
  };
}

export function answerAssembler(shape: ProxyShape, stream: boolean): AnswerAssembler {
  if (!stream) return jsonAnswerAssembler(shape);
  return shape === 'anthropic' ? anthropicStreamAssembler() : shape === 'responses' ? responsesStreamAssembler() : openaiStreamAssembler();
}
