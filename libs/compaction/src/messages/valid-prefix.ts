/**
 * The provider-valid pass (provider-valid.ts) for a sequence that only grows at its end, in time
 * proportional to what was added (issue: the agent loop's hot path). Everything before the last
 * assistant message is final: `makeProviderValid` decides each tool exchange from an assistant
 * message up to the next one, so messages appended after it cannot change the output for the
 * messages before it. Only two things reach back across that boundary, and either one makes the
 * pass run whole again:
 * - a call given a fresh id (an id reused after its first call was answered): the fresh id avoids
 *   every id of the sequence, the later ones included;
 * - an added message that names an id the final part already holds.
 * The result is always exactly `makeProviderValid` of the whole sequence (the property tests
 * compare them).
 */
import { CanonicalMessage } from './canonical';
import { DroppedPart, makeProviderValid } from './provider-valid';
import { toolUseIdOf } from './util';

export interface ValidPrefix {
  /** Input messages [0, end) are final. */
  readonly end: number;
  /** The input the prefix was computed on (only its messages through `end` are relied on; never mutated). */
  readonly input: readonly CanonicalMessage[];
  /** `makeProviderValid`'s output for input [0, end). */
  readonly messages: readonly CanonicalMessage[];
  readonly sources: readonly number[];
  readonly dropped: readonly DroppedPart[];
  /**
   * Every call and result id of the input, with the index of the message that first names it. Shared
   * by the prefixes of one growing sequence and only ever added to: a prefix reads the ids below its
   * own `end`. An id a discarded continuation added can only make a later check fall back to the whole
   * pass, never miss an id.
   */
  readonly ids: Map<string, number>;
}

export interface IncrementalValid {
  messages: CanonicalMessage[];
  dropped: DroppedPart[];
  sources: number[];
  /** The final part of this result, for the next call on the same sequence grown (undefined: none can be kept). */
  prefix: ValidPrefix | undefined;
  /** Whether `prefix` was used (false: the whole pass ran). */
  incremental: boolean;
}

function idsOf(m: CanonicalMessage): string[] {
  const out: string[] = [];
  for (const b of m.blocks) {
    const id = b.type === 'tool_result' ? b.toolUseId : toolUseIdOf(b);
    if (id !== undefined) out.push(id);
  }
  return out;
}

/**
 * Whether `messages` starts with the prefix's input through the assistant message at `end` (the same
 * message objects): that message is what makes the part before it final.
 */
function extendsInput(prefix: ValidPrefix, messages: readonly CanonicalMessage[]): boolean {
  if (prefix.end >= messages.length) return false;
  if (prefix.input === messages) return true;
  for (let i = 0; i <= prefix.end; i += 1) if (prefix.input[i] !== messages[i]) return false;
  return true;
}

/**
 * `makeProviderValid(messages)`, reusing `prefix` when `messages` extends the sequence it was computed
 * on; returns the prefix to pass next time.
 */
export function makeProviderValidIncremental(messages: CanonicalMessage[], prefix?: ValidPrefix): IncrementalValid {
  if (prefix && extendsInput(prefix, messages)) {
    const tail = messages.slice(prefix.end);
    const clash = tail.some((m) =>
      idsOf(m).some((id) => {
        const at = prefix.ids.get(id);
        return at !== undefined && at < prefix.end;
      }),
    );
    if (!clash) {
      const t = makeProviderValid(tail);
      if (t.renamed === 0) {
        const result = {
          messages: [...prefix.messages, ...t.messages],
          sources: [...prefix.sources, ...t.sources.map((s) => s + prefix.end)],
          dropped: [...prefix.dropped, ...t.dropped.map((d) => ({ ...d, index: d.index + prefix.end }))],
        };
        for (let i = prefix.end; i < messages.length; i += 1) {
          for (const id of idsOf(messages[i])) {
            const at = prefix.ids.get(id);
            if (at === undefined || at >= prefix.end) prefix.ids.set(id, Math.min(at ?? i, i));
          }
        }
        return { ...result, prefix: nextPrefix(messages, result, prefix.ids) ?? prefix, incremental: true };
      }
    }
  }
  const whole = makeProviderValid(messages);
  const result = { messages: whole.messages, sources: whole.sources, dropped: whole.dropped };
  if (whole.renamed > 0) return { ...result, prefix: undefined, incremental: false };
  const ids = new Map<string, number>();
  messages.forEach((m, i) => {
    for (const id of idsOf(m)) if (!ids.has(id)) ids.set(id, i);
  });
  return { ...result, prefix: nextPrefix(messages, result, ids), incremental: false };
}

/** The final part of a result: up to the last assistant message of the input (undefined when there is none). */
function nextPrefix(
  messages: readonly CanonicalMessage[],
  result: { messages: readonly CanonicalMessage[]; sources: readonly number[]; dropped: readonly DroppedPart[] },
  ids: Map<string, number>,
): ValidPrefix | undefined {
  let end = messages.length - 1;
  while (end > 0 && messages[end].role !== 'assistant') end -= 1;
  if (end <= 0) return undefined;
  // Exchanges never span an assistant message, so every output of input [0, end) comes before any of input [end, …).
  let k = 0;
  while (k < result.sources.length && result.sources[k] < end) k += 1;
  return {
    end,
    input: messages,
    messages: result.messages.slice(0, k),
    sources: result.sources.slice(0, k),
    dropped: result.dropped.filter((d) => d.index < end),
    ids,
  };
}
