import { CanonicalMessage } from '../messages/canonical';
import { isWhitespace, leadingWordAndRest, trailingDashWord, trimEnds } from './text-scan';

/**
 * Seed 004's goal markers: the LLM updates the session's goal by writing lines such as
 *
 *   [GOAL] Implement user authentication system
 *   [CHECKPOINT] Design authentication flow - COMPLETED
 *   [CHECKPOINT] Add JWT token generation - IN PROGRESS
 *   [DECISION] Use JWT for authentication - LOCKED
 *   [ARTIFACT] Created src/auth/login.ts
 *   [NEXT] Complete JWT token generation, then move to user registration
 *
 * A marker counts only at the start of a line of assistant text (after indentation of at most
 * three spaces, or a list bullet), outside fenced and indented code blocks and `>` quotes. So
 * a marker inside inline code (`` `[GOAL] x` ``) or a quoted string (`"[GOAL] x"`) is prose
 * about markers, not an update: the line starts with the backtick or the quote, or the marker
 * sits mid-line. Everything here is pure and deterministic.
 */

/** Seed 004's goal checkpoint states (✅ completed, 🔄 in progress, ⏳ pending). */
export type GoalCheckpointStatus = 'completed' | 'in-progress' | 'pending';

export interface GoalCheckpoint {
  text: string;
  status: GoalCheckpointStatus;
}

export interface GoalDecision {
  text: string;
  /** A locked decision is never compressed and stays locked until an explicit goal update unlocks it (`unlockDecision`). */
  locked: boolean;
}

export interface GoalArtifact {
  /** As written after `[ARTIFACT]`: `Created src/auth/login.ts`. */
  text: string;
  action?: 'created' | 'modified' | 'deleted';
  path?: string;
}

/** The session's goal record (SPEC.md `GET|PUT /v1/sessions/:id/goal`, seed 004's Goal). */
export interface GoalRecord {
  goal?: string;
  /** Seed 004's Goal has a priority and a status; markers set neither, the goal API may. */
  priority?: 'high' | 'medium' | 'low';
  status?: 'active' | 'paused' | 'completed';
  checkpoints: GoalCheckpoint[];
  decisions: GoalDecision[];
  artifacts: GoalArtifact[];
  /** Constraints the user set for the goal (goal API); part of the goal block. */
  constraints?: string[];
  nextStep?: string;
}

export const EMPTY_GOAL_RECORD: GoalRecord = { checkpoints: [], decisions: [], artifacts: [] };

export type GoalMarker =
  | { kind: 'goal'; text: string }
  | { kind: 'checkpoint'; text: string; status: GoalCheckpointStatus }
  | { kind: 'decision'; text: string; locked: boolean }
  | ({ kind: 'artifact' } & GoalArtifact)
  | { kind: 'next'; text: string };

const MARKER = /^\[(GOAL|CHECKPOINT|DECISION|ARTIFACT|NEXT)\][ \t]+(\S.*)$/;
const BULLET = /^(?:[-*+]|\d{1,3}[.)])[ \t]+/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const CHECKPOINT_WORDS = ['COMPLETED', 'DONE', 'IN PROGRESS', 'IN-PROGRESS', 'PENDING'];
const LOCK_WORDS = ['LOCKED', 'UNLOCKED'];
const ARTIFACT_VERBS = ['created', 'added', 'modified', 'updated', 'edited', 'changed', 'deleted', 'removed'];
/** Width of the line's indentation (a tab counts as four columns, as in Markdown). */
function indentWidth(line: string): number {
  let width = 0;
  for (const ch of line) {
    if (ch === ' ') width += 1;
    else if (ch === '\t') width += 4 - (width % 4);
    else break;
  }
  return width;
}

const unquotePath = (s: string) => trimEnds(s.trim(), '`\'"', '`\'".,;:');

