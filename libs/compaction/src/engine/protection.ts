import { CanonicalMessage } from '../messages/canonical';
import { SessionMessage } from './types';

/**
 * The one protection policy every stage consults (SPEC.md Guarantee 3). Declarative: what a
 * preset protects is data, and the stages ask `protectionOf` instead of deciding themselves.
 */
export interface ProtectionPolicy {
  /** The latest N messages are never summarized, masked or removed. */
  latestMessages: number;
  /** The text blocks of the latest M user messages are kept verbatim (`balanced`: 3). */
  latestUserTexts: number;
  /** `checkpoint-aging` (seed 004): the text of every user message is kept, except text tagged `observation`. */
  allUserTexts: boolean;
  /** Results of these tools are never masked, offloaded or summarized. */
  exemptToolNames: string[];
  /**
   * Whether a user message kept for its text also keeps the tool exchange it answers (default
   * true). A stage that strips the results out of such a message and summarizes them with their
   * calls (checkpoint-aging's aging span) sets false.
   */
  userTextKeepsExchange?: boolean;
}

/** What a stage may not touch, by seq. */
export interface Protection {
  /** Messages kept whole: system prompts, pinned, the latest N (widened so no tool exchange is split). */
  whole: Set<number>;
  /** Messages whose text blocks are kept verbatim (their tool results may still be compacted). */
  userText: Set<number>;
  /** tool_use ids whose results are exempt (by tool name). */
  exemptToolUseIds: Set<string>;
  /** Seq of the first message of "the latest N" (undefined when N is 0 or the session is empty). */
  latestFromSeq?: number;
}


const answersTools = (m: CanonicalMessage) => m.role === 'tool' || m.blocks.some((b) => b.type === 'tool_result');
const inConversationSystem = (m: CanonicalMessage) => m.role === 'system' && m.inConversation === true;

/**
 * Whether message k belongs to the tool exchange before it: it answers tools, or it is an
 * in-conversation system message that results still follow (one that sits between a call and its
 * results stays inside the exchange, so no cut separates them).
 */
function inExchange(messages: SessionMessage[], k: number): boolean {
  if (answersTools(messages[k].message)) return true;
  let j = k;
  while (j < messages.length && inConversationSystem(messages[j].message)) j += 1;
  return j > k && j < messages.length && answersTools(messages[j].message);
}

/**
 * Index of the first message of the tool exchange that `index` belongs to: the assistant
 * message with the calls, when `index` is one of its result messages. A cut there never
 * separates a tool_use from its tool_result (Guarantee 2).
 */
export function exchangeStart(messages: SessionMessage[], index: number): number {
  let i = index;
  // Any message that answers tools (an Anthropic user message may hold results and text) belongs to the calls before it.
  while (i > 0 && inExchange(messages, i)) i -= 1;
  return i;
}

/**
 * The tool exchanges of a history, as [first, last] index ranges: an assistant message with
 * tool calls plus the messages right after it that carry their results. Protection and
 * removal work on whole exchanges, so no stage can separate a call from its result.
 */
export function exchangeRange(messages: SessionMessage[], index: number): [number, number] {
  const first = exchangeStart(messages, index);
  let last = first;
  if (messages[first].message.blocks.some((b) => b.type === 'tool_use') || answersTools(messages[first].message)) {
    while (last + 1 < messages.length && inExchange(messages, last + 1)) last += 1;
  }
  return [first, last];
}

export function protectionOf(messages: SessionMessage[], policy: ProtectionPolicy): Protection {
  const whole = new Set<number>();
  const userText = new Set<number>();
  const exemptToolUseIds = new Set<string>();
  const exempt = new Set(policy.exemptToolNames);

  for (const m of messages) {
    // The system prompt is always kept; an in-conversation system message is conversation (protected while among the latest N).
    if ((m.message.role === 'system' && !m.message.inConversation) || m.message.pinned) whole.add(m.seq);
    for (const b of m.message.blocks) if (b.type === 'tool_use' && exempt.has(b.name)) exemptToolUseIds.add(b.id);
  }

  let latestFromSeq: number | undefined;
  if (policy.latestMessages > 0 && messages.length > 0) {
    const first = exchangeStart(messages, Math.max(0, messages.length - policy.latestMessages));
    latestFromSeq = messages[first].seq;
    for (let i = first; i < messages.length; i += 1) whole.add(messages[i].seq);
  }

  let users = 0;
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const m = messages[i].message;
    if (m.role !== 'user' || !m.blocks.some((b) => b.type === 'text')) continue;
    if (m.tags?.includes('observation')) continue;
    if (policy.allUserTexts || users < policy.latestUserTexts) userText.add(messages[i].seq);
    users += 1;
  }

  // Close protection over tool exchanges: a kept message keeps its whole exchange.
  const textKeepsExchange = policy.userTextKeepsExchange ?? true;
  messages.forEach((m, i) => {
    if (!whole.has(m.seq) && !(textKeepsExchange && userText.has(m.seq))) return;
    const [first, last] = exchangeRange(messages, i);
    if (first === last) return;
    for (let k = first; k <= last; k += 1) if (!userText.has(messages[k].seq)) whole.add(messages[k].seq);
  });
  return { whole, userText, exemptToolUseIds, latestFromSeq };
}
