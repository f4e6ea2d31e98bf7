import { CanonicalMessage } from '@compactor/compaction';
import { canonicalOf, metaOf } from '@compactor/persistence';

/**
 * The value `JSON.parse(JSON.stringify(value))` gives, without writing and reading its text: objects
 * and arrays are copied (keys in the same order, `undefined`, functions and symbols left out of
 * objects and null in arrays, `toJSON` applied, non-finite numbers null, -0 as 0, boxed primitives
 * unwrapped); strings are the same strings. The round trip through text cost a 30 MB tool result
 * ~90 ms of the event loop and two more copies of its text (bench/hostile.mjs, through the proxy).
 * Throws as JSON.stringify does on a BigInt; a cycle cannot occur (a parsed request has none, and
 * its nesting is bounded by MAX_JSON_DEPTH).
 */
export function jsonClone(value: unknown, key = ''): unknown {
  if (typeof value === 'object' && value !== null && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    value = (value as { toJSON(key: string): unknown }).toJSON(key);
  }
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value + 0 : null; // -0 + 0 is 0
    case 'bigint':
      throw new TypeError('Do not know how to serialize a BigInt');
    case 'object': {
      if (value === null) return null;
      if (value instanceof Number || value instanceof String || value instanceof Boolean) return jsonClone(value.valueOf());
      if (Array.isArray(value)) {
        const out = new Array<unknown>(value.length);
        for (let i = 0; i < value.length; i++) {
          const item = jsonClone(value[i], String(i));
          out[i] = item === undefined ? null : item;
        }
        return out;
      }
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(value)) {
        const item = jsonClone((value as Record<string, unknown>)[k], k);
        if (item === undefined) continue;
        // `__proto__` as JSON.parse makes it: an own property, not the prototype.
        if (k === '__proto__') Object.defineProperty(out, k, { value: item, enumerable: true, writable: true, configurable: true });
        else out[k] = item;
      }
      return out;
    }
    default:
      return undefined; // undefined, a function, a symbol: left out (null in an array)
  }
}

/**
 * A message exactly as the context will read it back once stored (its blocks and meta go through
 * json columns, which keep the text as sent: object keys keep their order), so a message forwarded
 * before its append committed is serialized byte for byte as it will be on every later request:
 * the prefix providers cache stays the same, and a tool_use input is the bytes the model produced.
 */
export function storedForm(message: CanonicalMessage): CanonicalMessage {
  const meta = metaOf(message);
  return canonicalOf({
    role: message.role,
    blocks: jsonClone(message.blocks),
    meta: meta === undefined ? null : jsonClone(meta),
    pinned: message.pinned ?? false,
    tags: message.tags ?? [],
  });
}