function markerOf(tag: string, rest: string): GoalMarker {
  const body = rest.trim();
  switch (tag) {
    case 'GOAL':
      return { kind: 'goal', text: body };
    case 'CHECKPOINT': {
      const m = trailingDashWord(body, CHECKPOINT_WORDS);
      if (!m) return { kind: 'checkpoint', text: body, status: 'pending' };
      const word = m.word.toUpperCase();
      const status: GoalCheckpointStatus = word === 'COMPLETED' || word === 'DONE' ? 'completed' : word === 'PENDING' ? 'pending' : 'in-progress';
      return { kind: 'checkpoint', text: body.slice(0, m.index).trim(), status };
    }
    case 'DECISION': {
      const m = trailingDashWord(body, LOCK_WORDS);
      if (!m) return { kind: 'decision', text: body, locked: false };
      return { kind: 'decision', text: body.slice(0, m.index).trim(), locked: m.word.toUpperCase() === 'LOCKED' };
    }
    case 'ARTIFACT': {
      const m = leadingWordAndRest(body, ARTIFACT_VERBS);
      if (!m) return { kind: 'artifact', text: body };
      const verb = m.word.toLowerCase();
      const action = verb === 'created' || verb === 'added' ? 'created' : verb === 'deleted' || verb === 'removed' ? 'deleted' : 'modified';
      const path = unquotePath(m.rest);
      return path ? { kind: 'artifact', text: body, action, path } : { kind: 'artifact', text: body, action };
    }
    default:
      return { kind: 'next', text: body };
  }
}

/** Whether a line closes the fence: up to three spaces, at least as many fence characters, then only whitespace. */
function closesFence(line: string, fence: { char: string; length: number }): boolean {
  let i = 0;
  while (i < 3 && line[i] === ' ') i += 1;
  const start = i;
  while (line[i] === fence.char) i += 1;
  if (i - start < fence.length) return false;
  for (; i < line.length; i += 1) if (!isWhitespace(line[i])) return false;
  return true;
}

/** The goal markers of one text, in order. Markers in code blocks, inline code, quotes and quoted strings are not markers. */
export function extractGoalMarkers(text: string): GoalMarker[] {
  const out: GoalMarker[] = [];
  let fence: { char: string; length: number } | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const open = FENCE.exec(raw);
    if (fence) {
      if (closesFence(raw, fence)) fence = undefined;
      continue;
    }
    if (open) {
      fence = { char: open[1][0], length: open[1].length };
      continue;
    }
    let line = raw.trimStart();
    const bullet = BULLET.exec(line);
    // Four columns of indentation make an indented code block, unless the line is a list item.
    if (indentWidth(raw) >= 4 && !bullet) continue;
    if (bullet) line = line.slice(bullet[0].length);
    const m = MARKER.exec(line.trimEnd());
    if (!m) continue;
    const marker = markerOf(m[1], m[2]);
    if (marker.text.length > 0) out.push(marker);
  }
  return out;
}

/** The markers of assistant text blocks only (seed 004: the LLM writes them; user text, tool output and thinking are never parsed). */
export function goalMarkersOfMessages(messages: CanonicalMessage[]): GoalMarker[] {
  const out: GoalMarker[] = [];
  for (const m of messages) {
    if (m.role !== 'assistant') continue;
    for (const b of m.blocks) if (b.type === 'text') out.push(...extractGoalMarkers(b.text));
  }
  return out;
}

/** Marker texts match when they differ only in case and spacing. */
export const markerKey = (text: string) => text.trim().replace(/\s+/g, ' ').toLowerCase();

/**
 * The record with the markers applied in order (pure; the input record is not changed): a later
 * `[GOAL]` replaces the goal and a later `[NEXT]` the next step; checkpoints and decisions are
 * keyed by their text, so a repeated checkpoint takes its latest status and a repeated decision
 * is not duplicated; a locked decision stays locked (only `unlockDecision`, an explicit goal
 * update, unlocks it); artifacts are deduplicated by text.
 */
