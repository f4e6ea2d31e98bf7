/**
 * Structural checks of an appended batch against the session's state. Only what is clearly
 * broken is rejected: a tool result for a call nobody made, a tool call id used again while a
 * call with that id still waits for its result, a result given twice in one request, blocks
 * in a role that cannot carry them. What real agents do is accepted: consecutive user
 * messages, a user message before the tool results arrive, an assistant turn whose calls are
 * answered later, and an id reused after its first call was answered (SWE-agent replays do
 * it; `makeProviderValid` renames such reuses in the context).
 */
import { FieldProblem } from '../errors';
import { Block, CanonicalMessage, Role } from './canonical';
import { MAX_PROBLEMS, toolUseIdOf } from './util';

export interface SequenceState {
  lastRole: Role | null;
  /** Tool calls of the stored history still waiting for their result, in order. */
  openToolUseIds: string[];
}

/** Field name of a message's block in the shape the client sent. */
function blockField(message: CanonicalMessage, base: string, index: number, leaf: 'call' | 'result' | 'block'): string {
  if (message.origin === 'anthropic') {
    const prefix = message.contentForm === 'string' ? `${base}.content` : `${base}.content[${index}]`;
    return leaf === 'call' ? `${prefix}.id` : leaf === 'result' ? `${prefix}.tool_use_id` : prefix;
  }
  if (message.origin === 'openai') {
    const block = message.blocks[index];
    if (leaf === 'result' && message.role === 'tool' && block.type === 'tool_result') {
      return block.toolUseIdFrom ? `${base}.tool_call_ids[0]` : `${base}.tool_call_id`;
    }
    const isCall = (b: Block) => toolUseIdOf(b) !== undefined;
    if (isCall(block)) return `${base}.tool_calls[${message.blocks.slice(0, index).filter(isCall).length}]${leaf === 'call' ? '.id' : ''}`;
    if (message.contentForm === 'string') return `${base}.content`;
    return `${base}.content[${message.blocks.slice(0, index).filter((b) => !isCall(b)).length}]`;
  }
  const prefix = `${base}.blocks[${index}]`;
  return leaf === 'call' ? `${prefix}.id` : leaf === 'result' ? `${prefix}.toolUseId` : prefix;
}

/**
 * Checks `messages` (in order) against the session state and returns the new state.
 * `seenToolUseIds` holds the ids of tool calls found in the stored history (the API looks up
 * `referencedForeignToolUseIds(messages)`), so results for them are accepted even when they
 * were answered already or are no longer open.
 */
export function validateSequence(
  state: { lastRole: Role | null; openToolUseIds: string[]; seenToolUseIds: Set<string> },
  messages: CanonicalMessage[],
  path: string,
): { errors: FieldProblem[]; state: SequenceState } {
  const errors: FieldProblem[] = [];
  const add = (field: string, message: string) => {
    if (errors.length < MAX_PROBLEMS) errors.push({ field, message });
  };
  const open = [...state.openToolUseIds];
  const openSet = new Set(open);
  const answeredInBatch = new Set<string>();
  let lastRole = state.lastRole;

  messages.forEach((m, i) => {
    const base = `${path}[${i}]`;
    m.blocks.forEach((b, j) => {
      const callId = toolUseIdOf(b);
      // An in-conversation system message may carry blocks nobody models (Claude Code's `tool_addition`, …), never tool blocks.
      if (m.role === 'system' && b.type !== 'text' && !(m.inConversation && b.type === 'opaque')) {
        add(blockField(m, base, j, 'block'), `a system message takes text blocks only (got ${b.type === 'opaque' ? 'an unknown block' : b.type})`);
        return;
      }
      if (m.role === 'tool' && b.type !== 'tool_result') {
        add(blockField(m, base, j, 'block'), 'a tool message carries tool results only');
        return;
      }
      if (callId !== undefined) {
        if (m.role !== 'assistant') {
          add(blockField(m, base, j, 'block'), 'tool calls belong in assistant messages');
          return;
        }
        if (openSet.has(callId)) {
          add(blockField(m, base, j, 'call'), `duplicate tool call id '${callId}': a call with this id is still waiting for its result`);
          return;
        }
        answeredInBatch.delete(callId);
        open.push(callId);
        openSet.add(callId);
        return;
      }
      if (b.type === 'tool_result') {
        const field = blockField(m, base, j, 'result');
        if (m.role === 'assistant') {
          add(blockField(m, base, j, 'block'), 'tool results belong in user or tool messages');
          return;
        }
        const id = b.toolUseId;
        if (openSet.has(id)) {
          openSet.delete(id);
          open.splice(open.indexOf(id), 1);
          answeredInBatch.add(id);
        } else if (answeredInBatch.has(id)) {
          add(field, `tool call '${id}' was already answered earlier in this request`);
        } else if (state.seenToolUseIds.has(id)) {
          answeredInBatch.add(id);
        } else {
          add(field, `no tool call with id '${id}' in this session's history or earlier in this request`);
        }
      }
    });
    lastRole = m.role;
  });

  return { errors, state: { lastRole, openToolUseIds: open } };
}

/** tool_result ids that no tool call inside `messages` produces: the API looks these up in the stored history. */
export function referencedForeignToolUseIds(messages: CanonicalMessage[]): string[] {
  const produced = new Set<string>();
  for (const m of messages) {
    for (const b of m.blocks) {
      const id = toolUseIdOf(b);
      if (id !== undefined) produced.add(id);
    }
  }
  const foreign = new Set<string>();
  for (const m of messages) {
    for (const b of m.blocks) if (b.type === 'tool_result' && !produced.has(b.toolUseId)) foreign.add(b.toolUseId);
  }
  return [...foreign];
}
