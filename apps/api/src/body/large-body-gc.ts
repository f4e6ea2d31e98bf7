import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Bodies of at least this many bytes ask for a garbage collection once parsed. */
export const LARGE_BODY_BYTES = 8 << 20;

type Collect = (options: { type: 'major'; execution: 'async' | 'sync' }) => void;
let collect: Collect | null | undefined;

/** V8's `gc`, exposed for this process (a new context gets it once the flag is set); null where that fails. */
function collector(): Collect | null {
  if (collect === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      collect = runInNewContext('gc') as Collect;
    } catch {
      collect = null;
    }
  }
  return collect;
}

/**
 * Once a body of `bytes` is parsed by express.json, its bytes (the socket's chunks and their concatenation,
 * 2 × 31 MB for a 30 MB tool result) and its decoded text (30 MB) are garbage, but V8 had not collected them
 * by the time the append's statement was built (~1-2 s later, a quiet heap while the token pool counts): they
 * made ~90 MB of the API's +210 MB peak. A major GC, asked for here, frees them meanwhile. Despite its
 * `execution: 'async'` it is NOT free: it was measured to block the event loop 40-145 ms after a 30 MB body.
 * It now runs only for large bodies that still go through express.json (chunked, compressed or non-utf-8
 * ones); bodies announcing 1 MB or more are parsed on a worker thread (large-json-body.ts), which collects
 * its own garbage (collectOnThisThread). Smaller bodies leave it to V8.
 */
export function collectAfterLargeBody(bytes: number): void {
  if (bytes >= LARGE_BODY_BYTES) collector()?.({ type: 'major', execution: 'async' });
}

/** A full major GC now, blocking the calling thread: for a worker thread whose pause does not stop the event loop. */
export function collectOnThisThread(bytes: number): void {
  if (bytes >= LARGE_BODY_BYTES) collector()?.({ type: 'major', execution: 'sync' });
}
