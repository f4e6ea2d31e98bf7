import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Bodies of at least this many bytes ask for a garbage collection once parsed. */
export const LARGE_BODY_BYTES = 8 << 20;

type Collect = (options: { type: 'major'; execution: 'async' }) => void;
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
 * Once a body of `bytes` is parsed, its bytes (the socket's chunks and their concatenation, 2 × 31 MB for a
 * 30 MB tool result) and its decoded text (30 MB) are garbage, but V8 had not collected them by the time
 * the append's statement was built (~1-2 s later, a quiet heap while the token pool counts): they made
 * ~90 MB of the API's +210 MB peak. An incremental (async) major GC, asked for here, frees them meanwhile
 * without a pause of its own on the event loop. Smaller bodies leave it to V8.
 */
export function collectAfterLargeBody(bytes: number): void {
  if (bytes >= LARGE_BODY_BYTES) collector()?.({ type: 'major', execution: 'async' });
}
