/**
 * The byte-pair counter, kept as JavaScript source text so that the calling thread and
 * the worker threads run the very same code: workers are started with `eval: true`
 * (there is no worker file to point at once tsc has compiled the lib, and Jest runs the
 * TypeScript), and `Function.prototype.toString` is not safe under coverage
 * instrumentation. The specs check it token for token against js-tiktoken's `encode`.
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
export const TOKEN_COUNTER_SOURCE = String.raw`
function createTokenCounter(rankData, options) {
  var largePieceBytes = (options && options.largePieceBytes) || 128;
  var ranks = new Map();
  var lines = rankData.bpe_ranks.split('\n');
  for (var l = 0; l < lines.length; l++) {
    if (!lines[l]) continue;
    var fields = lines[l].split(' ');
    var offset = Number.parseInt(fields[1], 10);
    for (var f = 2; f < fields.length; f++) {
      ranks.set(Buffer.from(fields[f], 'base64').toString('latin1'), offset + f - 2);
    }
  }
  var pattern = new RegExp(rankData.pat_str, 'ug');
  var NONE = Infinity;

  // Keys are latin1 strings, one char per UTF-8 byte, so a byte range is a substring.
  function rankOf(bytes, start, end) {
    var rank = ranks.get(bytes.slice(start, end));
    return rank === undefined ? NONE : rank;
  }

  // Short pieces: linear scan per merge over the pair ranks, as tiktoken does.
  function mergeShort(bytes) {
    var n = bytes.length;
    var starts = [];
    for (var i = 0; i <= n; i++) starts.push(i);
    var pairs = [];
    for (var j = 0; j < n - 1; j++) pairs.push(rankOf(bytes, j, j + 2));
    var parts = n;
    while (parts > 1) {
      var best = NONE;
      var at = -1;
      for (var k = 0; k < parts - 1; k++) {
        if (pairs[k] < best) { best = pairs[k]; at = k; }
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
  function mergeLong(bytes) {
    var n = bytes.length;
    var next = new Int32Array(n);
    var prev = new Int32Array(n);
    var alive = new Uint8Array(n);
    for (var i = 0; i < n; i++) { next[i] = i + 1; prev[i] = i - 1; alive[i] = 1; }
    var heapRank = [];
    var heapStart = [];
    var heapEnd = [];
    function before(rankA, startA, rankB, startB) {
      return rankA < rankB || (rankA === rankB && startA < startB);
    }
    function push(rank, start, end) {
      if (rank === NONE) return;
      var at = heapRank.length;
      heapRank.push(rank); heapStart.push(start); heapEnd.push(end);
      while (at > 0) {
        var parent = (at - 1) >> 1;
        if (!before(rank, start, heapRank[parent], heapStart[parent])) break;
        heapRank[at] = heapRank[parent]; heapStart[at] = heapStart[parent]; heapEnd[at] = heapEnd[parent];
        at = parent;
      }
      heapRank[at] = rank; heapStart[at] = start; heapEnd[at] = end;
    }
    function popTop() {
      var rank = heapRank.pop();
      var start = heapStart.pop();
      var end = heapEnd.pop();
      var size = heapRank.length;
      if (size === 0) return;
      var at = 0;
      for (;;) {
        var child = 2 * at + 1;
        if (child >= size) break;
        if (child + 1 < size && before(heapRank[child + 1], heapStart[child + 1], heapRank[child], heapStart[child])) child++;
        if (!before(heapRank[child], heapStart[child], rank, start)) break;
        heapRank[at] = heapRank[child]; heapStart[at] = heapStart[child]; heapEnd[at] = heapEnd[child];
        at = child;
      }
      heapRank[at] = rank; heapStart[at] = start; heapEnd[at] = end;
    }
    for (var j = 0; j < n - 1; j++) push(rankOf(bytes, j, j + 2), j, j + 2);
    var parts = n;
    while (heapRank.length > 0) {
      var start = heapStart[0];
      var end = heapEnd[0];
      popTop();
      if (!alive[start]) continue;
      var middle = next[start];
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
  var uniformFrom = (options && options.uniformRunBytes) || 65536;
  var RUN_START = 256;
  var MAX_PERIOD = 128;
  function countPeriodic(head, unit, tail, k) {
    if (k < RUN_START + 4 * MAX_PERIOD) return undefined;
    var f = [];
    var middle = unit.repeat(RUN_START);
    for (var j = 0; j <= 2 * MAX_PERIOD; j++) {
      f.push(mergeLong(head + middle + tail));
      middle += unit;
    }
    for (var period = 1; period <= MAX_PERIOD; period++) {
      var step = f[period] - f[0];
      var periodic = true;
      for (var i = 1; i + period <= 2 * MAX_PERIOD; i++) {
        if (f[i + period] - f[i] !== step) { periodic = false; break; }
      }
      if (!periodic) continue;
      var at = (k - RUN_START) % period;
      var further = RUN_START + 4 * MAX_PERIOD + ((at - (4 * MAX_PERIOD) % period) % period + period) % period;
      var check = mergeLong(head + unit.repeat(further) + tail);
      if (check !== f[at] + ((further - RUN_START - at) / period) * step) return undefined;
      return f[at] + ((k - RUN_START - at) / period) * step;
    }
    return undefined;
  }
  function countLong(bytes) {
    if (bytes.length >= uniformFrom) {
      var mid = bytes.length >> 1;
      var code = bytes.charCodeAt(mid);
      if (code < 0x80) {
        var a = mid;
        while (a > 0 && bytes.charCodeAt(a - 1) === code) a--;
        var b = mid;
        while (b < bytes.length && bytes.charCodeAt(b) === code) b++;
        if (bytes.length - (b - a) <= 32) {
          var counted = countPeriodic(bytes.slice(0, a), bytes.charAt(mid), bytes.slice(b), b - a);
          if (counted !== undefined) return counted;
        }
      }
    }
    return mergeLong(bytes);
  }

  function countPiece(piece) {
    var bytes = piece;
    for (var i = 0; i < piece.length; i++) {
      if (piece.charCodeAt(i) > 0x7f) { bytes = Buffer.from(piece, 'utf8').toString('latin1'); break; }
    }
    if (bytes.length === 1 || ranks.has(bytes)) return 1;
    return bytes.length < largePieceBytes ? mergeShort(bytes) : countLong(bytes);
  }

  return function countTokens(text) {
    var total = 0;
    var match;
    pattern.lastIndex = 0;
    while ((match = pattern.exec(text)) !== null) total += countPiece(match[0]);
    return total;
  };
}
`;

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

type CounterFactory = (rankData: RankData, options?: TokenCounterOptions) => TokenCounter;

let factory: CounterFactory | undefined;

/** Builds a counter from rank data on the calling thread, from the same source the workers run. */
export function createTokenCounter(rankData: RankData, options?: TokenCounterOptions): TokenCounter {
  // The source is a constant of this module, never outside input.
  factory ??= new Function(`${TOKEN_COUNTER_SOURCE}\nreturn createTokenCounter;`)() as CounterFactory;
  return factory(rankData, options);
}
