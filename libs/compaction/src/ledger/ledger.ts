/**
 * The facts ledger (SPEC.md "Facts ledger"): what an agent cannot afford to lose, read from the
 * history by general rules (ledger/rules.ts, ledger/recognize.ts) and kept up to date message by
 * message. One ledger serves every stage: masked and offloaded placeholders list its keys,
 * checkpoints carry a Facts section of it, summaries are checked against it, and the reliability
 * score's context confidence is the share of it the context still holds.
 *
 * Entries: paths with their last operation, URLs, error signatures, identifiers (hashes, ticket
 * ids, env vars, quoted names), settings and versions with their latest value (older values kept
 * as `was`), commands with their exit status, tests with their last result, decisions (locked or
 * not), the user's constraints verbatim, open tasks. Each records where it came from, how often
 * it recurs and whether the user or the agent mentioned it again. Pure and deterministic.
 */
import { extractGoalMarkers } from '../engine/goal-markers';
import { CanonicalMessage } from '../messages/canonical';
import {
  classifyAssistant,
  classifyNonAssistant,
  collapse,
  commandOfInput,
  reportsFailure,
  identifierTokens,
  isErrorCodeName,
  isIdentifier,
  isRecord,
  keyOf,
  Line,
  MAX_CODE_LINES,
  PATH_ARG,
  pathArg,
  SHELL_TOOL,
  Source,
  takePaths,
  scanWindow,
  toolResultText,
} from './rules';
import { errorLines } from './errors';
import { choicesAndNextSteps, constraintSentences, exitStatusOf, hashesIn, isTransitiveRequirement, pathOperationsOf, settingsIn, testResultsIn, ticketIdsIn, todosOf, urlsIn } from './recognize';

export type LedgerKind = 'constraint' | 'decision' | 'task' | 'error' | 'test' | 'path' | 'url' | 'setting' | 'version' | 'identifier' | 'command';

export type PathOperation = 'read' | 'created' | 'edited' | 'deleted' | 'mentioned';

export interface LedgerEntry {
  kind: LedgerKind;
  /** Lowercased, whitespace-collapsed: one entry per key and kind. */
  key: string;
  /** As last written (settings, versions: the latest value, `name=value`). */
  value: string;
  /** Earlier values of a setting or version, oldest first (at most 3). */
  was?: string[];
  /** A path's last operation, a test's last result, a command's exit status, a task's state. */
  state?: string;
  /** A locked decision (seed 004's `[DECISION] … - LOCKED`). */
  locked?: boolean;
  firstSeq: number;
  lastSeq: number;
  /** Who said it first: `user`, `assistant`, `tool` (a tool output), with the tool's name when known. */
  role: 'user' | 'assistant' | 'tool';
  tool?: string;
  /** Occurrences. */
  count: number;
  /** The user or the agent named it again after it first appeared (in a later message). */
  mentionedAgain: boolean;
  /** How directly it was seen: sum of its occurrences' source weights. */
  weight: number;
}

export interface LedgerState {
  version: 1;
  throughSeq: number;
  entries: LedgerEntry[];
  /** Tool calls still waiting for their result, and the file a windowed editor has open: what the next messages are read against. */
  calls?: [string, { name: string; command?: string }][];
  openFile?: string;
  /** The last message added ran a command written in its text: the next user message is its output. */
  awaitingOutput?: boolean;
}

const SOURCE_WEIGHT: Record<Source, number> = { said: 3, error: 3, code: 1, output: 0.25 };
const MAX_VALUE_CHARS = 300;

export interface LedgerMessage {
  seq: number;
  message: CanonicalMessage;
}

interface Mention {
  kind: LedgerKind;
  value: string;
  source: Source;
  /** Key override (settings and versions: the name; errors: the signature). */
  key?: string;
  state?: string;
  locked?: boolean;
  tool?: string;
}

