import { CanonicalMessage } from '@compactor/compaction';
import { canonicalOf, metaOf } from '@compactor/persistence';

const byJsonbOrder = (a: string, b: string): number => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length - y.length || Buffer.compare(x, y);
};

/** A JSON value as PostgreSQL's jsonb gives it back: object keys shorter first, then by their UTF-8 bytes; undefined left out. */
export function jsonbOrder(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => (v === undefined ? null : jsonbOrder(v)));
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort(byJsonbOrder)) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = jsonbOrder(v);
    }
    return out;
  }
  return value;
}

/**
 * A message exactly as the context will read it back once stored (its blocks and meta go through
 * jsonb, which reorders object keys), so a message forwarded before its append committed is
 * serialized byte for byte as it will be on every later request: the prefix providers cache stays
 * the same.
 */
export function storedForm(message: CanonicalMessage): CanonicalMessage {
  const meta = metaOf(message);
  return canonicalOf({
    role: message.role,
    blocks: jsonbOrder(message.blocks),
    meta: meta === undefined ? null : jsonbOrder(meta),
    pinned: message.pinned ?? false,
    tags: message.tags ?? [],
  });
}
