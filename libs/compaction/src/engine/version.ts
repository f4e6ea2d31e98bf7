import { createHash } from 'node:crypto';
import { CanonicalMessage } from '../messages/canonical';
import { SessionMessage } from './session-message';

/**
 * A context version's compacted prefix (SPEC.md "Context"): immutable, it names what the
 * compactions did to the messages up to `coversThroughSeq`. The context is this prefix applied
 * to the history, plus every message after `coversThroughSeq`, assembled on read.
 */
export interface Checkpoint {
  /** Content hash (Guarantee 8: ids that appear in context text are content hashes). */
  id: string;
  fromSeq: number;
  toSeq: number;
  /** 0 = recent, then old, ancient, ultra (seed 004's aging levels). */
  level: number;
  text: string;
  tokens: number;
  /** Tokens of the messages it replaced. */
  originalTokens: number;
  agedFromId?: string;
  /**
   * The Facts section (SPEC.md "Facts ledger"): the ledger entries of the span that its summary
   * lacks, by weight. Aging shortens `text`, never these.
   */
  facts?: string;
}

/** The line that opens a checkpoint's Facts section. */
export const FACTS_HEADER = 'Facts (from the ledger, verbatim):';

/** A checkpoint's body as sent: the summary, then its Facts section. */
export function checkpointBody(c: Pick<Checkpoint, 'text' | 'facts'>): string {
  return c.facts ? `${c.text}\n\n${FACTS_HEADER}\n${c.facts}` : c.text;
}

/**
 * What a compaction did to one covered message. `masked`, `offloaded` and `compressed` keep the
 * message (same role, same tool ids, so tool pairs stay intact) in a smaller form; `dropped`
 * and `summarized` remove it from the context (the history keeps it, Guarantee 1).
 */
export type Treatment =
  /** Tool outputs replaced by a one-line placeholder (observation masking). */
  | { kind: 'masked'; message: CanonicalMessage; tokens: number }
  /** Tool outputs replaced by a reference to an artifact plus a digest (seed 003; `GET /v1/artifacts/:id`). */
  | { kind: 'offloaded'; artifactIds: string[]; message: CanonicalMessage; tokens: number }
  /** Rewritten in a smaller form by a stage: per-result compression (seed 002), tool blocks stripped before a watermark (seed 001). */
  | { kind: 'compressed'; message: CanonicalMessage; tokens: number; stage: string }
  /** Removed whole (seed 001: a message left empty once its tool blocks are gone). */
  | { kind: 'dropped'; stage: string }
  /** Replaced by a checkpoint. */
  | { kind: 'summarized'; checkpointId: string };

export interface VersionPrefix {
  coversThroughSeq: number;
  /** In seq order. */
  checkpoints: Checkpoint[];
  /** What happened to covered messages, by seq; covered messages without a treatment are kept as they are. */
  treatments: Record<number, Treatment>;
  /** Seed 001: the seq of the latest watermark tool call; only ever advances. */
  watermarkSeq?: number;
  /**
   * The goal block (seed 004: goal, locked decisions, …), frozen in the version so the prefix sent
   * to the provider stays stable between compactions; placed right after the system prompt.
   */
  goalBlock?: { text: string; tokens: number };
}

/** The system message the goal block becomes in the context. */
export function goalBlockMessage(text: string): CanonicalMessage {
  return { role: 'system', tags: ['goal'], blocks: [{ type: 'text', text: `[GOAL BLOCK]\n${text}` }] };
}

export const EMPTY_PREFIX: VersionPrefix = { coversThroughSeq: 0, checkpoints: [], treatments: {} };

/** Offloaded content a compaction produced: the worker stores it (byte-exact) before it commits the version. */
export interface ArtifactOutput {
  /** Content hash (`art_…`), the id the context's reference names. */
  id: string;
  seq: number;
  toolUseId?: string;
  toolName?: string;
  content: string;
  tokens: number;
}

/** `sha256` of the parts, hex, shortened: stable across runs and machines. */
export function contentId(prefix: string, ...parts: Array<string | number>): string {
  const hash = createHash('sha256');
  for (const p of parts) hash.update(`${String(p).length}:${p}|`);
  return `${prefix}_${hash.digest('hex').slice(0, 20)}`;
}

/** The system message a checkpoint becomes in the context (after the system prompt and goal block). */
export function checkpointMessage(c: Checkpoint): CanonicalMessage {
  return {
    role: 'system',
    tags: ['checkpoint'],
    blocks: [{ type: 'text', text: `[CHECKPOINT ${c.id} · messages ${c.fromSeq}–${c.toSeq}]\n${checkpointBody(c)}` }],
  };
}

/**
 * The message of a checkpoint or goal block, one object per prefix part while it lives: a context read
 * after an append finds the same objects again, so the provider-valid pass can reuse what it decided
 * for them (valid-prefix.ts). Messages are never mutated.
 */
const prefixMessages = new WeakMap<object, CanonicalMessage>();
function memoized(part: object, make: () => CanonicalMessage): CanonicalMessage {
  let message = prefixMessages.get(part);
  if (message === undefined) {
    message = make();
    prefixMessages.set(part, message);
  }
  return message;
}

/**
 * The context's messages: system prompts first (as received; not in-conversation system messages,
 * which keep their place), then the checkpoints in force,
 * then the covered messages that were kept (masked ones in their masked form), then the live
 * messages. `checkpointTokens` counts a checkpoint message (the caller binds the model).
 */
export function applyPrefix(prefix: VersionPrefix, history: readonly SessionMessage[], checkpointTokens: (c: Checkpoint) => number): SessionMessage[] {
  const systems: SessionMessage[] = [];
  const rest: SessionMessage[] = [];
  for (const m of history) {
    const t = m.seq <= prefix.coversThroughSeq ? prefix.treatments[m.seq] : undefined;
    if (t?.kind === 'summarized' || t?.kind === 'dropped') continue;
    const kept = t && 'message' in t ? { seq: m.seq, message: t.message, tokens: t.tokens } : m;
    // In-conversation system messages are conversation: they stay where they are.
    (m.message.role === 'system' && !m.message.inConversation ? systems : rest).push(kept);
  }
  const checkpoints = prefix.checkpoints.map((c) => ({ seq: c.toSeq, message: memoized(c, () => checkpointMessage(c)), tokens: checkpointTokens(c) }));
  const goalBlock = prefix.goalBlock;
  const goal = goalBlock ? [{ seq: 0, message: memoized(goalBlock, () => goalBlockMessage(goalBlock.text)), tokens: goalBlock.tokens }] : [];
  return [...systems, ...goal, ...checkpoints, ...rest];
}