/** Entries that are never dropped (Guarantee 3): the user's binding constraints and locked decisions. */
export const isPinned = (e: LedgerEntry) => (e.kind === 'constraint' && e.role === 'user' && e.state !== 'request') || (e.kind === 'decision' && e.locked === true);

/** The ledger, kept up to date message by message (`add`), serializable (`state`). */
export class FactsLedger {
  private readonly map = new Map<string, LedgerEntry>();
  private through = 0;
  /** Shell calls waiting for their result (tool_use id → tool name and command), so a command's entry gets its exit status. */
  private readonly calls = new Map<string, { name: string; command?: string }>();
  /** The file a windowed editor has open (SWE-agent's `open`/`create`, then `edit`/`insert` without a path). */
  private openFile: string | undefined;
  /** The last message added ran a command in its text (agents that act through text): the next user message is its output. */
  private awaitingOutput = false;

  static from(state?: LedgerState | null): FactsLedger {
    const ledger = new FactsLedger();
    if (state && state.version === 1) {
      ledger.through = state.throughSeq;
      for (const [id, call] of state.calls ?? []) ledger.calls.set(id, call);
      ledger.openFile = state.openFile;
      ledger.awaitingOutput = state.awaitingOutput === true;
  
  
      for (const e of state.entries) ledger.map.set(`${e.kind}\u0000${e.key}`, { ...e, ...(e.was ? { was: [...e.was] } : {}) });
    }
    return ledger;
  }

  /** A ledger of these messages (seq order). */
  static of(messages: readonly LedgerMessage[]): FactsLedger {
    const ledger = new FactsLedger();
    ledger.addAll(messages);
    return ledger;
  }

  get throughSeq(): number {
    return this.through;
  }

  state(): LedgerState {
    return {
      version: 1,
      throughSeq: this.through,
      entries: [...this.map.values()].map((e) => ({ ...e })),
      ...(this.calls.size ? { calls: [...this.calls.entries()] } : {}),
      ...(this.openFile ? { openFile: this.openFile } : {}),
      ...(this.awaitingOutput ? { awaitingOutput: true } : {}),
    };
  }

  entries(): LedgerEntry[] {
    return [...this.map.values()];
  }

  get size(): number {
    return this.map.size;
  }

  /**
   * Keeps at most `max` entries: the ones that weigh least go first (seen once in a tool's bulk
   * output, never mentioned again, oldest), never the user's constraints or locked decisions.
   */
  prune(max: number): this {
    if (this.map.size <= max) return this;
    const order = [...this.map.entries()]
      .filter(([, e]) => !isPinned(e))
      .sort(([, a], [, b]) => Number(a.mentionedAgain) - Number(b.mentionedAgain) || a.weight - b.weight || a.lastSeq - b.lastSeq);
    for (const [id] of order.slice(0, this.map.size - max)) this.map.delete(id);
    return this;
  }

  /** Adds the messages after `throughSeq` (earlier ones are already in), in seq order: adding in two calls gives what one call gives. */
  addAll(messages: readonly LedgerMessage[]): this {
    for (const m of messages) {
      if (m.seq <= this.through) continue;
      this.awaitingOutput = this.addMessage(m, this.awaitingOutput);
      this.through = m.seq;
    }
    return this;
  }

