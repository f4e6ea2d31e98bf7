/**
 * Where the elements of a JSON body's top-level `messages` array lie, in bytes, found in one pass
 * over the UTF-8 text without building any object. The proxy compares a request's bytes with the
 * conversation's previous request: messages whose bytes are unchanged need no parsing again.
 */
export interface MessagesLayout {
  /** Offsets of `[` and just after `]` of the array. */
  start: number;
  end: number;
  /** Each element's [start, end) offsets. */
  items: Array<[number, number]>;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const KEYS = new Map<string, Buffer>();

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

/** The offset of the quote that ends a string whose text starts at `from`, or -1 (native search; a quote after an odd run of backslashes is escaped). */
export function stringEnd(body: Buffer, from: number): number {
  let at = from;
  for (;;) {
    const quote = body.indexOf(QUOTE, at);
    if (quote < 0) return -1;
    let slashes = 0;
    for (let k = quote - 1; k >= from && body[k] === BACKSLASH; k--) slashes++;
    if (slashes % 2 === 0) return quote;
    at = quote + 1;
  }
}

/**
 * The layout of `body.messages`, or undefined when the body is not an object holding a
 * `messages` array (or is malformed: then JSON.parse says why). A key spelled with escapes
 * (`"m\u0065ssages"`) is not recognised: undefined, and the caller parses the whole body.
 */
export function scanMessages(body: Buffer, key = 'messages', previous?: ArrayPlace): MessagesLayout | undefined {
  // `key`: the top-level array to lay out (`messages`, or a Responses request's `input`).
  let KEY = KEYS.get(key);
  if (!KEY) KEYS.set(key, (KEY = Buffer.from(JSON.stringify(key))));
  let i = 0;
  const n = body.length;
  while (i < n && isSpace(body[i])) i++;
  if (body[i] !== OPEN_OBJECT) return undefined;
  let depth = 0;
  let layout: MessagesLayout | undefined;
  // State of the messages array being read: its depth, the current element's start and last non-space byte.
  let arrayDepth = -1;
  let itemStart = -1;
  let lastByte = -1;
  let pendingKey = false;
  const resume = previous ? resumePoint(previous, body) : -1;
  if (resume >= 0) {
    // The bytes before element `resume` are the previous body's: so is the scan's state there (the array open at depth 2,
    // between two elements, the elements before it laid out as they were). The rest is scanned as usual.
    layout = { start: previous!.start, end: -1, items: previous!.ranges.slice(0, resume).map(([s, e]) => [s, e] as [number, number]) };
    depth = 2;
    arrayDepth = 2;
    i = previous!.ranges[resume][0];
  }
  for (; i < n; i++) {
    const b = body[i];
    if (b === QUOTE) {
      const from = i;
      i = stringEnd(body, i + 1);
      if (i < 0) return undefined;
      if (arrayDepth >= 0 && depth === arrayDepth && itemStart < 0) itemStart = from;
      lastByte = i;
      // A key of the top-level object: is it "messages"?
      if (depth === 1 && i - from + 1 === KEY.length && body.compare(KEY, 0, KEY.length, from, i + 1) === 0) {
        let j = i + 1;
        while (j < n && isSpace(body[j])) j++;
        if (body[j] === COLON) pendingKey = true;
      }
      continue;
    }
    if (isSpace(b)) continue;
    if (pendingKey && b !== COLON) {
      pendingKey = false;
      if (b === OPEN_ARRAY) {
        layout = { start: i, end: -1, items: [] };
        arrayDepth = depth + 1;
        itemStart = -1;
        depth++;
        lastByte = i;
        continue;
      }
    }
    if (arrayDepth >= 0 && depth === arrayDepth) {
      if (b === COMMA || b === CLOSE_ARRAY) {
        if (itemStart >= 0) layout!.items.push([itemStart, lastByte + 1]);
        else if (b === COMMA || layout!.items.length > 0) return undefined; // an empty element: malformed
        itemStart = -1;
        if (b === CLOSE_ARRAY) {
          layout!.end = i + 1;
          arrayDepth = -1;
          depth--;
        }
        lastByte = i;
        continue;
      }
      if (itemStart < 0) itemStart = i;
    }
    if (b === OPEN_OBJECT || b === OPEN_ARRAY) depth++;
    else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
      depth--;
      if (depth < 0) return undefined;
    }
    lastByte = i;
  }
  if (depth !== 0 || !layout || layout.end < 0) return undefined;
  return layout;
}

/**
 * The last element of `previous`'s array whose bytes, and every byte before it, are the same in `body` (-1: none): an
 * agent re-sends its whole history with every request, so a scan resumes there and reads only what was appended.
 */
function resumePoint(previous: ArrayPlace, body: Buffer): number {
  const ranges = previous.ranges;
  if (ranges.length === 0) return -1;
  const shared = commonPrefixLength(previous.bytes, body);
  let k = ranges.length - 1;
  while (k >= 0 && ranges[k][0] > shared) k--;
  // The element must start after the array's `[` (whose offset is then the same in both bodies).
  return k >= 0 && ranges[k][0] > previous.start ? k : -1;
}

/** How many bytes at the start of `a` and `b` are equal (memcmp in 64 KiB steps, then byte by byte). */
export function commonPrefixLength(a: Buffer, b: Buffer): number {
  const n = Math.min(a.length, b.length);
  const step = 64 * 1024;
  let i = 0;
  while (i + step <= n && a.compare(b, i, i + step, i, i + step) === 0) i += step;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** A conversation array's place in a body: the offset of its `[` and each element's [start, end) offsets. */
export interface ArrayPlace {
  bytes: Buffer;
  start: number;
  ranges: ReadonlyArray<readonly [number, number]>;
}

/**
 * Which elements of `current`'s array are byte for byte `previous`'s element at the same index and at the same place in
 * the array, inside the bytes both arrays share from their `[`. Offsets count from each array's start, so a field before
 * the array that changed length (a `stream` flag sent on every other turn, an edited system prompt) does not hide the
 * unchanged elements after it.
 */
export function unchangedElements(previous: ArrayPlace, current: ArrayPlace): (k: number) => boolean {
  const shared = commonPrefixLength(previous.bytes.subarray(previous.start), current.bytes.subarray(current.start));
  return (k) => {
    const before = previous.ranges[k];
    const now = current.ranges[k];
    if (!before || !now) return false;
    const from = now[0] - current.start;
    const to = now[1] - current.start;
    return to <= shared && before[0] - previous.start === from && before[1] - previous.start === to;
  };
}
