import type { FakeLlmRequest, FakeLlmToolCall, FakeLlmUsage } from './types';

/** What one wire protocol of the fake LLM says: its views of a request, its answers (whole and streamed) and its errors. */
export interface FakeProtocol {
  /** The body's system prompt(s), user turns' text and model. */
  views(body: Record<string, unknown>): Pick<FakeLlmRequest, 'system' | 'userContent' | 'userTurns' | 'model'>;
  /** Whether the body asks for a streamed answer. */
  wantsStream(body: unknown): boolean;
  /** A complete answer. `usage: null` leaves the usage fields out. */
  answerBody(model: string, text: string, usage: FakeLlmUsage | null, index: number, extra: AnswerExtras): unknown;
  /** The frames of a streamed answer: the head (before any text), one frame per text chunk, and the tail. */
  streamFrames(plan: StreamPlan): StreamFrames;
  /** The streamed answer's content type. */
  streamContentType: string;
  /** A 200 that is valid JSON without the answer. */
  missingFieldsBody(model: string): unknown;
  /** An error answer in the provider's shape. */
  errorBody(status: number, message: string): unknown;
  /** The text of the tool results in a request body, by call id. */
  toolResults(body: Record<string, unknown>): Map<string, string>;
}

/** Tool calls and thinking of a scripted answer. */
export interface AnswerExtras {
  toolCalls?: FakeLlmToolCall[];
  thinking?: { thinking: string; signature: string };
}

export interface StreamPlan {
  model: string;
  index: number;
  chunks: string[];
  usage: FakeLlmUsage | null;
  /** OpenAI: `stream_options.include_usage`. */
  includeUsage: boolean;
  extras?: AnswerExtras;
}

export interface StreamFrames {
  head: string[];
  chunks: string[];
  tail: string[];
}

export const CREATED_AT = '2026-01-01T00:00:00Z';
export const CREATED = 1_767_225_600;

export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => {
        if (typeof part === 'string') return part;
        if (part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string') return (part as { text: string }).text;
        return '';
      })
      .join('');
  }
  return '';
}

/** Views of a `messages` body (Chat Completions, Messages, Ollama): system/developer messages, user messages, the model. */
export function messagesViews(body: Record<string, unknown>, system?: unknown): Pick<FakeLlmRequest, 'system' | 'userContent' | 'userTurns' | 'model'> {
  const messages = Array.isArray(body.messages) ? (body.messages as Array<{ role?: unknown; content?: unknown }>) : [];
  const systems = messages.filter((m) => m && (m.role === 'system' || m.role === 'developer')).map((m) => textOf(m.content));
  if (system !== undefined) systems.unshift(textOf(system));
  const users = messages.filter((m) => m && m.role === 'user').map((m) => textOf(m.content));
  return {
    model: typeof body.model === 'string' ? body.model : undefined,
    system: systems.length > 0 ? systems.join('\n') : undefined,
    userContent: users.length > 0 ? users.join('\n') : undefined,
    userTurns: users.length,
  };
}

/** `stream: true` (OpenAI, Anthropic, Responses). */
export function streamTrue(body: unknown): boolean {
  return !!body && typeof body === 'object' && (body as { stream?: unknown }).stream === true;
}

/** A tool call's JSON arguments in two pieces, as providers stream them. */
export function argumentPieces(input: unknown): string[] {
  const json = JSON.stringify(input);
  const cut = Math.floor(json.length / 2);
  return cut > 0 ? [json.slice(0, cut), json.slice(cut)] : [json];
}

/** The default deltas of a streamed answer: the text cut after each word (whitespace stays with the word before it). */
export function fakeStreamChunks(text: string): string[] {
  const pieces: string[] = [];
  const isSpace = (c: string) => c.trim() === '';
  let start = 0;
  let i = 0;
  while (i < text.length) {
    while (i < text.length && isSpace(text[i])) i++;
    if (i >= text.length) break;
    while (i < text.length && !isSpace(text[i])) i++;
    while (i < text.length && isSpace(text[i])) i++;
    pieces.push(text.slice(start, i));
    start = i;
  }
  return pieces.length > 0 ? pieces : [text];
}

/** A server-sent event with its type as the event name. */
export function sseEvent(data: Record<string, unknown>): string {
  return `event: ${String(data['type'])}\ndata: ${JSON.stringify(data)}\n\n`;
}
