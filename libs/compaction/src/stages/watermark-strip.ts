import { Block, CanonicalMessage } from '../messages/canonical';
import { isRecord, isThinking, toolUseIdOf } from '../messages/util';
import { CountMessage, SessionMessage } from '../engine/types';
import { Treatment, VersionPrefix } from '../engine/version';
import { closeOverToolPairs, toolPairLinks } from '../engine/tool-pairs';
import { Stage } from './stage';
import { maxOf } from '../engine/extremes';

/**
 * Seed 001's stage: a call to a checkpoint tool (`compress_to_checkpoint`) marks a task
 * boundary, the watermark; before it, tool_use and tool_result blocks are removed while the
 * conversational text stays, and messages left empty are dropped. The watermark lives in the
 * version prefix and only advances.
 */
export interface WatermarkStripParams {
  /** Calls to these tools mark a checkpoint (an MCP-qualified name matches its bare tool name). */
  checkpointToolNames: string[];
  /** Pinned messages (and the tool exchange they are part of) keep their tool blocks (Guarantee 3). */
  keepPinned: boolean;
}

/** What the watermark stage tells the preset's closing line. */
export interface WatermarkNotes {
  watermark: number;
  call?: WatermarkCall;
  advanced: boolean;
  blocksRemoved: number;
  dropped: number;
  compressed: number;
}

export const watermarkNotes = (): WatermarkNotes => ({ watermark: 0, advanced: false, blocksRemoved: 0, dropped: 0, compressed: 0 });

const fmt = (n: number) => n.toLocaleString('en-US');

/** Whether a tool name is one of the checkpoint tools, bare or MCP-qualified. */
export function isCheckpointTool(name: string, checkpointToolNames: readonly string[]): boolean {
  return checkpointToolNames.some((n) => n.length > 0 && (name === n || (name.startsWith('mcp__') && name.endsWith(`__${n}`) && name.length > n.length + 7)));
}

/** A tool call's name: tool_use, or an OpenAI call of another type kept opaque (`function.name` / `custom.name`). */
function callName(block: Block): string | undefined {
  if (block.type === 'tool_use') return block.name;
  if (toolUseIdOf(block) === undefined || block.type !== 'opaque' || !isRecord(block.raw)) return undefined;
  for (const key of ['function', 'custom']) {
    const inner = block.raw[key];
    if (isRecord(inner) && typeof inner.name === 'string') return inner.name;
  }
  return undefined;
}

export interface WatermarkCall {
  seq: number;
  toolUseId: string;
  name: string;
}

/** The latest checkpoint tool call in the history (seed 001 edge case 3: the watermark advances to the most recent one). */
export function findWatermarkCall(history: SessionMessage[], checkpointToolNames: readonly string[]): WatermarkCall | undefined {
  for (let i = history.length - 1; i >= 0; i -= 1) {
    const m = history[i];
    if (m.message.role !== 'assistant') continue;
    for (let j = m.message.blocks.length - 1; j >= 0; j -= 1) {
      const b = m.message.blocks[j];
      const name = callName(b);
      const id = toolUseIdOf(b);
      if (name !== undefined && id !== undefined && isCheckpointTool(name, checkpointToolNames)) return { seq: m.seq, toolUseId: id, name };
    }
  }
  return undefined;
}

/**
 * `POST /v1/sessions/:id/watermarks`: a new prefix whose watermark is `seq`. The watermark only
 * advances: a seq at or before the current one gives back the same prefix with `advanced: false`.
 */
export function advanceWatermark(prefix: VersionPrefix, seq: number): { prefix: VersionPrefix; advanced: boolean; reason?: 'invalid-seq' | 'not-after-current' } {
  if (!Number.isSafeInteger(seq) || seq < 1) return { prefix, advanced: false, reason: 'invalid-seq' };
  if (prefix.watermarkSeq !== undefined && seq <= prefix.watermarkSeq) return { prefix, advanced: false, reason: 'not-after-current' };
  return { prefix: { ...prefix, watermarkSeq: seq }, advanced: true };
}

/** Anthropic server-side tool blocks (`server_tool_use`, `web_search_tool_result`, `mcp_tool_use`, …): a call and its result in one message. */
const isServerToolBlock = (b: Block) => b.type === 'opaque' && isRecord(b.raw) && typeof b.raw.type === 'string' && /(^|_)tool_use$|_tool_result$/.test(b.raw.type);
const isToolBlock = (b: Block) => b.type === 'tool_result' || toolUseIdOf(b) !== undefined || isServerToolBlock(b);

export interface WatermarkStripResult {
  messages: SessionMessage[];
  treatments: Record<number, Treatment>;
  blocksRemoved: number;
  dropped: number[];
  compressed: number[];
}

