import { MessageFormat } from './canonical';
import { has, isRecord } from './util';

/** Part types only OpenAI sends. */
const OPENAI_PART_TYPES = new Set(['image_url', 'input_audio', 'refusal', 'file']);
/** Message fields only OpenAI sends. */
const OPENAI_FIELDS = ['tool_calls', 'tool_call_id', 'tool_call_ids', 'function_call', 'refusal', 'audio', 'name'];
/** Roles only OpenAI has (Anthropic keeps the system prompt outside the messages). */
const OPENAI_ROLES = new Set(['tool', 'system', 'developer', 'function']);

/**
 * Guesses the shape of an appended `messages` array; never throws. Each message votes:
 * - a `blocks` array → canonical;
 * - role `tool`, `system`, `developer` or `function`, a `tool_calls`, `tool_call_id`,
 *   `tool_call_ids`, `function_call`, `refusal`, `audio` or `name` field, `content: null`, or an OpenAI-only part type
 *   (`image_url`, `input_audio`, `refusal`, `file`) → OpenAI;
 * - a content array with any block type other than `text` (`tool_use`, `tool_result`,
 *   `thinking`, `image`, `document`, or one nobody knows yet) → Anthropic.
 * Canonical wins if it has any vote and at least as many as each other shape; then OpenAI if
 * it has more votes than Anthropic; otherwise Anthropic. Plain `{role: 'user'|'assistant',
 * content: string}` messages vote for nobody: both providers read them the same way, and
 * they are parsed as `fallback` (the shape the session used so far, when the caller knows it)
 * or else as Anthropic. Junk gives a best guess and the parser names the bad fields.
 */
export function detectFormat(messages: unknown, fallback: MessageFormat = 'anthropic'): MessageFormat {
  if (!Array.isArray(messages)) return fallback;
  let canonical = 0;
  let openai = 0;
  let anthropic = 0;
  for (const m of messages) {
    if (!isRecord(m)) continue;
    if (Array.isArray(m.blocks)) {
      canonical++;
      continue;
    }
    let isOpenAI = (typeof m.role === 'string' && OPENAI_ROLES.has(m.role)) || OPENAI_FIELDS.some((f) => has(m, f)) || m.content === null;
    let isAnthropic = false;
    if (Array.isArray(m.content)) {
      for (const part of m.content) {
        if (!isRecord(part) || typeof part.type !== 'string' || part.type === 'text') continue;
        if (OPENAI_PART_TYPES.has(part.type)) isOpenAI = true;
        else isAnthropic = true;
      }
    }
    if (isOpenAI) openai++;
    if (isAnthropic) anthropic++;
  }
  if (canonical > 0 && canonical >= openai && canonical >= anthropic) return 'canonical';
  if (openai > anthropic) return 'openai';
  if (anthropic > 0) return 'anthropic';
  return fallback === 'canonical' ? 'anthropic' : fallback;
}
