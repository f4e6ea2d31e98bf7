import { CanonicalMessage } from '@compactor/compaction';
import { canonicalOf, metaOf } from '@compactor/persistence';

/** A JSON value as PostgreSQL's json gives it back: the same text, so the same keys in the same order; undefined left out. */
const asStored = (value: unknown): unknown => JSON.parse(JSON.stringify(value)) as unknown;

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
    blocks: asStored(message.blocks),
    meta: meta === undefined ? null : asStored(meta),
    pinned: message.pinned ?? false,
    tags: message.tags ?? [],
  });
}
