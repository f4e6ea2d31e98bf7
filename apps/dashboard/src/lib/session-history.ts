import type { components } from '../api/schema';
import { checkpointAnchor } from './session-checkpoints';
import { formatTokens } from './session-format';

export type VersionDiff = components['schemas']['VersionDiff'];
export type HistoryMessage = components['schemas']['HistoryMessage'];
export type ContextResponse = components['schemas']['ContextResponse'];
export type ContextProtection = components['schemas']['ContextProtection'];

/** Messages per page of the full history. */
export const HISTORY_PAGE_SIZE = 50;
/** Characters of one block rendered in the page; the full message stays one link away. */
export const BLOCK_PREVIEW_CHARS = 2_000;
/** A block longer than this (characters or lines) starts collapsed. */
const COLLAPSE_CHARS = 600;
const COLLAPSE_LINES = 12;

/** What the head version did to a history message (from the diff between version 0 and the head). */
export type Treatment =
  | { kind: 'masked' }
  | { kind: 'offloaded'; artifactIds: string[] }
  | { kind: 'summarized'; checkpointId: string }
  | { kind: 'compressed' }
  | { kind: 'dropped' };

/** seq → treatment; a plain object so it crosses from server to client components. */
export type Treatments = Record<number, Treatment>;

export function treatmentsFromDiff(diff: Pick<VersionDiff, 'messages'> | null): Treatments {
  const out: Treatments = {};
  if (!diff) return out;
  for (const e of diff.messages.summarized) out[e.seq] = { kind: 'summarized', checkpointId: e.checkpointId };
  for (const e of diff.messages.dropped) out[e.seq] = { kind: 'dropped' };
  for (const e of diff.messages.compressed) out[e.seq] = { kind: 'compressed' };
  for (const e of diff.messages.masked) out[e.seq] = { kind: 'masked' };
  for (const e of diff.messages.offloaded) out[e.seq] = { kind: 'offloaded', artifactIds: e.artifactIds };
  return out;
}

export type ProtectionReason = 'system' | 'pinned' | 'goal' | 'latest' | 'user-text';

export const PROTECTION_LABELS: Record<ProtectionReason, string> = {
  system: 'System prompt',
  pinned: 'Pinned',
  goal: 'Goal block',
  latest: 'Latest messages',
  'user-text': 'User text',
};

export function protectionReasons(
  message: { seq: number; role: string; pinned?: boolean; tags?: string[] },
  protection: ContextProtection | undefined,
): ProtectionReason[] {
  const reasons: ProtectionReason[] = [];
  if (message.tags?.includes('goal')) reasons.push('goal');
  else if (message.role === 'system') reasons.push('system');
  if (message.pinned) reasons.push('pinned');
  if (protection && protection.latestFromSeq != null && message.seq >= protection.latestFromSeq && message.seq > 0) reasons.push('latest');
  if (protection?.userTextSeqs.includes(message.seq)) reasons.push('user-text');
  return reasons;
}

/** One canonical block, ready to render: a title, a preview of its text and whether it starts collapsed. */
export interface BlockView {
  kind: 'text' | 'tool_use' | 'tool_result' | 'thinking' | 'image' | 'other';
  title: string;
  body: string;
  /** Characters left out of `body`. */
  omitted: number;
  lines: number;
  collapsed: boolean;
  isError: boolean;
  /** Artifact ids named in the text (offloaded output). */
  artifactIds: string[];
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (isRecord(part) ? (typeof part.text === 'string' ? part.text : JSON.stringify(part)) : String(part)))
      .join('\n');
  }
  if (content === undefined || content === null) return '';
  return JSON.stringify(content, null, 2);
}

const ARTIFACT_ID = /\bart_[A-Za-z0-9_-]{4,100}/g;

function view(kind: BlockView['kind'], title: string, raw: string, isError = false): BlockView {
  // The HTML parser turns CR LF into LF; doing it here keeps server and browser text identical.
  const text = raw.replace(/\r\n?/g, '\n');
  const lines = text === '' ? 0 : text.split('\n').length;
  const body = text.length > BLOCK_PREVIEW_CHARS ? text.slice(0, BLOCK_PREVIEW_CHARS) : text;
  return {
    kind,
    title,
    body,
    omitted: text.length - body.length,
    lines,
    collapsed: text.length > COLLAPSE_CHARS || lines > COLLAPSE_LINES,
    isError,
    artifactIds: [...new Set(text.match(ARTIFACT_ID) ?? [])],
  };
}

