/**
 * The largest (smallest) of `start` and `values`, by a loop. `Math.max(...values)` passes every value as an argument,
 * and past about 100,000 of them (the seqs of a long session's messages, a 30 MB log's ledger entries) it throws
 * "Maximum call stack size exceeded".
 */
export function maxOf(start: number, values: Iterable<number>): number {
  let out = start;
  for (const v of values) if (v > out) out = v;
  return out;
}

export function minOf(start: number, values: Iterable<number>): number {
  let out = start;
  for (const v of values) if (v < out) out = v;
  return out;
}