export function applyGoalMarkers(record: GoalRecord, markers: GoalMarker[]): GoalRecord {
  let goal = record.goal;
  let nextStep = record.nextStep;
  const checkpoints = [...record.checkpoints];
  const decisions = [...record.decisions];
  const artifacts = [...record.artifacts];
  for (const marker of markers) {
    const key = markerKey(marker.text);
    switch (marker.kind) {
      case 'goal':
        goal = marker.text;
        break;
      case 'next':
        nextStep = marker.text;
        break;
      case 'checkpoint': {
        const i = checkpoints.findIndex((c) => markerKey(c.text) === key);
        if (i < 0) checkpoints.push({ text: marker.text, status: marker.status });
        else if (checkpoints[i].status !== marker.status) checkpoints[i] = { text: checkpoints[i].text, status: marker.status };
        break;
      }
      case 'decision': {
        const i = decisions.findIndex((d) => markerKey(d.text) === key);
        if (i < 0) decisions.push({ text: marker.text, locked: marker.locked });
        else if (marker.locked && !decisions[i].locked) decisions[i] = { text: decisions[i].text, locked: true };
        break;
      }
      case 'artifact': {
        if (artifacts.some((a) => markerKey(a.text) === key)) break;
        const { kind: _kind, ...artifact } = marker;
        artifacts.push(artifact);
        break;
      }
    }
  }
  const out: GoalRecord = { ...record, checkpoints, decisions, artifacts };
  if (goal !== undefined) out.goal = goal;
  if (nextStep !== undefined) out.nextStep = nextStep;
  return out;
}

/** The record folded from the assistant messages' markers, in order, over `base`. */
export function goalRecordOf(messages: CanonicalMessage[], base: GoalRecord = EMPTY_GOAL_RECORD): GoalRecord {
  return applyGoalMarkers(base, goalMarkersOfMessages(messages));
}

/** An explicit goal update (the goal API) unlocking a decision; the only way a locked decision unlocks. Pure. */
export function unlockDecision(record: GoalRecord, text: string): GoalRecord {
  const key = markerKey(text);
  return { ...record, decisions: record.decisions.map((d) => (markerKey(d.text) === key && d.locked ? { text: d.text, locked: false } : d)) };
}

/** Seed 004's checkpoint signs: ✅ completed, 🔄 in progress, ⏳ pending. */
export const GOAL_STATUS_SIGN: Record<GoalCheckpointStatus, string> = { completed: '✅', 'in-progress': '🔄', pending: '⏳' };

/**
 * The goal block: the text placed right after the system prompt in the context (SPEC.md
 * "Context"), never compressed (seed 004 "Always Preserved": the active goal, all its
 * checkpoints, locked decisions, artifacts and the next step; SPEC.md adds user constraints).
 * Empty sections are left out; an empty record gives ''.
 */
export function renderGoalBlock(record: GoalRecord): string {
  const sections: string[] = [];
  if (record.goal) {
    const head = [`ACTIVE GOAL: ${record.goal}`];
    if (record.priority) head.push(`Priority: ${record.priority}`);
    if (record.status) head.push(`Status: ${record.status}`);
    sections.push(head.join('\n'));
  }
  if (record.checkpoints.length > 0) sections.push(['CHECKPOINTS:', ...record.checkpoints.map((c) => `${GOAL_STATUS_SIGN[c.status]} ${c.text}`)].join('\n'));
  const locked = record.decisions.filter((d) => d.locked);
  if (locked.length > 0) sections.push(['LOCKED DECISIONS:', ...locked.map((d) => `🔒 ${d.text}`)].join('\n'));
  const constraints = record.constraints ?? [];
  if (constraints.length > 0) sections.push(['USER CONSTRAINTS:', ...constraints.map((c) => `- ${c}`)].join('\n'));
  if (record.artifacts.length > 0) sections.push(['ARTIFACTS:', ...record.artifacts.map((a) => `- ${a.text}`)].join('\n'));
  if (record.nextStep) sections.push(`NEXT: ${record.nextStep}`);
  return sections.join('\n\n');
}

/**
 * The goal block of a version (SPEC.md "Context"): the session's goal and what the goal markers
 * in the assistant's messages recorded (locked decisions, checkpoints, next step), or undefined
 * when there is nothing to say. Deterministic (Guarantee 8).
 */
export function goalBlockText(messages: CanonicalMessage[], goal?: string): string | undefined {
  const record = goalRecordOf(messages, goal ? { ...EMPTY_GOAL_RECORD, goal } : EMPTY_GOAL_RECORD);
  const text = renderGoalBlock(record);
  return text.trim().length > 0 ? text : undefined;
}

/**
 * The goal record stored with a session (JSON), read leniently: a record written by the goal API
 * or by markers, an older `{ goal }` object or a bare string. Anything else is the empty record.
 */