export function blockViews(blocks: unknown[]): BlockView[] {
  return blocks.map((block): BlockView => {
    if (!isRecord(block)) return view('other', 'Block', JSON.stringify(block));
    switch (block.type) {
      case 'text':
        return view('text', 'Text', str(block.text));
      case 'tool_use':
        return view('tool_use', `Tool call: ${str(block.name) || 'tool'}`, typeof block.input === 'string' ? block.input : JSON.stringify(block.input ?? {}, null, 2));
      case 'tool_result': {
        const isError = block.isError === true;
        return view('tool_result', isError ? 'Tool error' : 'Tool output', textOf(block.content), isError);
      }
      case 'thinking':
        return view('thinking', 'Thinking', str(block.thinking));
      case 'redacted_thinking':
        return view('thinking', 'Redacted thinking', '(redacted by the provider)');
      case 'image':
        return view('image', 'Image', '(image)');
      case 'opaque':
        return view('other', `Provider block (${str(block.provider) || 'opaque'})`, JSON.stringify(block.raw ?? {}, null, 2));
      default:
        // Some stored canonical text blocks carry no type field.
        if (typeof block.text === 'string') return view('text', 'Text', block.text);
        return view('other', `Block ${str(block.type)}`.trim(), JSON.stringify(block, null, 2));
    }
  });
}

/** Where a history message stands in the context now. */
export type HistoryStatus =
  | { kind: 'verbatim' }
  | { kind: 'masked' }
  | { kind: 'offloaded'; artifactIds: string[] }
  | { kind: 'compressed' }
  | { kind: 'summarized'; checkpointId: string; anchor: string }
  | { kind: 'dropped' }
  | { kind: 'left-out'; reason: string }
  | { kind: 'not-sent'; reason: string };

export const STATUS_LABELS: Record<HistoryStatus['kind'], string> = {
  verbatim: 'In context',
  masked: 'Masked',
  offloaded: 'Offloaded',
  compressed: 'Compressed',
  summarized: 'Summarized',
  dropped: 'Dropped',
  'left-out': 'Left out',
  'not-sent': 'Not sent',
};

export interface HistoryRow {
  seq: number;
  anchor: string;
  role: string;
  tokens: number;
  tokensText: string;
  createdAt: string;
  status: HistoryStatus;
  protections: ProtectionReason[];
  blocks: BlockView[];
}

export interface HistoryContext {
  treatments: Treatments;
  /** Seqs of the history messages the context sends (whole or treated); undefined when the API did not say. */
  sentSeqs?: ReadonlySet<number>;
  leftOut: { seq: number; reason: string }[];
  protection?: ContextProtection;
  fallback: string | null;
  /** Resolves the checkpoint a summarized message lives in now (aging writes new checkpoints). */
  currentCheckpoint?: (id: string) => string;
}

export const messageAnchor = (seq: number) => `message-${seq}`;

export function historyStatus(seq: number, ctx: HistoryContext): HistoryStatus {
  const treatment = ctx.treatments[seq];
  if (treatment?.kind === 'summarized') {
    const id = ctx.currentCheckpoint?.(treatment.checkpointId) ?? treatment.checkpointId;
    return { kind: 'summarized', checkpointId: id, anchor: checkpointAnchor(id) };
  }
  if (treatment?.kind === 'dropped') return { kind: 'dropped' };
  const leftOut = ctx.leftOut.find((l) => l.seq === seq);
  if (leftOut) return { kind: 'left-out', reason: leftOut.reason };
  if (ctx.sentSeqs && !ctx.sentSeqs.has(seq)) return { kind: 'not-sent', reason: ctx.fallback ?? 'not in the context' };
  if (treatment) return treatment;
  return { kind: 'verbatim' };
}

export function historyRows(messages: Pick<HistoryMessage, 'seq' | 'role' | 'tokens' | 'pinned' | 'tags' | 'blocks' | 'createdAt'>[], ctx: HistoryContext): HistoryRow[] {
  return messages.map((m) => ({
    seq: m.seq,
    anchor: messageAnchor(m.seq),
    role: m.role,
    tokens: m.tokens,
    tokensText: `${formatTokens(m.tokens)} tokens`,
    createdAt: m.createdAt,
    status: historyStatus(m.seq, ctx),
    protections: protectionReasons(m, ctx.protection),
    blocks: blockViews(m.blocks as unknown[]),
  }));
}

