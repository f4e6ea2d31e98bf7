/**
 * Canonical messages (SPEC.md, "Message"): one shape for Anthropic Messages and OpenAI
 * Chat Completions. A provider message converted to canonical and back gives the same
 * message (same JSON value); fields the canonical shape does not model are kept in
 * `extras`, and blocks it does not know are kept whole as `opaque`.
 */

/** `responses`: OpenAI's Responses API items (see responses.ts). */
export type Provider = 'anthropic' | 'openai' | 'responses';
export type MessageFormat = Provider | 'canonical';
export type Role = 'system' | 'user' | 'assistant' | 'tool';

/** Provider fields of a block or message that the canonical shape does not model (cache_control, citations, name, …), kept verbatim. */
export type Extras = Record<string, unknown>;

/**
 * Blocks that carry `extras` also carry `origin`: the provider those fields belong to. The
 * parsers set it whenever they set `extras`, so a block stored without its message (the
 * `blocks` column) still knows where its fields may be written back. Serializers write a
 * block's extras only to `block.origin ?? message.origin`.
 */

export interface TextBlock {
  type: 'text';
  text: string;
  extras?: Extras;
  origin?: Provider;
}

export type ImageSource =
  | { kind: 'base64'; mediaType: string; data: string }
  | { kind: 'url'; url: string };

export interface ImageBlock {
  type: 'image';
  source: ImageSource;
  /** Pixel size when known (read from the image header), for token estimates. */
  width?: number;
  height?: number;
  extras?: Extras;
  origin?: Provider;
}

export interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  /** Parsed arguments. OpenAI sends them as a JSON string: `argumentsText` keeps that string byte-exact. */
  input: unknown;
  argumentsText?: string;
  extras?: Extras;
  origin?: Provider;
}

export type ToolResultContent = string | Array<TextBlock | ImageBlock | OpaqueBlock>;

export interface ToolResultBlock {
  type: 'tool_result';
  toolUseId: string;
  content: ToolResultContent;
  isError: boolean;
  /** Anthropic allows a tool_result without `content`: the round trip leaves it out again (`content` is then `''`). */
  contentOmitted?: boolean;
  /**
   * SWE-agent trajectories name a tool message's call in `tool_call_ids` (kept in the message's
   * extras) and carry no `tool_call_id`: the id was taken from there, and the OpenAI round trip
   * writes no `tool_call_id`. `makeProviderValid` clears it, so a context always names the call.
   */
  toolUseIdFrom?: 'tool_call_ids';
  /** Anthropic allows a tool_result without `is_error`: the round trip leaves it out again (`isError` is then `false`). */
  isErrorOmitted?: boolean;
  extras?: Extras;
  origin?: Provider;
}

export interface ThinkingBlock {
  type: 'thinking';
  thinking: string;
  signature: string;
  extras?: Extras;
  origin?: Provider;
}

export interface RedactedThinkingBlock {
  type: 'redacted_thinking';
  data: string;
  extras?: Extras;
  origin?: Provider;
}

/** Any provider block the canonical shape does not model, kept byte-exact (document, search_result, refusal, audio, …). */
export interface OpaqueBlock {
  type: 'opaque';
  provider: Provider;
  raw: unknown;
  /**
   * Where the block sits in the provider message when not in its content: `'tool_calls'` for an
   * OpenAI tool call of a type other than `function` (e.g. `custom`). Its `raw.id` names a call
   * like a tool_use id does.
   */
  slot?: 'tool_calls';
}

export type Block = TextBlock | ImageBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock | RedactedThinkingBlock | OpaqueBlock;

export interface CanonicalMessage {
  role: Role;
  blocks: Block[];
  /**
   * How the provider sent the content, so the round trip gives the same JSON: a plain
   * string (`'string'`), an array of parts (`'parts'`), or, for OpenAI, `null` / absent.
   */
  contentForm?: 'string' | 'parts' | 'null' | 'absent';
  /**
   * A system message that sits in the conversation rather than before it: an Anthropic
   * `role: "system"` entry of `messages` (a mid-conversation system message). It is written back
   * where it is (the top-level `system` holds the other system messages) and it is conversation for
   * compaction: protected while among the latest messages or pinned, summarized with its span, not
   * kept forever as the system prompt is.
   */
  inConversation?: boolean;
  /** Pinned messages are protected from compaction (Guarantee 3). */
  pinned?: boolean;
  tags?: string[];
  /** Message-level provider fields not modelled (OpenAI `name`, `refusal`, `audio`, …). */
  extras?: Extras;
  /**
   * The provider shape the message was parsed from. Its extras (message and blocks) belong to
   * that provider: they are written only when serializing back to it, never sent to the other
   * one. Absent for messages posted in canonical form.
   */
  origin?: Provider;
}