  private record(mention: Mention, seq: number, role: LedgerEntry['role']): void {
    const tool = mention.tool;
    const value = collapse(mention.value).slice(0, MAX_VALUE_CHARS);
    if (!value) return;
    const key = mention.key ?? keyOf(value);
    const id = `${mention.kind}\u0000${key}`;
    const existing = this.map.get(id);
    const weight = SOURCE_WEIGHT[mention.source];
    if (!existing) {
      this.map.set(id, {
        kind: mention.kind,
        key,
        value,
        ...(mention.state ? { state: mention.state } : {}),
        ...(mention.locked ? { locked: true } : {}),
        firstSeq: seq,
        lastSeq: seq,
        role,
        ...(tool ? { tool } : {}),
        count: 1,
        mentionedAgain: false,
        weight,
      });
      return;
    }
    existing.count += 1;
    existing.weight += weight;
    if (seq > existing.firstSeq && role !== 'tool' && mention.source === 'said') existing.mentionedAgain = true;
    if (seq >= existing.lastSeq) {
      existing.lastSeq = seq;
      // A later mention of a path does not undo what was done to it.
      if (mention.state && !(mention.state === 'mentioned' && existing.state)) existing.state = mention.state;
      if (mention.locked) existing.locked = true;
      if ((existing.kind === 'setting' || existing.kind === 'version') && keyOf(existing.value) !== keyOf(value)) {
        const was = [...(existing.was ?? []).filter((w) => keyOf(w) !== keyOf(existing.value) && keyOf(w) !== keyOf(value)), existing.value];
        existing.was = was.slice(-3);
      }
      existing.value = value;
    }
  }

  /** Reads one message; returns whether the next user message is the output of a command written in this one (agents that act through text). */
  private addMessage(m: LedgerMessage, awaitingOutput: boolean): boolean {
    const msg = m.message;
    if (msg.role === 'system' && !msg.inConversation) return false;
    const role: LedgerEntry['role'] = msg.role === 'assistant' ? 'assistant' : msg.role === 'user' && !awaitingOutput ? 'user' : 'tool';
    const mentions: Mention[] = [];
    let ranTextCommand = false;
    for (const b of msg.blocks) {
      if (b.type === 'text') {
        if (msg.role === 'assistant') {
          for (const marker of extractGoalMarkers(b.text)) {
            if (marker.kind === 'decision') mentions.push({ kind: 'decision', value: marker.text, source: 'said', locked: marker.locked });
            if (marker.kind === 'next') mentions.push({ kind: 'task', value: marker.text, source: 'said', state: 'open' });
            if (marker.kind === 'artifact' && marker.path) mentions.push({ kind: 'path', value: marker.path, source: 'said', state: marker.action === 'deleted' ? 'deleted' : marker.action === 'modified' ? 'edited' : 'created' });
          }
          const prose = choicesAndNextSteps(b.text);
          for (const d of prose.decisions) mentions.push({ kind: 'decision', value: d, source: 'said' });
          for (const n of prose.next) mentions.push({ kind: 'task', value: n, source: 'said', state: 'open' });
          const commands: { fenced: string[]; inline: string[]; endsWithCommand?: boolean } = { fenced: [], inline: [] };
          const lines = classifyAssistant(b.text, commands);
          scanLines(mentions, lines);
          for (const c of commands.fenced) mentions.push({ kind: 'command', value: c, source: 'said' });
          for (const todo of checkboxTasks(b.text)) mentions.push(todo);
          ranTextCommand ||= commands.endsWithCommand === true;
          for (const c of commands.fenced) for (const op of pathOperationsOf(c)) mentions.push({ kind: 'path', value: op.path, source: 'said', state: op.op });
        } else {
          const lines = classifyNonAssistant(b.text, role === 'tool' || msg.role === 'tool' ? 'tool' : 'user');
          scanLines(mentions, lines);
          // The user's own words name failures in passing ("the test failed", "cannot find it"): only a pasted report's named errors count.
          scanErrors(mentions, b.text, role === 'user');
          if (role === 'user') for (const s of constraintSentences(lines.filter((l) => l.source === 'said' || l.own).map((l) => l.text).join('\n'))) mentions.push({ kind: 'constraint', value: s.text, source: 'said', ...(s.strong ? {} : { state: 'request' }) });
        }
      } else if (b.type === 'tool_use') {
        const command = SHELL_TOOL.test(b.name) && isRecord(b.input) ? commandOfInput(b.input.command ?? b.input.cmd) : undefined;
        this.calls.set(b.id, { name: b.name, ...(command ? { command } : {}) });
        if (this.calls.size > 256) this.calls.delete(this.calls.keys().next().value as string);
        const before = mentions.length;
        scanToolInput(mentions, b.name, b.input);
        const op = mentions.slice(before).find((x) => x.kind === 'path' && x.state !== undefined && x.state !== 'mentioned');
        if (op && !SHELL_TOOL.test(b.name) && (op.state === 'read' || op.state === 'created')) this.openFile = op.value;
        else if (!op && this.openFile && (EDIT_TOOL.test(b.name) || b.name === 'insert')) mentions.push({ kind: 'path', value: this.openFile, source: 'said', state: 'edited' });
      } else if (b.type === 'tool_result') {
        const call = this.calls.get(b.toolUseId);
        this.calls.delete(b.toolUseId);
        const text = scanWindow(toolResultText(b.content));
        const before = mentions.length;
        scanLines(mentions, classifyNonAssistant(text, 'tool'));
        scanErrors(mentions, text);
        if (call) for (let i = before; i < mentions.length; i++) mentions[i].tool = call.name;
        if (call?.command) {
          const status = exitStatusOf(text, b.isError);
          if (status) mentions.push({ kind: 'command', value: call.command, source: 'said', state: status, tool: call.name });
        }
      }
    }
    for (const mention of mentions) this.record(mention, m.seq, role);
    return msg.role === 'assistant' && ranTextCommand && !msg.blocks.some((b) => b.type === 'tool_use');
  }
}

