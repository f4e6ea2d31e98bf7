/**
 * Guarantee 2: from the stored history, a message sequence both providers accept.
 *
 * Valid means (`providerValidityProblems` checks it):
 * - no message is empty; a `tool` message carries only tool results;
 * - tool calls are only in assistant messages, each id once in the sequence (Anthropic rejects
 *   reused ids; a reuse after the first call was answered is renamed `<id>_2`, …);
 * - right after an assistant message with calls come exactly their results, each once: a run
 *   of `tool` messages and user messages holding only results, optionally ended by one user
 *   message whose results come before its other blocks; no result appears anywhere else;
 * - no result still names its call through `toolUseIdFrom`.
 * `toAnthropic` then merges the results into one user turn, `toOpenAI` writes one tool
 * message per result: both valid.
 */
import { Block, CanonicalMessage, ToolResultBlock } from './canonical';
import { isRecord, isThinking, toolUseIdOf } from './util';

export interface DroppedPart {
  /** Index in the input. */
  index: number;
  reason: DropReason;
  /** When only some blocks of the message were left out: their indexes (the message stays, changed). */
  blocks?: number[];
}

export type DropReason =
  /** A trailing tool call whose result has not arrived yet. */
  | 'tool-result-pending'
  /** A tool call whose result never came right after it (a later assistant turn came first). */
  | 'tool-result-missing'
  /** A tool result whose call is not in the assistant message right before it. */
  | 'orphan-tool-result'
  /** A second result for the same call. */
  | 'duplicate-tool-result'
  /** A tool call id used twice in one assistant message (or reused in a thinking turn, which cannot be edited). */
  | 'duplicate-tool-use-id'
  /** A tool call outside an assistant message. */
  | 'tool-use-outside-assistant'
  /** A tool result inside an assistant message. */
  | 'tool-result-in-assistant'
  /** A block other than a tool result in a `tool` message. */
  | 'not-a-tool-result'
  /** An empty message. */
  | 'empty';

interface Plan {
  /** blocks kept, in output order */
  results: Block[];
  rest: Block[];
  removed: Map<number, DropReason>;
  changed: boolean;
  /** An empty message that is kept all the same (see `keptEmpty`). */
  keptEmpty?: boolean;
}

/**
 * An in-conversation system message without blocks still says something: Claude Code sends
 * `content: []` with a per-turn `output_config`. It is kept, never reported `empty`.
 */
const keptEmpty = (m: CanonicalMessage) => m.role === 'system' && m.inConversation === true && m.blocks.length === 0;
const hasRest = (p: Plan) => p.rest.length > 0 || p.keptEmpty === true;

const RESULT_ROLES = new Set(['user', 'tool']);

function withoutFrom(block: ToolResultBlock): ToolResultBlock {
  if (!block.toolUseIdFrom) return block;
  const copy = { ...block };
  delete copy.toolUseIdFrom;
  return copy;
}

function renamedCall(block: Block, renames: Map<string, string>): Block {
  const id = toolUseIdOf(block);
  const to = id === undefined ? undefined : renames.get(id);
  if (to === undefined) return block;
  if (block.type === 'tool_use') return { ...block, id: to };
  if (block.type === 'opaque' && isRecord(block.raw)) return { ...block, raw: { ...block.raw, id: to } };
  return block;
}

function renamedResult(block: ToolResultBlock, renames: Map<string, string>): ToolResultBlock {
  const to = renames.get(block.toolUseId);
  return to === undefined ? block : { ...block, toolUseId: to };
}

/**
 * Returns a provider-valid sequence of `messages`. Messages it does not change are returned
 * as the same objects; changed ones are new objects. Thinking blocks are never edited: an
 * assistant message holding them is kept whole or dropped whole. A user message that arrived
 * between a tool call and its results is moved after the results (the only reordering); a
 * trailing call without result is left out (`tool-result-pending`). `dropped[].index` is the
 * input index; `sources[k]` is the input index of output message k.
 */
