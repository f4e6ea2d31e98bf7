import { toolUseIdOf } from '../messages/util';
import { SessionMessage } from './types';

// Tool pairs over a message list, shared by the stages that remove or rewrite messages (seed 001's
// watermark strip, seed 003's offload-compact): a pair is never split (Guarantee 2).

/**
 * The tool pairs of a message list, by message index: a result answers the latest call with its
 * id before it (so ids reused after an answer, as SWE-agent replays do, pair correctly). `open`
 * holds the messages with a call that no later message answers yet: its result may still come,
 * so a stage that removes or rewrites messages leaves them alone.
 */
export function toolPairLinks(messages: SessionMessage[]): { links: Map<number, number[]>; open: Set<number> } {
  const links = new Map<number, number[]>();
  const link = (a: number, b: number) => {
    links.set(a, [...(links.get(a) ?? []), b]);
    links.set(b, [...(links.get(b) ?? []), a]);
  };
  const lastCall = new Map<string, number>();
  const unanswered = new Map<string, number>();
  messages.forEach((m, i) => {
    for (const b of m.message.blocks) {
      const id = toolUseIdOf(b);
      if (id !== undefined) {
        lastCall.set(id, i);
        unanswered.set(id, i);
      } else if (b.type === 'tool_result') {
        const at = lastCall.get(b.toolUseId);
        if (at !== undefined && at !== i) link(at, i);
        unanswered.delete(b.toolUseId);
      }
    }
  });
  return { links, open: new Set(unanswered.values()) };
}

/** `seeds` (indexes) plus every message linked to one of them by a tool pair, transitively. */
export function closeOverToolPairs(links: Map<number, number[]>, seeds: Iterable<number>): Set<number> {
  const out = new Set(seeds);
  const queue = [...out];
  while (queue.length > 0) {
    const i = queue.pop() as number;
    for (const j of links.get(i) ?? []) {
      if (!out.has(j)) {
        out.add(j);
        queue.push(j);
      }
    }
  }
  return out;
}

/** How far back `toolNameLookup` looks for a call before it indexes every call of the list. */
const NEAR_CALLS = 16;

/**
 * The tool name a result answers, as `toolPairLinks` pairs them: the latest call with its id
 * before the result's message `at`. A provider-valid context has the call in the message just
 * before; the lookup reads back a few messages and only then indexes every call (once), so a
 * read that masks or offloads a few outputs of 10,000 messages does not walk them all.
 */
export function toolNameLookup(messages: readonly SessionMessage[]): (at: number, toolUseId: string) => string | undefined {
  let calls: Map<string, { at: number; name: string }[]> | undefined;
  const nameIn = (i: number, id: string) => {
    for (const b of messages[i].message.blocks) if (b.type === 'tool_use' && b.id === id) return b.name;
    return undefined;
  };
  return (at, id) => {
    for (let i = at - 1; i >= 0 && i >= at - NEAR_CALLS; i -= 1) {
      const name = nameIn(i, id);
      if (name !== undefined) return name;
    }
    if (!calls) {
      const index = new Map<string, { at: number; name: string }[]>();
      messages.forEach((m, i) => {
        for (const b of m.message.blocks) {
          if (b.type !== 'tool_use') continue;
          const list = index.get(b.id);
          if (list) list.push({ at: i, name: b.name });
          else index.set(b.id, [{ at: i, name: b.name }]);
        }
      });
      calls = index;
    }
    // The latest call before `at` (the list is in message order).
    let found: string | undefined;
    for (const c of calls.get(id) ?? []) {
      if (c.at >= at) break;
      found = c.name;
    }
    return found;
  };
}