/** `- [ ] task` lines of agent text: open tasks; `- [x] task` closes one. */
function checkboxTasks(text: string): Mention[] {
  const out: Mention[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const open = line.startsWith('- [ ] ') || line.startsWith('* [ ] ');
    const done = line.startsWith('- [x] ') || line.startsWith('- [X] ') || line.startsWith('* [x] ');
    if (!open && !done) continue;
    const body = line.slice(6).trim();
    if (body.length >= 4) out.push({ kind: 'task', value: body, source: 'said', state: open ? 'open' : 'done' });
  }
  return out;
}

/**
 * A report's error signatures (ledger/errors.ts: named failures with the frame that says where,
 * then other failure lines; at most three), as error entries keyed without their numbers (the
 * same failure on another line or port is the same entry). Python's `Traceback (most recent call
 * last):` header names nothing. In the user's text (`namedOnly`) only a pasted report counts: a line that reports a
 * named failure (reportsFailure), not one whose words mention it.
 */
function scanErrors(out: Mention[], text: string, namedOnly = false): void {
  for (const line of errorLines(text.length > 200_000 ? text.slice(-200_000) : text)) {
    if (line.startsWith('Traceback (most recent call last)')) continue;
    if (namedOnly && !reportsFailure(line)) continue;
    const value = collapse(line);
    out.push({ kind: 'error', value, source: 'error', key: keyOf(value.replace(/\d+/g, '#')) });
  }
}

function scanLine(out: Mention[], line: string, source: Source): void {
  if (line.length > 2_000) line = line.slice(0, 2_000);
  for (const t of testResultsIn(line)) out.push({ kind: 'test', value: t.name, source: source === 'output' ? 'error' : source, state: t.result });
  for (const u of urlsIn(line)) out.push({ kind: 'url', value: u, source });
  if (!isTransitiveRequirement(line))
    for (const s of settingsIn(line, source === 'said')) out.push({ kind: s.version ? 'version' : 'setting', value: `${s.name}${s.separator}${s.value}`, key: keyOf(s.name), source });
  for (const h of hashesIn(line)) out.push({ kind: 'identifier', value: h, source });
  for (const t of ticketIdsIn(line)) out.push({ kind: 'identifier', value: t, source });
  const { paths, rest } = takePaths(line);
  for (const p of paths) out.push({ kind: 'path', value: p, source, state: 'mentioned' });
  if (source === 'output') return;
  for (const token of identifierTokens(rest)) {
    if (isErrorCodeName(token) || !isIdentifier(token)) continue;
    out.push({ kind: 'identifier', value: token, source });
  }
}

