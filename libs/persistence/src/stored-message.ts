import { Block, CanonicalMessage } from '@compactor/compaction';
import { ContextMessage } from './message.repository';
import { Prisma } from './generated/prisma/client';

/** Message-level canonical fields stored beside the blocks (the `meta` column); `inConversation` marks an Anthropic mid-conversation system message. */
interface StoredMeta {
  origin?: CanonicalMessage['origin'];
  contentForm?: CanonicalMessage['contentForm'];
  extras?: CanonicalMessage['extras'];
  inConversation?: true;
}

/** The `meta` column for a canonical message: only the fields it has, or undefined when none. */
export function metaOf(message: CanonicalMessage): Prisma.InputJsonValue | undefined {
  const meta: StoredMeta = {};
  if (message.origin) meta.origin = message.origin;
  if (message.contentForm) meta.contentForm = message.contentForm;
  if (message.extras && Object.keys(message.extras).length > 0) meta.extras = message.extras;
  if (message.inConversation) meta.inConversation = true;
  return Object.keys(meta).length > 0 ? (meta as Prisma.InputJsonValue) : undefined;
}

/** A stored row back as the canonical message it was parsed into. */
export function canonicalOf(row: Pick<ContextMessage, 'role' | 'blocks' | 'meta' | 'pinned' | 'tags'>): CanonicalMessage {
  const meta = (row.meta ?? {}) as StoredMeta;
  return {
    role: row.role,
    blocks: row.blocks as Block[],
    ...(row.pinned ? { pinned: true } : {}),
    ...(row.tags.length ? { tags: row.tags } : {}),
    ...(meta.origin ? { origin: meta.origin } : {}),
    ...(meta.contentForm ? { contentForm: meta.contentForm } : {}),
    ...(meta.extras ? { extras: meta.extras } : {}),
    ...(meta.inConversation ? { inConversation: true } : {}),
  };
}