export function makeProviderValid(messages: CanonicalMessage[]): {
  messages: CanonicalMessage[];
  dropped: DroppedPart[];
  sources: number[];
  /** Calls given a fresh id (a reuse of an earlier kept call's id): their new id depends on every id of the sequence. */
  renamed: number;
} {
  const out: CanonicalMessage[] = [];
  const sources: number[] = [];
  const dropped: DroppedPart[] = [];
  let renamed = 0;
  const usedIds = new Set<string>();
  let lastAssistant = -1;
  const taken = new Set<string>();
  messages.forEach((m, i) => {
    if (m.role === 'assistant') lastAssistant = i;
    for (const b of m.blocks) {
      const id = b.type === 'tool_result' ? b.toolUseId : toolUseIdOf(b);
      if (id !== undefined) taken.add(id);
    }
  });
  /** A deterministic id no message uses: `<id>_2`, `<id>_3`, … */
  const freshId = (id: string): string => {
    const base = id.length > 240 ? id.slice(0, 240) : id;
    let n = 2;
    while (taken.has(`${base}_${n}`)) n++;
    const fresh = `${base}_${n}`;
    taken.add(fresh);
    return fresh;
  };

  const report = (index: number, removed: Map<number, DropReason>, whole: boolean, fallback: DropReason = 'empty') => {
    if (whole) {
      const first = [...removed.entries()].sort((a, b) => a[0] - b[0])[0];
      dropped.push({ index, reason: first ? first[1] : fallback });
      return;
    }
    const byReason = new Map<DropReason, number[]>();
    for (const [block, reason] of [...removed.entries()].sort((a, b) => a[0] - b[0])) {
      byReason.set(reason, [...(byReason.get(reason) ?? []), block]);
    }
    for (const [reason, blocks] of byReason) dropped.push({ index, reason, blocks });
  };

  const emit = (index: number, blocks: Block[], changed: boolean) => {
    const m = messages[index];
    out.push(changed ? { ...m, blocks } : m);
    sources.push(index);
  };

  /** A non-assistant message outside any tool exchange: no calls, no results. */
  const plainPlan = (m: CanonicalMessage): Plan => {
    const plan: Plan = { results: [], rest: [], removed: new Map(), changed: false, keptEmpty: keptEmpty(m) };
    m.blocks.forEach((b, j) => {
      if (b.type === 'tool_result') plan.removed.set(j, 'orphan-tool-result');
      else if (toolUseIdOf(b) !== undefined) plan.removed.set(j, 'tool-use-outside-assistant');
      else if (m.role === 'tool') plan.removed.set(j, 'not-a-tool-result');
      else plan.rest.push(b);
    });
    plan.changed = plan.removed.size > 0;
    return plan;
  };

  const emitPlain = (index: number) => {
    const m = messages[index];
    const plan = plainPlan(m);
    if (!hasRest(plan)) report(index, plan.removed, true);
    else {
      if (plan.changed) report(index, plan.removed, false);
      emit(index, plan.rest, plan.changed);
    }
  };

  let i = 0;
  while (i < messages.length) {
    const m = messages[i];
    if (m.role !== 'assistant') {
      emitPlain(i);
      i++;
      continue;
    }

    // The assistant's calls.
    const removed = new Map<number, DropReason>();
    const callIndex = new Map<string, number>();
    m.blocks.forEach((b, j) => {
      if (b.type === 'tool_result') {
        removed.set(j, 'tool-result-in-assistant');
        return;
      }
      const id = toolUseIdOf(b);
      if (id === undefined) return;
      if (callIndex.has(id)) removed.set(j, 'duplicate-tool-use-id');
      else callIndex.set(id, j);
    });

    // The window: up to the last message before the next assistant turn that answers a call.
    let end = i;
    for (let k = i + 1; k < messages.length && messages[k].role !== 'assistant'; k++) {
      const r = messages[k];
      if (RESULT_ROLES.has(r.role) && r.blocks.some((b) => b.type === 'tool_result' && callIndex.has(b.toolUseId))) end = k;
    }

    // First result for each call wins.
    const answer = new Map<string, [number, number]>();
    for (let k = i + 1; k <= end; k++) {
      const r = messages[k];
      if (!RESULT_ROLES.has(r.role)) continue;
      r.blocks.forEach((b, j) => {
        if (b.type === 'tool_result' && callIndex.has(b.toolUseId) && !answer.has(b.toolUseId)) answer.set(b.toolUseId, [k, j]);
      });
    }
    for (const [id, j] of callIndex) {
      if (!answer.has(id)) removed.set(j, i === lastAssistant ? 'tool-result-pending' : 'tool-result-missing');
    }

    // An id an earlier kept call already has (SWE-agent replays reuse them) gets a fresh one.
    const renames = new Map<string, string>();
    for (const [id, j] of callIndex) if (!removed.has(j) && usedIds.has(id)) renames.set(id, freshId(id));
    renamed += renames.size;

    // Thinking is never edited: the whole turn goes.
    const wholeDrop = (removed.size > 0 || renames.size > 0) && m.blocks.some(isThinking);
    const kept = m.blocks.filter((_, j) => !removed.has(j)).map((b) => renamedCall(b, renames));
    const keptIds = new Set<string>();
    if (wholeDrop || kept.length === 0) {
      report(i, removed, true, renames.size > 0 ? 'duplicate-tool-use-id' : 'empty');
    } else {
      if (removed.size > 0) report(i, removed, false);
      emit(i, kept, removed.size > 0 || renames.size > 0);
      for (const [id, j] of callIndex) if (!removed.has(j)) keptIds.add(id);
      for (const id of keptIds) usedIds.add(renames.get(id) ?? id);
    }

    // Plan each message of the window: its answering results, the rest, what goes.
    const plans: Plan[] = [];
    for (let k = i + 1; k <= end; k++) {
      const r = messages[k];
      if (!RESULT_ROLES.has(r.role)) {
        plans.push(plainPlan(r));
        continue;
      }
      const plan: Plan = { results: [], rest: [], removed: new Map(), changed: false };
      r.blocks.forEach((b, j) => {
        if (b.type === 'tool_result') {
          const first = answer.get(b.toolUseId);
          if (keptIds.has(b.toolUseId) && first && first[0] === k && first[1] === j) {
            const clean = renamedResult(withoutFrom(b), renames);
            if (clean !== b) plan.changed = true;
            plan.results.push(clean);
          } else plan.removed.set(j, keptIds.has(b.toolUseId) ? 'duplicate-tool-result' : 'orphan-tool-result');
        } else if (toolUseIdOf(b) !== undefined) plan.removed.set(j, 'tool-use-outside-assistant');
        else if (r.role === 'tool') plan.removed.set(j, 'not-a-tool-result');
        else plan.rest.push(b);
      });
      if (plan.removed.size > 0) plan.changed = true;
      plans.push(plan);
    }

    // In place when nothing but the last result-bearing message has other content; else the
    // results go first and the rest follows in order.
    let lastResult = -1;
    plans.forEach((p, x) => {
      if (p.results.length > 0) lastResult = x;
    });
    const inPlace = plans.every((p, x) => x >= lastResult || !hasRest(p));
    if (inPlace) {
      plans.forEach((p, x) => {
        const k = i + 1 + x;
        const blocks = [...p.results, ...p.rest];
        if (blocks.length === 0 && !p.keptEmpty) {
          report(k, p.removed, true);
          return;
        }
        if (p.removed.size > 0) report(k, p.removed, false);
        const original = messages[k].blocks;
        const reordered = blocks.length === original.length && blocks.some((b, y) => b !== original[y]);
        emit(k, blocks, p.changed || reordered);
      });
    } else {
      plans.forEach((p, x) => {
        const k = i + 1 + x;
        if (p.results.length === 0 && !hasRest(p)) report(k, p.removed, true);
        else if (p.removed.size > 0) report(k, p.removed, false);
        if (p.results.length > 0) emit(k, p.results, p.changed || p.rest.length > 0);
      });
      plans.forEach((p, x) => {
        const k = i + 1 + x;
        if (hasRest(p)) emit(k, p.rest, p.changed || p.results.length > 0);
      });
    }
    i = end + 1;
  }
  return { messages: out, dropped, sources, renamed };
}