function scanLines(out: Mention[], lines: Line[]): void {
  for (const l of lines) scanLine(out, l.text, l.source);
}

function scanToolInput(out: Mention[], name: string, input: unknown): void {
  const shell = SHELL_TOOL.test(name);
  const op = toolPathOperation(name, input);
  if (op) out.push({ kind: 'path', value: op.path, source: 'said', state: op.op });
  if (isRecord(input) && Array.isArray(input.todos)) for (const t of todosOf(input.todos)) out.push({ kind: 'task', value: t.text, source: 'said', state: t.state });
  const visit = (value: unknown, key: string, depth: number) => {
    if (depth > 6) return;
    if (typeof value === 'string') {
      if (PATH_ARG.test(key) && pathArg(value)) return;
      const lines = value.split(/\r?\n/);
      const isCommand = shell && (key === 'command' || key === 'cmd');
      const source: Source = isCommand || lines.length === 1 ? 'said' : lines.length <= MAX_CODE_LINES ? 'code' : 'output';
      if (lines.length > 400) return;
      lines.forEach((l, i) => scanLine(out, l, isCommand && i === 0 ? 'said' : source));
    } else if (Array.isArray(value)) value.forEach((v) => visit(v, key, depth + 1));
    else if (isRecord(value)) for (const k of Object.keys(value).sort()) visit(value[k], k, depth + 1);
  };
  if (isRecord(input)) {
    if (shell) {
      const command = commandOfInput(input.command ?? input.cmd);
      if (command) {
        out.push({ kind: 'command', value: command, source: 'said' });
        for (const op of pathOperationsOf(typeof input.command === 'string' ? input.command : typeof input.cmd === 'string' ? input.cmd : command)) {
          out.push({ kind: 'path', value: op.path, source: 'said', state: op.op });
        }
      }
    }
    if (Array.isArray(input.todos)) return;
    for (const k of Object.keys(input).sort()) visit(input[k], k, 0);
  } else visit(input, '', 0);
}

const READ_TOOL = /^(?:read|view|open|cat|read_file|open_file|view_file|readfile)$/i;
const CREATE_TOOL = /^(?:write|create|create_file|write_file|writefile|new_file)$/i;
const EDIT_TOOL = /^(?:edit|multiedit|multi_edit|str_replace|replace|insert|apply_patch|patch|edit_file|editfile|notebookedit)$/i;
const DELETE_TOOL = /^(?:delete|delete_file|remove|rm|remove_file)$/i;

/** What a file tool did to which path: `Read`/`Write`/`Edit` and their kin, or `str_replace_editor` with its `command`. */
function toolPathOperation(name: string, input: unknown): { path: string; op: PathOperation } | undefined {
  if (!isRecord(input)) return undefined;
  let path: string | undefined;
  for (const k of Object.keys(input)) {
    const v = input[k];
    if (typeof v === 'string' && PATH_ARG.test(k)) {
      path = pathArg(v);
      if (path) break;
    }
  }
  if (!path) return undefined;
  const sub = typeof input.command === 'string' ? input.command : undefined;
  const verb = sub && /editor|file/i.test(name) ? sub : name;
  if (READ_TOOL.test(verb)) return { path, op: 'read' };
  if (CREATE_TOOL.test(verb)) return { path, op: 'created' };
  if (EDIT_TOOL.test(verb) || verb === 'undo_edit') return { path, op: 'edited' };
  if (DELETE_TOOL.test(verb)) return { path, op: 'deleted' };
  return { path, op: 'mentioned' };
}

/** A text's entries, for callers that only need the keys (placeholders): every kind, no history. */
export function ledgerOfText(text: string, role: 'tool' | 'user' | 'assistant' = 'tool', seq = 1): LedgerEntry[] {
  const message: CanonicalMessage =
    role === 'tool' ? { role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 'x', content: text, isError: false }] } : { role, blocks: [{ type: 'text', text }] };
  return FactsLedger.of([{ seq, message }]).entries();
}
