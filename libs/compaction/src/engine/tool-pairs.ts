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
