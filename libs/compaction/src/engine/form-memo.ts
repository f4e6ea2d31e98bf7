import { CanonicalMessage } from '../messages/canonical';
import { CountMessage, SessionMessage } from './types';

/**
 * A message's reduced form (masked, offloaded), kept with the message object while it lives, by what decided it: its seq,
 * its count, the counter and, per block, the tool name its output went under ('' = left as it was). The read-time fallback
 * reduces the same stored messages on every read until a compaction lands; scanning and counting them again was most of a
 * read (the masking's ledger scan ~0.6 s at 1,000 messages, the offloaded references' counts a third of a read at 10,000).
 */
export function formMemo<R>(): (m: SessionMessage, names: string[], count: CountMessage, make: () => R) => R {
  const memo = new WeakMap<CanonicalMessage, { seq: number; tokens: number; names: string[]; count: CountMessage; result: R }>();
  return (m, names, count, make) => {
    const known = memo.get(m.message);
    if (known && known.seq === m.seq && known.tokens === m.tokens && known.count === count && known.names.length === names.length && known.names.every((x, k) => x === names[k])) return known.result;
    const result = make();
    memo.set(m.message, { seq: m.seq, tokens: m.tokens, names, count, result });
    return result;
  };
}