/** What makes `messages` invalid for a provider (empty when valid); see the module comment. */
export function providerValidityProblems(messages: CanonicalMessage[]): string[] {
  const problems: string[] = [];
  const seenCalls = new Set<string>();
  const accounted = new Set<Block>();
  messages.forEach((m, i) => {
    if (m.blocks.length === 0 && !keptEmpty(m)) problems.push(`[${i}] is empty`);
    m.blocks.forEach((b, j) => {
      const id = toolUseIdOf(b);
      if (id !== undefined) {
        if (m.role !== 'assistant') problems.push(`[${i}].blocks[${j}] tool call outside an assistant message`);
        if (seenCalls.has(id)) problems.push(`[${i}].blocks[${j}] duplicate tool call id ${id}`);
        seenCalls.add(id);
      }
      if (m.role === 'tool' && b.type !== 'tool_result') problems.push(`[${i}].blocks[${j}] tool message with a non-result block`);
      if (b.type === 'tool_result' && b.toolUseIdFrom) problems.push(`[${i}].blocks[${j}] result still named through toolUseIdFrom`);
    });
    if (m.role !== 'assistant') return;
    const calls = m.blocks.map(toolUseIdOf).filter((id): id is string => id !== undefined);
    const answered: string[] = [];
    let k = i + 1;
    const onlyResults = (r: CanonicalMessage) => r.blocks.length > 0 && r.blocks.every((b) => b.type === 'tool_result');
    while (k < messages.length && (messages[k].role === 'tool' || (messages[k].role === 'user' && onlyResults(messages[k])))) {
      for (const b of messages[k].blocks) {
        if (b.type === 'tool_result') {
          answered.push(b.toolUseId);
          accounted.add(b);
        }
      }
      k++;
    }
    if (k < messages.length && messages[k].role === 'user') {
      const blocks = messages[k].blocks;
      let y = 0;
      while (y < blocks.length && blocks[y].type === 'tool_result') {
        answered.push((blocks[y] as ToolResultBlock).toolUseId);
        accounted.add(blocks[y]);
        y++;
      }
    }
    const want = [...calls].sort();
    const got = [...answered].sort();
    if (want.length !== got.length || want.some((id, x) => id !== got[x])) {
      problems.push(`[${i}] calls ${JSON.stringify(calls)} answered right after by ${JSON.stringify(answered)}`);
    }
  });
  messages.forEach((m, i) =>
    m.blocks.forEach((b, j) => {
      if (b.type === 'tool_result' && !accounted.has(b)) problems.push(`[${i}].blocks[${j}] tool result not right after its call`);
    }),
  );
  return problems;
}