/** One message of the context as sent. */
export interface ContextRow {
  index: number;
  /** The history seq it stands for (0 for the goal block; a checkpoint's toSeq). */
  seq: number;
  kind: 'message' | 'checkpoint' | 'goal';
  role: string;
  checkpoint: { id: string; anchor: string } | null;
  treatment: Treatment | null;
  protections: ProtectionReason[];
  blocks: BlockView[];
}

const CHECKPOINT_ID = /\[CHECKPOINT (ckpt_[A-Za-z0-9_-]+)/;

/** The parts of GET context (canonical) the context column reads. */
export interface ContextInput {
  messages: unknown[];
  seqs?: number[];
  checkpoints: unknown[];
  protection?: ContextProtection;
}

export function contextRows(context: ContextInput, treatments: Treatments): ContextRow[] {
  const checkpointIds = context.checkpoints.flatMap((c) => (isRecord(c) && typeof c.id === 'string' ? [c.id] : []));
  let nextCheckpoint = 0;
  return context.messages.map((raw, index): ContextRow => {
    const m = isRecord(raw) ? raw : {};
    const tags = Array.isArray(m.tags) ? m.tags.filter((t): t is string => typeof t === 'string') : [];
    const blocks = Array.isArray(m.blocks) ? m.blocks : [];
    const seq = context.seqs?.[index] ?? 0;
    const role = str(m.role) || 'unknown';
    if (tags.includes('checkpoint')) {
      const text = blockViews(blocks)[0]?.body ?? '';
      const id = text.match(CHECKPOINT_ID)?.[1] ?? checkpointIds[nextCheckpoint];
      nextCheckpoint += 1;
      return { index, seq, kind: 'checkpoint', role, checkpoint: id ? { id, anchor: checkpointAnchor(id) } : null, treatment: null, protections: [], blocks: blockViews(blocks) };
    }
    if (tags.includes('goal')) {
      return { index, seq: 0, kind: 'goal', role, checkpoint: null, treatment: null, protections: ['goal'], blocks: blockViews(blocks) };
    }
    return {
      index,
      seq,
      kind: 'message',
      role,
      checkpoint: null,
      treatment: context.seqs ? (treatments[seq] ?? null) : null,
      protections: context.seqs ? protectionReasons({ seq, role, pinned: m.pinned === true, tags }, context.protection) : [],
      blocks: blockViews(blocks),
    };
  });
}

/** Seqs of history messages the context sends, from the context's seqs (checkpoints and the goal block excluded). */
export function sentSeqs(rows: ContextRow[], hasSeqs: boolean): ReadonlySet<number> | undefined {
  return hasSeqs ? new Set(rows.filter((r) => r.kind === 'message' && r.seq > 0).map((r) => r.seq)) : undefined;
}

/** The page of the history to show: `after` is the seq before its first message. */
export interface HistoryWindow {
  after: number;
  from: number;
  to: number;
  total: number;
  olderAfter: number | null;
  newerAfter: number | null;
  firstAfter: number | null;
  latestAfter: number | null;
}

/** Defaults to the latest messages; seqs are gap-free, so any page can be addressed directly. */
export function historyWindow(afterParam: string | undefined, messageCount: number, pageSize = HISTORY_PAGE_SIZE): HistoryWindow {
  const latest = Math.max(0, messageCount - pageSize);
  const parsed = afterParam !== undefined && /^\d{1,9}$/.test(afterParam) ? Number(afterParam) : latest;
  const after = Math.min(parsed, latest);
  return {
    after,
    from: messageCount === 0 ? 0 : after + 1,
    to: Math.min(messageCount, after + pageSize),
    total: messageCount,
    olderAfter: after > 0 ? Math.max(0, after - pageSize) : null,
    newerAfter: after < latest ? Math.min(latest, after + pageSize) : null,
    firstAfter: after > 0 ? 0 : null,
    latestAfter: after < latest ? latest : null,
  };
}

/** The history page that shows `seq` near its top. */
export function historyAfterFor(seq: number, messageCount: number, pageSize = HISTORY_PAGE_SIZE): number {
  return Math.max(0, Math.min(seq - 3, messageCount - pageSize));
}
