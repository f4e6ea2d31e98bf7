import { CanonicalMessage } from '../messages/canonical';

/**
 * The summarizer interface the compaction stages call (SPEC.md "LLM providers"). The
 * implementations live in `libs/llm` (openai, anthropic, ollama, local); the stages stay pure
 * and receive one through their input.
 */

/** What a summary is for: each stage asks for its own kind. */
export type SummaryKind =
  /** A span of conversation into a checkpoint (seeds 000, 003, 004; `balanced`). */
  | 'checkpoint'
  /** One tool result compressed to a fraction of its size (seed 002 layer 2, seed 000 post-processing). */
  | 'tool-result'
  /** One chunk of an oversized input (seed 002 layer 1, and any span larger than the summarizer's window). */
  | 'chunk'
  /** Several summaries into one (chunk combination, checkpoint aging and ultra merging, seed 004). */
  | 'merge';

export interface SummarizeRequest {
  kind: SummaryKind;
  /** The instructions: the seed's prompt for this kind (system prompt of the LLM call). */
  instructions: string;
  /**
   * What to summarize, as canonical messages. Providers render them as one transcript in a
   * single user turn (`renderTranscript`), so the request is valid whatever the span holds
   * (no orphan tool blocks can reach the provider). For `tool-result`, `chunk` and `merge`
   * it is usually one user message holding the text.
   */
  messages: CanonicalMessage[];
  /** The size the summary should have, in tokens (a target, not a hard cap). */
  targetTokens: number;
  /** The session's goal, when known, for goal-aware prompts (seed 004). */
  goal?: string;
  /**
   * The span's facts-ledger entries, highest weight first (SPEC.md "Facts ledger"): the prompt
   * lists them so the summary keeps them verbatim; whatever it still lacks is appended after.
   */
  facts?: string[];
}

export interface LlmUsage {
  inputTokens: number;
  outputTokens: number;
  /** USD, from the model catalog's prices (0 for local models and `local`). */
  costUsd: number;
}

export interface SummarizeResult {
  text: string;
  usage: LlmUsage;
  /** Provider and model that answered, e.g. `anthropic` / `claude-haiku-4-5`. */
  provider: string;
  model: string;
  /** Attempts made (1 when the first call answered). */
  attempts: number;
}

export type LlmErrorKind = 'timeout' | 'rate-limited' | 'server' | 'malformed' | 'auth' | 'bad-request' | 'network' | 'aborted';

/** A summarizer call that failed for good (after its retries). Stages apply their seed's fallback. */
export class LlmError extends Error {
  constructor(
    readonly kind: LlmErrorKind,
    message: string,
    readonly attempts: number,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'LlmError';
  }
}

export interface Summarizer {
  /** `local`, `openai`, `anthropic`, `ollama`. */
  readonly provider: string;
  readonly model: string;
  /** Tokens the summarizer can read in one call (input plus output); larger spans are chunked by the stages. */
  readonly contextWindow: number;
  /** Whether the same request always gives the same text (true for `local`): Guarantee 8 holds only then. */
  readonly deterministic: boolean;
  summarize(request: SummarizeRequest, signal?: AbortSignal): Promise<SummarizeResult>;
}

function blockText(block: CanonicalMessage['blocks'][number]): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'tool_use':
      return `[tool call ${block.name} ${block.argumentsText ?? JSON.stringify(block.input)}]`;
    case 'tool_result': {
      const content =
        typeof block.content === 'string'
          ? block.content
          : block.content.map((p) => (p.type === 'text' ? p.text : p.type === 'image' ? '[image]' : '[attachment]')).join('\n');
      return `[tool result${block.isError ? ' (error)' : ''}]\n${content}`;
    }
    case 'thinking':
      return `[thinking] ${block.thinking}`;
    case 'redacted_thinking':
      return '[redacted thinking]';
    case 'image':
      return '[image]';
    default:
      return '[attachment]';
  }
}

/**
 * The span as one plain-text transcript: `ROLE: text` per message, tool calls and results
 * inline. Deterministic (Guarantee 8), and always a valid single user turn for any provider.
 */
export function renderTranscript(messages: CanonicalMessage[]): string {
  return messages
    .map((m) => `${m.role.toUpperCase()}: ${m.blocks.map(blockText).filter((t) => t.length > 0).join('\n')}`)
    .join('\n\n');
}