/** The user turn that opens a context whose first kept message is the assistant's (after a summary). */
export const CONTINUATION_TURN: CanonicalMessage = {
  role: 'user',
  tags: ['continuation'],
  blocks: [{ type: 'text', text: '[The conversation continues from the summary above.]' }],
};

/**
 * Anthropic's turn order for a compacted context: the first turn is the user's (a short
 * continuation turn is added when compaction left an assistant message first), and consecutive
 * user messages (a kept user text next to a user message whose neighbours were summarized) are
 * merged into one turn, text and results in their order. Tool pairs are untouched: a user message
 * answering tools always follows the assistant message that called them.
 */
export function anthropicTurns(messages: CanonicalMessage[]): CanonicalMessage[] {
  const out: CanonicalMessage[] = [];
  // The index in `out` of the last turn that is not a system message (-1: none yet).
  let prev = -1;
  for (const m of messages) {
    if (m.role === 'system') {
      // An in-conversation system message must follow a user turn: the continuation turn comes before it.
      if (m.inConversation && prev < 0) {
        out.push(CONTINUATION_TURN);
        prev = out.length - 1;
      }
      out.push(m);
      continue;
    }
    if (prev < 0 && m.role === 'assistant') out.push(CONTINUATION_TURN);
    const last = prev < 0 ? undefined : out[prev];
    if (last && last.role === 'user' && m.role === 'user' && !m.blocks.some((b) => b.type === 'tool_result')) {
      out[prev] = { ...last, blocks: [...last.blocks, ...m.blocks] };
      continue;
    }
    out.push(m);
    prev = out.length - 1;
  }
  return out;
}
