/**
 * The byte-pair counter. The calling thread and the worker threads (`bpe-worker.ts`) run this
 * same function. The specs check it token for token against js-tiktoken's `encode`.
 *
 * Why not call js-tiktoken's `encode(text, [], []).length` directly:
 * - its merge loop rescans every pair after each merge, so a single long pre-token (a run
 *   of 20,000 `=` or spaces in tool output) takes over a minute and a 1 MB run never
 *   ends; the heap merge below gives the same result in O(n log n);
 * - it builds an array of every token id and a `"1,2,3"` key per piece; counting on
 *   latin1 keys is ~4x faster and loads the ranks ~3x faster.
 * The rank data (`pat_str`, `bpe_ranks`) still comes from js-tiktoken's rank files, and
 * special-token text such as `<|endoftext|>` is plain text, as with `encode(text, [], [])`.
 *
 * Same algorithm as js-tiktoken's `bytePairMerge`: repeatedly merge the adjacent pair
 * whose bytes have the lowest rank, the leftmost one on ties, until no pair is a token;
 * the count is the number of parts left (every single byte is a token).
 */
/** The shape of js-tiktoken's rank files (`js-tiktoken/ranks/*`). */
export interface RankData {
  pat_str: string;
  bpe_ranks: string;
}

export interface TokenCounterOptions {
  /** Pieces of at least this many UTF-8 bytes use the heap merge (tests lower it to cover that path). */
  largePieceBytes?: number;
  /** Pieces of at least this many bytes that repeat one ASCII character are counted by their period (tests lower it). */
  uniformRunBytes?: number;
}

export type TokenCounter = (text: string) => number;