export function goalRecordFromJson(json: unknown): GoalRecord {
  if (typeof json === 'string') return json ? { ...EMPTY_GOAL_RECORD, goal: json } : EMPTY_GOAL_RECORD;
  if (!json || typeof json !== 'object' || Array.isArray(json)) return EMPTY_GOAL_RECORD;
  const o = json as Partial<GoalRecord>;
  const out: GoalRecord = {
    checkpoints: Array.isArray(o.checkpoints) ? o.checkpoints.filter((c) => c && typeof c.text === 'string') : [],
    decisions: Array.isArray(o.decisions) ? o.decisions.filter((d) => d && typeof d.text === 'string').map((d) => ({ text: d.text, locked: d.locked === true })) : [],
    artifacts: Array.isArray(o.artifacts) ? o.artifacts.filter((a) => a && typeof a.text === 'string') : [],
  };
  if (typeof o.goal === 'string' && o.goal) out.goal = o.goal;
  if (o.priority) out.priority = o.priority;
  if (o.status) out.status = o.status;
  if (Array.isArray(o.constraints)) out.constraints = o.constraints.filter((c): c is string => typeof c === 'string');
  if (typeof o.nextStep === 'string' && o.nextStep) out.nextStep = o.nextStep;
  return out;
}

/** The goal as the summarizer's goal-aware prompt gets it: the rendered record, or undefined when empty. */
export function goalPromptOf(record: GoalRecord): string | undefined {
  const text = renderGoalBlock(record);
  return text.trim() ? text : undefined;
}

/** The heading of the goal block's task section. */
export const TASK_HEADING = "TASK (the session's first request):";

/** The session's first request (see taskStatement): the last user text before the first assistant message, else the first user text. */
export function firstRequest<M extends { seq: number; message: CanonicalMessage }>(messages: readonly M[]): M | undefined {
  const isRequest = (m: CanonicalMessage) => m.role === 'user' && m.blocks.some((b) => b.type === 'text' && b.text.trim().length > 0) && !m.blocks.some((b) => b.type === 'tool_result');
  const firstReply = messages.findIndex((m) => m.message.role === 'assistant');
  const beforeReply = firstReply < 0 ? [] : messages.slice(0, firstReply).filter((m) => isRequest(m.message));
  return beforeReply.length > 0 ? beforeReply[beforeReply.length - 1] : messages.find((m) => isRequest(m.message));
}

/** The goal block's task section: at most this many tokens, and at most this share of the budget. */
export const TASK_STATEMENT_MAX_TOKENS = 300;
export const TASK_STATEMENT_BUDGET_SHARE = 0.05;

/**
 * The session's task when no goal was set (SPEC.md "Facts ledger", high compression): agents
 * open a session with the user's request, and most never write a `[GOAL]` marker. The request is
 * the user text (not a tool result) the agent's first reply answers: the last one before the first
 * assistant message. Earlier user messages before that reply are material the request comes with
 * (SWE-agent sends a worked demonstration first and the issue to solve second: pydicom-1458__gpt4,
 * swe-agent__test-repo-i1 in testdata/). Without an assistant message yet, the first user text.
 * Its opening lines within `maxTokens` (cut at a line or a word), for the goal block once that
 * message has left the context (`cut` when it was cut). Undefined when there is none.
 */
export function taskStatement(
  messages: readonly { seq: number; message: CanonicalMessage }[],
  maxTokens: number,
  countText: (t: string) => number,
): { seq: number; text: string; cut?: true } | undefined {
  const first = firstRequest(messages);
  if (!first || maxTokens < 10) return undefined;
  const text = first.message.blocks
    .map((b) => (b.type === 'text' ? b.text : ''))
    .join('\n')
    .trim();
  if (countText(text) <= maxTokens) return { seq: first.seq, text };
  // Longest head that fits: whole lines first, then words of the next line.
  const lines = text.split('\n');
  let head = '';
  for (const line of lines) {
    const next = head ? `${head}\n${line}` : line;
    if (countText(`${next} …`) > maxTokens) {
      let sep = head ? '\n' : '';
      for (const word of line.split(' ')) {
        const more = `${head}${sep}${word}`;
        if (countText(`${more} …`) > maxTokens) break;
        head = more;
        sep = ' ';
      }
      break;
    }
    head = next;
  }
  return head.trim() ? { seq: first.seq, text: `${head.trim()} …`, cut: true } : undefined;
}
