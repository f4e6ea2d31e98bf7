import { createHash, Hash } from 'node:crypto';

/** Strings longer than this are hashed in slices of this many UTF-16 units (a 30 MB tool result is never copied whole). */
const SLICE = 1 << 16;

/** `JSON.stringify(text)` fed to the hash in slices, without building the whole escaped copy. */
function updateString(hash: Hash, text: string): void {
  if (text.length <= SLICE) {
    hash.update(JSON.stringify(text));
    return;
  }
  hash.update('"');
  for (let at = 0; at < text.length; ) {
    let end = Math.min(text.length, at + SLICE);
    // Never between the halves of a surrogate pair: JSON.stringify escapes a lone half, a pair is written as is.
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
    hash.update(JSON.stringify(text.slice(at, end)).slice(1, -1));
    at = end;
  }
  hash.update('"');
}

function update(hash: Hash, value: unknown): void {
  if (typeof value === 'string') return updateString(hash, value);
  if (Array.isArray(value)) {
    hash.update('[');
    value.forEach((item, i) => {
      if (i > 0) hash.update(',');
      // JSON.stringify writes null for what it cannot represent in an array.
      if (item === undefined || typeof item === 'function' || typeof item === 'symbol') hash.update('null');
      else update(hash, item);
    });
    hash.update(']');
    return;
  }
  if (typeof value === 'object' && value !== null && typeof (value as { toJSON?: unknown }).toJSON !== 'function') {
    hash.update('{');
    let first = true;
    for (const key of Object.keys(value)) {
      const item = (value as Record<string, unknown>)[key];
      if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue;
      if (!first) hash.update(',');
      first = false;
      updateString(hash, key);
      hash.update(':');
      update(hash, item);
    }
    hash.update('}');
    return;
  }
  hash.update(JSON.stringify(value) ?? 'null');
}

/**
 * The SHA-256 (hex) of `JSON.stringify(value)`, computed without building that string: a request body
 * holding a 30 MB tool result no longer costs a 30 MB copy (and its garbage collection) to be hashed.
 * Equal to `createHash('sha256').update(JSON.stringify(value)).digest('hex')` for parsed JSON values,
 * so hashes stored with idempotency keys before still match.
 */
export function jsonSha256(value: unknown): string {
  const hash = createHash('sha256');
  update(hash, value);
  return hash.digest('hex');
}