/** Builds a counter from rank data; each thread builds its own (~0.2-0.5 s per encoding). */
export function createTokenCounter(rankData: RankData, options?: TokenCounterOptions): TokenCounter {
  const largePieceBytes = options?.largePieceBytes || 128;
  const ranks = new Map<string, number>();
  const lines = rankData.bpe_ranks.split('\n');
  for (let l = 0; l < lines.length; l++) {
    if (!lines[l]) continue;
    const fields = lines[l].split(' ');
    const offset = Number.parseInt(fields[1], 10);
    for (let f = 2; f < fields.length; f++) {
      ranks.set(Buffer.from(fields[f], 'base64').toString('latin1'), offset + f - 2);
    }
  }
  const pattern = new RegExp(rankData.pat_str, 'ug');
  const NONE = Infinity;

  // Keys are latin1 strings, one char per UTF-8 byte, so a byte range is a substring.
  function rankOf(bytes: string, start: number, end: number): number {
    const rank = ranks.get(bytes.slice(start, end));
    return rank === undefined ? NONE : rank;
  }

  // Short pieces: linear scan per merge over the pair ranks, as tiktoken does.
  function mergeShort(bytes: string): number {
    const n = bytes.length;
    const starts: number[] = [];
    for (let i = 0; i <= n; i++) starts.push(i);
    const pairs: number[] = [];
    for (let j = 0; j < n - 1; j++) pairs.push(rankOf(bytes, j, j + 2));
    let parts = n;
    while (parts > 1) {
      let best = NONE;
      let at = -1;
      for (let k = 0; k < parts - 1; k++) {
        if (pairs[k] < best) {
          best = pairs[k];
          at = k;
        }
      }
      if (at < 0) break;
      starts.splice(at + 1, 1);
      pairs.splice(at, 1);
      parts--;
      if (at > 0) pairs[at - 1] = rankOf(bytes, starts[at - 1], starts[at + 1]);
      if (at < parts - 1) pairs[at] = rankOf(bytes, starts[at], starts[at + 2]);
    }
    return parts;
  }

  // Long pieces: linked list of parts plus a min-heap of (rank, start, end) pairs with
  // lazy deletion. Ordering by (rank, start) picks the same pair as the linear scan.
  function mergeLong(bytes: string): number {
    const n = bytes.length;
    const next = new Int32Array(n);
    const prev = new Int32Array(n);
    const alive = new Uint8Array(n);
    for (let i = 0; i < n; i++) {
      next[i] = i + 1;
      prev[i] = i - 1;
      alive[i] = 1;
    }
    const heapRank: number[] = [];
    const heapStart: number[] = [];
    const heapEnd: number[] = [];
    function before(rankA: number, startA: number, rankB: number, startB: number): boolean {
      return rankA < rankB || (rankA === rankB && startA < startB);
    }
    function push(rank: number, start: number, end: number): void {
      if (rank === NONE) return;
      let at = heapRank.length;
      heapRank.push(rank);
      heapStart.push(start);
      heapEnd.push(end);
      while (at > 0) {
        const parent = (at - 1) >> 1;
        if (!before(rank, start, heapRank[parent], heapStart[parent])) break;
        heapRank[at] = heapRank[parent];
        heapStart[at] = heapStart[parent];
        heapEnd[at] = heapEnd[parent];
        at = parent;
      }
      heapRank[at] = rank;
      heapStart[at] = start;
      heapEnd[at] = end;
    }
    // Removes the top: the last entry is sifted down from the root (only called on a non-empty heap).
    function popTop(): void {
      const rank = heapRank.pop() as number;
      const start = heapStart.pop() as number;
      const end = heapEnd.pop() as number;
      const size = heapRank.length;
      if (size === 0) return;
      let at = 0;
      for (;;) {
        let child = 2 * at + 1;
        if (child >= size) break;
        if (child + 1 < size && before(heapRank[child + 1], heapStart[child + 1], heapRank[child], heapStart[child])) child++;
        if (!before(heapRank[child], heapStart[child], rank, start)) break;
        heapRank[at] = heapRank[child];
        heapStart[at] = heapStart[child];
        heapEnd[at] = heapEnd[child];
        at = child;
      }
      heapRank[at] = rank;
      heapStart[at] = start;
      heapEnd[at] = end;
    }
    for (let j = 0; j < n - 1; j++) push(rankOf(bytes, j, j + 2), j, j + 2);
    let parts = n;
    while (heapRank.length > 0) {
      const start = heapStart[0];
      const end = heapEnd[0];
      popTop();
      if (!alive[start]) continue;
      const middle = next[start];
      if (middle >= n || next[middle] !== end) continue; // stale entry
      alive[middle] = 0;
      next[start] = end;
      if (end < n) prev[end] = start;
      parts--;
      if (prev[start] >= 0) push(rankOf(bytes, prev[start], end), prev[start], end);
      if (end < n) push(rankOf(bytes, start, next[end]), start, next[end]);
    }
    return parts;
  }

  // A long piece that is one ASCII character repeated, give or take a few bytes at its ends (a
  // megabyte of spaces or dashes in tool output): over such a run, BPE's count grows periodically
  // once past the run's first tokens (every period of P characters adds K tokens; P is at most
  // 128, no token being longer). The count is taken from exact merges of short versions of the
  // piece, after checking the period on them and once more further out; if a check fails the
  // whole piece is merged as usual. Measured: a 1 MB run took 1.3-2.8 s to merge.
  const uniformFrom = options?.uniformRunBytes || 65536;
  const RUN_START = 256;
  const MAX_PERIOD = 128;
  function countPeriodic(head: string, unit: string, tail: string, k: number): number | undefined {
    if (k < RUN_START + 4 * MAX_PERIOD) return undefined;
    const f: number[] = [];
    let middle = unit.repeat(RUN_START);
    for (let j = 0; j <= 2 * MAX_PERIOD; j++) {
      f.push(mergeLong(head + middle + tail));
      middle += unit;
    }
    for (let period = 1; period <= MAX_PERIOD; period++) {
      const step = f[period] - f[0];
      let periodic = true;
      for (let i = 1; i + period <= 2 * MAX_PERIOD; i++) {
        if (f[i + period] - f[i] !== step) {
          periodic = false;
          break;
        }
      }
      if (!periodic) continue;
      const at = (k - RUN_START) % period;
      const further = RUN_START + 4 * MAX_PERIOD + ((((at - ((4 * MAX_PERIOD) % period)) % period) + period) % period);
      const check = mergeLong(head + unit.repeat(further) + tail);
      if (check !== f[at] + ((further - RUN_START - at) / period) * step) return undefined;
      return f[at] + ((k - RUN_START - at) / period) * step;
    }
    return undefined;
  }
  function countLong(bytes: string): number {
    if (bytes.length >= uniformFrom) {
      const mid = bytes.length >> 1;
      const code = bytes.charCodeAt(mid);
      if (code < 0x80) {
        let a = mid;
        while (a > 0 && bytes.charCodeAt(a - 1) === code) a--;
        let b = mid;
        while (b < bytes.length && bytes.charCodeAt(b) === code) b++;
        if (bytes.length - (b - a) <= 32) {
          const counted = countPeriodic(bytes.slice(0, a), bytes.charAt(mid), bytes.slice(b), b - a);
          if (counted !== undefined) return counted;
        }
      }
    }
    return mergeLong(bytes);
  }

  function countPiece(piece: string): number {
    let bytes = piece;
    for (let i = 0; i < piece.length; i++) {
      if (piece.charCodeAt(i) > 0x7f) {
        bytes = Buffer.from(piece, 'utf8').toString('latin1');
        break;
      }
    }
    if (bytes.length === 1 || ranks.has(bytes)) return 1;
    return bytes.length < largePieceBytes ? mergeShort(bytes) : countLong(bytes);
  }

  return function countTokens(text: string): number {
    let total = 0;
    let match: RegExpExecArray | null;
    pattern.lastIndex = 0;
    while ((match = pattern.exec(text)) !== null) total += countPiece(match[0]);
    return total;
  };
}