/**
 * Seed 001's block-level filtering on a context: every message before `boundarySeq` loses its
 * tool_use / tool_result blocks (assistant text and user text stay); a message left empty, a
 * `tool` message (OpenAI's form of a user turn's results) and an assistant turn with thinking
 * (thinking is never edited, Guarantee 2) are dropped whole. Messages at or after the
 * boundary, system messages, `keep`'s messages and calls still waiting for their result stay
 * unchanged, together with every message that holds the other half of one of their tool pairs,
 * so no pair is ever split.
 */
export function stripToolBlocksBefore(
  context: SessionMessage[],
  boundarySeq: number,
  keep: (m: SessionMessage) => boolean,
  count: CountMessage,
): WatermarkStripResult {
  const { links, open } = toolPairLinks(context);
  const seeds = context.flatMap((m, i) => (m.seq >= boundarySeq || m.message.role === 'system' || open.has(i) || keep(m) ? [i] : []));
  const kept = closeOverToolPairs(links, seeds);

  const treatments: Record<number, Treatment> = {};
  const dropped: number[] = [];
  const compressed: number[] = [];
  let blocksRemoved = 0;
  const out: SessionMessage[] = [];
  context.forEach((m, i) => {
    if (kept.has(i)) {
      out.push(m);
      return;
    }
    const blocks = m.message.blocks.filter((b) => !isToolBlock(b));
    const removed = m.message.blocks.length - blocks.length;
    if (removed === 0) {
      out.push(m);
      return;
    }
    blocksRemoved += removed;
    const wholeTurn = blocks.length === 0 || m.message.role === 'tool' || m.message.blocks.some(isThinking);
    if (wholeTurn) {
      treatments[m.seq] = { kind: 'dropped', stage: 'watermark' };
      dropped.push(m.seq);
      return;
    }
    const message: CanonicalMessage = { ...m.message, blocks };
    const tokens = count(message);
    treatments[m.seq] = { kind: 'compressed', message, tokens, stage: 'watermark' };
    compressed.push(m.seq);
    out.push({ seq: m.seq, message, tokens });
  });
  return { messages: out, treatments, blocksRemoved, dropped, compressed };
}

/**
 * Resolves the watermark (the latest checkpoint call, or the prefix's own when later), then
 * strips tool blocks before it. Seed 001's edge cases: no checkpoint call and no watermark, or a
 * watermark that is not in the history, is no compression with a warning.
 */
export const stripBeforeWatermark: Stage<WatermarkStripParams, WatermarkNotes> = ({ prefix, context, params, run, notes }) => {
  const { input, events } = run;
  run.steps.push('watermark');
  const call = findWatermarkCall(input.history, params.checkpointToolNames);
  const current = prefix.watermarkSeq;
  if (call === undefined && current === undefined) {
    events.push({ type: 'warning', line: `Checkpoint tool ${params.checkpointToolNames.join(' / ')} not found in conversation history` });
    return { end: run.unchanged('skipped', 'watermark-not-found') };
  }
  // Only advances: a prefix whose watermark is later than the latest call keeps it.
  const watermark = Math.max(current ?? 0, call?.seq ?? 0);
  const advanced = current === undefined || watermark > current;
  if (!input.history.some((m) => m.seq === watermark)) {
    events.push({ type: 'warning', line: `Watermark ${watermark} not found - no compression applied` });
    return { end: run.unchanged('skipped', 'watermark-not-found') };
  }

  const stripped = stripToolBlocksBefore(context, watermark, (m) => params.keepPinned && m.message.pinned === true, input.countMessage);
  const treatments: Record<number, Treatment> = { ...prefix.treatments, ...stripped.treatments };
  const touched = [...stripped.dropped, ...stripped.compressed];
  if (touched.length === 0 && !advanced) return { end: run.unchanged('skipped', 'nothing-before-watermark') };
  Object.assign(notes, { watermark, call, advanced, blocksRemoved: stripped.blocksRemoved, dropped: stripped.dropped.length, compressed: stripped.compressed.length });
  const by = call !== undefined && call.seq === watermark ? ` (${call.name} call ${call.toolUseId})` : '';
  return {
    prefix: { ...prefix, coversThroughSeq: maxOf(prefix.coversThroughSeq, touched), treatments, watermarkSeq: watermark },
    onSuccess: advanced ? [{ type: 'watermark-advanced', line: `Watermark advanced to message ${watermark}${by}` }] : [],
  };
};

/** The closing line of a run that stripped before the watermark. */
export function watermarkClosing(notes: WatermarkNotes, saved: number) {
  return {
    type: 'compressed' as const,
    line:
      `Compressed ${fmt(notes.blocksRemoved)} tool blocks before watermark (message ${notes.watermark}): ` +
      `${fmt(notes.dropped)} messages removed, ${fmt(notes.compressed)} shortened (saved ~${fmt(saved)} tokens)`,
  };
}
