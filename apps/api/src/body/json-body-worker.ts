/**
 * The worker thread's program for large JSON bodies (see LargeJsonParser): the checks and the parse
 * express.json does on the event loop (depth, UTF-8 decoding, JSON.parse, U+0000 / lone surrogates).
 */
import { parentPort } from 'node:worker_threads';
import { collectOnThisThread } from './large-body-gc';
import { MAX_JSON_DEPTH, mayHoldUnstorableText, nestsDeeperThan, unstorableText, UnstorableText } from './json-body-limits';

export interface ParseRequest {
  id: number;
  /** The body's bytes (transferred). */
  bytes: Uint8Array;
}

export type ParseReply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; kind: 'too-deep' }
  | { id: number; ok: false; kind: 'invalid-json' }
  | { id: number; ok: false; kind: 'text'; problem: UnstorableText }
  | { id: number; ok: false; kind: 'failed'; message: string };

/** The first character that is not JSON whitespace (space, tab, LF, CR), or undefined. */
function firstNonWhitespace(text: string): string | undefined {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return text[i];
  }
  return undefined;
}

/** As express.json parses (strict, utf-8): the BOM dropped (iconv-lite's decode), an empty body is {}, only an object or array at the top. */
export function parseJsonBody(id: number, bytes: Uint8Array): ParseReply {
  const body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (nestsDeeperThan(body, MAX_JSON_DEPTH)) return { id, ok: false, kind: 'too-deep' };
  const suspect = mayHoldUnstorableText(body);
  let text = body.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.length === 0) return { id, ok: true, value: {} };
  const first = firstNonWhitespace(text);
  if (first !== '{' && first !== '[') return { id, ok: false, kind: 'invalid-json' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { id, ok: false, kind: 'invalid-json' };
  }
  const problem = suspect ? unstorableText(value) : undefined;
  return problem ? { id, ok: false, kind: 'text', problem } : { id, ok: true, value };
}

parentPort?.on('message', (request: ParseRequest) => {
  let reply: ParseReply;
  try {
    reply = parseJsonBody(request.id, request.bytes);
  } catch (error) {
    reply = { id: request.id, ok: false, kind: 'failed', message: error instanceof Error ? error.message : String(error) };
  }
  parentPort?.postMessage(reply);
  // The body's bytes, text and parsed value are garbage once posted: freed now, on this thread (see large-body-gc).
  collectOnThisThread(request.bytes.byteLength);
});
