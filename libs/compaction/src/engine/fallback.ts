import { BudgetTooSmall } from '../errors';
import { Block, CanonicalMessage, ToolResultBlock } from '../messages/canonical';
import { toolUseIdOf } from '../messages/util';
import { maskObservations } from './masking';
import { Protection, ProtectionPolicy, protectionOf } from './protection';
import { CountMessage, SessionMessage } from './types';
import { FACTS_HEADER } from './version';
import { CONSTRAINTS_LABEL, entryText, factsGroupKinds, factsGroups, renderFacts } from '../ledger/render';
import { MAX_KEY_CHARS, keysWithin, rankedKeys } from '../ledger/placeholder';
import { FactsLedger, LedgerEntry, LedgerState, isPinned, ledgerOfText } from '../ledger/ledger';
import { scanWindow, toolResultText } from '../ledger/rules';
import { firstRequest, TASK_HEADING, TASK_STATEMENT_BUDGET_SHARE, TASK_STATEMENT_MAX_TOKENS } from './goal-markers';
import { taskStatementWithKeys } from './task-statement';
import { toolNameLookup } from './tool-pairs';
import { formMemo } from './form-memo';

/**
 * Guarantee 4's read-time fallback, then Guarantee 3's give-way order, in the order they run:
 * - `mask`: tool outputs of unprotected messages become a one-line placeholder (observation masking);
 * - `offload`: the unprotected tool outputs masking left (small ones, images) become a reference to the history;
 * - `drop-turns`: the oldest unprotected turns go whole;
 * - `checkpoint-facts`: checkpoints lose their prose, oldest first, and keep their Facts section (the ledger);
 * - `offload-protected`: protected tool outputs become references (that counts as kept);
 * - `drop-checkpoints`: checkpoints go, oldest first (they are not protected content), all but the user's constraints;
 * - `shrink-latest`: the latest-N protection shrinks one message at a time, and what it no longer covers goes;
 * - `drop-protected`: the oldest protected turns go;
 * - `offload-open`: the outputs of the open tool exchange become references, the last resort before 422.
 */
const STEP_ORDER = ['mask', 'offload', 'drop-turns', 'checkpoint-facts', 'offload-protected', 'drop-checkpoints', 'shrink-latest', 'drop-protected', 'offload-open'] as const;
export type FallbackStep = (typeof STEP_ORDER)[number];

export interface FallbackOptions {
  /** SPEC.md's `budget` for the session. */
  budget: number;
  /** The session policy's protection (Guarantee 3). */
  protection: ProtectionPolicy;
  countMessage: CountMessage;
  /** Outputs at or below this many tokens are left to `offload` rather than masked (default 50, as `balanced`). */
  maskMinTokens?: number;
}

export interface FallbackResult {
  /** The context that fits, in order; messages left as they were are the same objects. */
  messages: SessionMessage[];
  tokens: number;
  tokensBefore: number;
  /** False when the context already fit: then `messages` holds the input's messages, unchanged. */
  applied: boolean;
  steps: FallbackStep[];
  /** Seqs of the conversation messages left out (the history keeps them, Guarantee 1). */
  dropped: number[];
  /** Seqs of the checkpoint messages left out (a checkpoint message's seq is its `toSeq`). */
  droppedCheckpoints: number[];
  /** Seqs whose tool outputs were masked. */
  maskedSeqs: number[];
  /** Seqs whose tool outputs were replaced by a reference to the history. */
  offloadedSeqs: number[];
  /** The latest-N protection in force at the end (the policy's N unless it had to shrink). */
  latestMessages: number;
  /** A human line for the response and the event ("Fallback: masked 12 tool outputs, … to fit the 32,000-token budget"). */
  line: string;
}

export const FALLBACK_MASK_MIN_TOKENS = 50;

/**
 * The fallback's step, as a share of the budget. Over budget by `over` tokens, the unprotected steps (masking,
 * offloading, dropping turns, cutting checkpoints to their Facts) free `ceil(over / step)` whole steps, not just `over`:
 * as a session grows read after read while a compaction is pending (or cannot help), the context stays the same
 * (and its prefix in the provider's cache) until it has grown by a step, instead of changing on every read.
 */
export const FALLBACK_STEP = 0.1;

/** The total the unprotected steps aim at: `budget`, less the rest of the last step (see FALLBACK_STEP). */
function stableTarget(tokensBefore: number, budget: number): number {
  const step = Math.max(1, Math.round(budget * FALLBACK_STEP));
  return tokensBefore - Math.ceil((tokensBefore - budget) / step) * step;
}

const OFFLOADED_PREFIX = '[tool output offloaded';
/** The offload stage's artifact reference (offload.ts); kept as is: it names the artifact. */
const OFFLOAD_MARKER = '[offloaded tool output';
const MASKED_PREFIX = '[masked tool output';

const fmt = (n: number) => n.toLocaleString('en-US');
const plural = (n: number, one: string, many = `${one}s`) => `${fmt(n)} ${n === 1 ? one : many}`;
const sumTokens = (xs: SessionMessage[]) => xs.reduce((n, m) => n + m.tokens, 0);

const isCheckpoint = (m: CanonicalMessage) => m.role === 'system' && (m.tags?.includes('checkpoint') ?? false);

/**
 * The fallback runs on the API thread at read time: of a text longer than this, the note reads its
 * first and last half only (a 3 MB conversation's note cost ~50 ms of the first read otherwise).
 */
const NOTE_SCAN_CHARS = 128 * 1024;
const scanned = (t: string) => scanWindow(t, NOTE_SCAN_CHARS);

/** A message as the note reads it: texts and outputs past NOTE_SCAN_CHARS cut to their two ends (the same object when none is). */
function boundedForNote(m: CanonicalMessage): CanonicalMessage {
  const long = (b: Block) => (b.type === 'text' && b.text.length > NOTE_SCAN_CHARS) || (b.type === 'tool_result' && toolResultText(b.content).length > NOTE_SCAN_CHARS);
  if (!m.blocks.some(long)) return m;
  return {
    ...m,
    blocks: m.blocks.map((b) => (!long(b) ? b : b.type === 'text' ? { ...b, text: scanned(b.text) } : b.type === 'tool_result' ? { ...b, content: scanned(toolResultText(b.content)) } : b)),
  };
}

/**
 * The ledger of the turns left out, kept with the first of them: the fallback leaves out the same
 * oldest turns read after read (and a few more as the session grows) until a compaction lands, so a
 * read adds only the messages it leaves out that the last one did not (reading them all again was
 * ~4.5 s a read at 10,000 messages). Adding to a ledger in two steps gives what one step gives.
 */
interface NoteMemo {
  seqs: number[];
  span: string;
  last: CanonicalMessage;
  state: LedgerState;
  parts: NoteParts | undefined;
}

/** What the note on the turns left out says, before it is written for the context it goes into (droppedNoteMessage). */
interface NoteParts {
  count: number;
  span: string;
  /** Their ledger keys, highest weight first, as a placeholder ranks them (rankedKeys). */
  keys: string[];
  /** Their latest error lines. */
  errors: string[];
  /** The user's constraints and the locked decisions among them: protected content (Guarantee 3), the note keeps them verbatim. */
  pinned: LedgerEntry[];
  /** The user's other requests among them (the ledger does not pin them), oldest first. */
  requests: LedgerEntry[];
  /** What the checkpoints that went left (goneFactsOf): their spans, keys and latest error; not part of a memo. */
  gone?: { spans: string[]; keys: string[]; errors: string[] };
}
/**
 * A read notes the turns out before the give-back and those still out after it (fitToBudget), and keeps the ledger of the
 * unprotected ones among them apart (seedDroppedLedger): a few are kept per first message, so each read extends its own
 * earlier ones (with one kept, the two notes undid each other: 1.4 s a read at 10,000 messages).
 */
const noteMemo = new WeakMap<CanonicalMessage, NoteMemo[]>();
const NOTE_MEMOS = 6;

/** The seqs of dropped context positions as ranges: `4–9`, or `4–9, 14–15` where kept messages stand between them. */
function seqSpan(context: readonly SessionMessage[], droppedAt: readonly number[]): string {
  const runs: string[] = [];
  let start = 0;
  for (let k = 1; k <= droppedAt.length; k++) {
    if (k < droppedAt.length && droppedAt[k] === droppedAt[k - 1] + 1) continue;
    const first = context[droppedAt[start]].seq;
    const last = context[droppedAt[k - 1]].seq;
    runs.push(first === last ? fmt(first) : `${fmt(first)}–${fmt(last)}`);
    start = k;
  }
  return runs.join(', ');
}

/**
 * The note that takes the place of the turns the fallback left out: how many, which seqs, and the
 * facts-ledger keys and error lines their messages held (the history keeps them whole): the ledger
 * read message by message, as every stage reads it. A system message, so it is valid wherever it
 * stands (Anthropic hoists it into the system prompt). Undefined when they held no key.
 */
/** Whether `memo` was made from the first messages of `dropped`. */
const startsWith = (dropped: SessionMessage[], memo: NoteMemo) =>
  memo.seqs.length <= dropped.length && memo.seqs.every((s, k) => dropped[k].seq === s) && dropped[memo.seqs.length - 1].message === memo.last;

/** The ledger of `dropped`, extending the longest memo made from its first messages. */
function droppedLedger(dropped: SessionMessage[], memos: NoteMemo[]): FactsLedger {
  const memo = memos.filter((m) => startsWith(dropped, m)).sort((a, b) => b.seqs.length - a.seqs.length)[0];
  const ledger = memo ? FactsLedger.from(memo.state) : new FactsLedger();
  ledger.addAll(dropped.slice(memo ? memo.seqs.length : 0).map((m) => ({ seq: m.seq, message: boundedForNote(m.message) })));
  return ledger;
}

/**
 * Keeps the ledger of the turns left out first (the unprotected ones, oldest first), without a note: as the session grows,
 * more of them go at their end while the protected ones that went stay after them, so the next read's note extends
 * this one instead of reading thousands of turns again (~0.9 s a read at 10,000 messages).
 */
function seedDroppedLedger(dropped: SessionMessage[]): void {
  const memos = noteMemo.get(dropped[0].message) ?? [];
  if (memos.some((m) => m.seqs.length === dropped.length && startsWith(dropped, m))) return;
  const state = droppedLedger(dropped, memos).state();
  noteMemo.set(dropped[0].message, [{ seqs: dropped.map((m) => m.seq), span: '', last: dropped[dropped.length - 1].message, state, parts: undefined }, ...memos].slice(0, NOTE_MEMOS));
}

/** An error line as a note or a Facts form quotes it: at most 200 characters. */
const cutLine = (line: string) => (line.length > 200 ? `${line.slice(0, 199)}…` : line);

/** The latest two error entries of a ledger (the earliest were the likeliest fixed since), in their order, each cut to 200 characters. */
function latestErrors(entries: LedgerEntry[]): string[] {
  return entries
    .filter((e) => e.kind === 'error')
    .sort((a, b) => b.lastSeq - a.lastSeq || b.firstSeq - a.firstSeq)
    .slice(0, 2)
    .reverse()
    .map((e) => cutLine(e.value));
}

function droppedNote(dropped: SessionMessage[], span: string): NoteParts {
  const seqs = dropped.map((m) => m.seq);
  const memos = noteMemo.get(dropped[0].message) ?? [];
  const same = memos.find((m) => m.seqs.length === seqs.length && m.span === span && startsWith(dropped, m));
  if (same?.parts) return same.parts;
  const ledger = droppedLedger(dropped, memos);
  const entries = ledger.entries();
  const keys = rankedKeys(entries);
  const errors = latestErrors(entries);
  const pinned = entries.filter(isPinned);
  const requests = entries.filter((e) => e.kind === 'constraint' && e.role === 'user' && !isPinned(e)).sort((a, b) => a.lastSeq - b.lastSeq || a.firstSeq - b.firstSeq);
  const parts = { count: dropped.length, span, keys, errors, pinned, requests };
  noteMemo.set(dropped[0].message, [{ seqs, span, last: dropped[dropped.length - 1].message, state: ledger.state(), parts }, ...memos].slice(0, NOTE_MEMOS));
  return parts;
}

/** What a system message lists (its `- item` lines, unquoted) and whether it states the task, kept with the message. */
const says = new WeakMap<CanonicalMessage, { items: string[]; statesTask: boolean }>();
function saysOf(m: CanonicalMessage): { items: string[]; statesTask: boolean } {
  const known = says.get(m);
  if (known) return known;
  const out = { items: [] as string[], statesTask: false };
  for (const b of m.blocks) {
    if (b.type !== 'text') continue;
    out.statesTask ||= b.text.includes(TASK_HEADING) || b.text.includes('ACTIVE GOAL: ');
    for (const line of b.text.split('\n')) {
      const item = line.trimStart();
      if (!item.startsWith('- ')) continue;
      const value = item.slice(2);
      out.items.push(value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value);
    }
  }
  says.set(m, out);
  return out;
}

/** A first request's statement, kept with its message: the fallback leaves the same turns out read after read. */
const tasks = new WeakMap<CanonicalMessage, { count: CountMessage; byMax: Map<number, { seq: number; text: string } | undefined> }>();

/** The goal block's task statement of `first` (finalize.ts): its opening within `maxTokens`, and the keys of the rest when cut. */
function taskOf(first: SessionMessage, maxTokens: number, count: CountMessage): { seq: number; text: string } | undefined {
  let memo = tasks.get(first.message);
  if (!memo || memo.count !== count) tasks.set(first.message, (memo = { count, byMax: new Map() }));
  if (memo.byMax.has(maxTokens)) return memo.byMax.get(maxTokens);
  const empty = count({ role: 'user', blocks: [] });
  const countText = (t: string) => count({ role: 'user', blocks: [{ type: 'text', text: t }] }) - empty;
  const text = first.message.blocks.map((b) => (b.type === 'text' ? b.text : '')).join('\n');
  const task = taskStatementWithKeys([first], maxTokens, countText, ledgerOfText(scanned(text), 'user', first.seq));
  memo.byMax.set(maxTokens, task);
  return task;
}

/**
 * The note written out for `room` tokens. The user's constraints and locked decisions among the turns left out come first
 * and whole (those the kept system messages, the goal block or a checkpoint's Facts, do not already quote; at most
 * `pinnedLimit`, the latest kept): `fits` is false when they alone take more than the room. Then, as far as the room goes,
 * the session's first request (`taskForms[0]`, as the goal block states it), the user's other requests (the latest first: what the user asked for is what a dropped turn was about), their latest
 * errors, their keys, and last the request's longer statement (`taskForms[1]`). Undefined when it would say nothing.
 */
function droppedNoteMessage(
  parts: NoteParts,
  room: number,
  /** The items the kept system messages list (the goal block's, the checkpoints' Facts): what they quote needs no note. */
  quotedBySystem: ReadonlySet<string>,
  count: CountMessage,
  pinnedLimit = Infinity,
  /** The session's first request, when the note is to state it: as the goal block would, and longer ('' = none). */
  taskForms: string[] = [],
  /** Without what only spare room takes (more keys, the longer request): the note the give-back keeps room for. */
  lean = false,
): { message: CanonicalMessage; tokens: number; fits: boolean } | undefined {
  const quoted = (e: LedgerEntry) => quotedBySystem.has(e.value);
  const allPinned = parts.pinned.filter((e) => !quoted(e));
  const pinned = pinnedLimit >= allPinned.length ? allPinned : allPinned.slice(allPinned.length - pinnedLimit);
  const requests = parts.requests.filter((e) => !quoted(e));
  const gone = parts.gone;
  const goneWith = !lean && gone !== undefined && (gone.keys.length > 0 || gone.errors.length > 0);
  if (pinned.length === 0 && requests.length === 0 && parts.errors.length === 0 && parts.keys.length === 0 && !taskForms.some(Boolean) && !goneWith) return undefined;
  const goneSpans = gone?.spans.filter(Boolean).join(', ');
  const write = (said: LedgerEntry[], errors: string[], keys: string, task = '', goneKeys = ''): CanonicalMessage => {
    const lines = [
      parts.count > 0
        ? `[${plural(parts.count, 'earlier message')} left out to fit the budget (seq ${parts.span}; the history keeps them)]`
        : `[${gone && gone.spans.length > 1 ? 'checkpoints' : 'a checkpoint'} left out to fit the budget (${goneSpans}; the history keeps them)]`,
    ];
    if (task) lines.push(`${TASK_HEADING}\n${task}`);
    if (said.length > 0) lines.push(renderFacts(said));
    if (keys) lines.push(`Keys in them: ${keys}`);
    if (goneKeys) lines.push(`Keys of the ${gone && gone.spans.length > 1 ? 'checkpoints' : 'checkpoint'} left out (${goneSpans}): ${goneKeys}`);
    if (errors.length) lines.push(`Errors in them:\n${errors.join('\n')}`);
    return { role: 'system', tags: ['note'], blocks: [{ type: 'text', text: lines.join('\n') }] };
  };
  let kept = { task: '', requests: [] as LedgerEntry[], errors: [] as string[], keys: '', goneKeys: '' };
  let message = write(pinned, [], '');
  let tokens = count(message);
  if (tokens > room) return pinned.length > 0 ? { message, tokens, fits: false } : undefined;
  // Each addition stays only if the note still fits.
  const tryWith = (next: typeof kept): boolean => {
    const m = write([...pinned, ...next.requests], next.errors, next.keys, next.task, next.goneKeys);
    const n = count(m);
    if (n > room) return false;
    [message, tokens, kept] = [m, n, next];
    return true;
  };
  // The session's first request, when its turn is out and nothing kept states the task (finalize.ts puts it in the goal block once summarized).
  if (taskForms[0]) tryWith({ ...kept, task: taskForms[0] });
  // The latest requests the room takes, each line counted once (a note written again for each would be quadratic in them),
  // then the note checked whole, giving up the oldest of them while it does not fit.
  const chosen: LedgerEntry[] = [];
  let left = room - tokens - count({ role: 'system', blocks: [{ type: 'text', text: `- User requests (verbatim):` }] }) + count({ role: 'system', blocks: [] });
  for (let k = requests.length - 1; k >= 0; k -= 1) {
    const line = count({ role: 'system', blocks: [{ type: 'text', text: `\n  - ${entryText(requests[k])}` }] }) - count({ role: 'system', blocks: [] });
    if (line > left) break;
    chosen.unshift(requests[k]);
    left -= line;
  }
  while (chosen.length > 0 && !tryWith({ ...kept, requests: chosen })) chosen.shift();
  // The latest error of the checkpoints that went comes before the turns' (it is older), and goes first where the room is short.
  const goneErrors = goneWith ? gone.errors.slice(-1) : [];
  if (parts.errors.length + goneErrors.length > 0 && !tryWith({ ...kept, errors: [...goneErrors, ...parts.errors] }) && parts.errors.length > 0) tryWith({ ...kept, errors: parts.errors.slice(-1) });
  // The keys as a placeholder lists them; where the room takes more (the budget is used: openhands-basic_gui_mode's note cut
  // its keys at a placeholder's length with a third of the budget left), up to four times as many characters.
  const keys = (chars: number) => keysWithin(parts.keys, chars) ?? '';
  // The keys of the checkpoints that went: those the turns' keys do not list, as many characters as the turns' get.
  // A name that a setting among them states with its value (`NAME=value`) is not listed again on its own.
  const statesValue = (k: string) => gone?.keys.some((o) => o.length > k.length && o.startsWith(k) && '=:@ '.includes(o[k.length])) ?? false;
  const goneKeyList = goneWith ? gone.keys.filter((k) => !parts.keys.includes(k) && !quotedBySystem.has(k) && !statesValue(k)) : [];
  const goneKeys = (chars: number) => keysWithin(goneKeyList, chars) ?? '';
  /** The longest key line of `line` within `chars` divided by each share in turn that the note still takes (none when it takes none). */
  const stepDown = (field: 'keys' | 'goneKeys', line: (chars: number) => string, chars: number, shares: number[]) => {
    for (const share of shares) {
      const some = line(Math.floor(chars / share));
      if (!some || some === kept[field] || tryWith({ ...kept, [field]: some })) return;
    }
  };
  const withGoneKeys = (chars: number) => stepDown('goneKeys', goneKeys, chars, [1, 2, 4, 8]);
  if (parts.keys.length > 0 && tryWith({ ...kept, keys: keys(MAX_KEY_CHARS) })) {
    withGoneKeys(MAX_KEY_CHARS);
    if (!lean && keys(4 * MAX_KEY_CHARS) !== kept.keys && !tryWith({ ...kept, keys: keys(4 * MAX_KEY_CHARS) })) tryWith({ ...kept, keys: keys(2 * MAX_KEY_CHARS) });
    if (kept.goneKeys) withGoneKeys(4 * MAX_KEY_CHARS);
  } else if (parts.keys.length > 0 && !lean) {
    // Where a placeholder's worth does not fit, the first keys that do (claude-code-5c0375b4 at summary size: 62 tokens left, and
    // the note on its last turn's dropped steps, with /path/to/Demo/CLAUDE.md and the dev server URLs, was left out whole). Only
    // in the room left at the end: the give-back keeps no room for so small a note, a protected turn coming back is worth more.
    stepDown('keys', keys, MAX_KEY_CHARS, [2, 4, 8]);
  }
  if (!kept.goneKeys) withGoneKeys(MAX_KEY_CHARS);
  // Where room is still left, the longer statement of the request.
  if (!lean && taskForms[1] && taskForms[1] !== kept.task) tryWith({ ...kept, task: taskForms[1] });
  if (pinned.length === 0 && !kept.task && kept.requests.length === 0 && kept.errors.length === 0 && !kept.keys && !kept.goneKeys) return undefined;
  return { message, tokens, fits: true };
}

/** The groups a checkpoint's Facts form adds for what its prose held (checkpointPart). */
const SUMMARY_KEYS_LABEL = 'Keys in its summary';
const SUMMARY_ERRORS_LABEL = 'Errors in its summary';

/**
 * A checkpoint message reduced to its Facts section (`facts`), or to the user constraints of that
 * section (`constraints`); undefined when it has none. The header line (id and span) stays.
 */
function checkpointPart(m: CanonicalMessage, part: 'facts' | 'constraints'): CanonicalMessage | undefined {
  if (part === 'facts' && factsForms.has(m)) return factsForms.get(m);
  const block = m.blocks[0];
  if (m.blocks.length !== 1 || block.type !== 'text') return undefined;
  const at = block.text.lastIndexOf(`\n\n${FACTS_HEADER}\n`);
  if (at < 0) return undefined;
  const header = block.text.slice(0, block.text.indexOf('\n'));
  let facts = block.text.slice(at + FACTS_HEADER.length + 3);
  if (part === 'constraints') {
    const lines = facts.split('\n');
    const start = lines.findIndex((l) => l.startsWith(`- ${CONSTRAINTS_LABEL}:`));
    if (start < 0) return undefined;
    let end = start + 1;
    while (end < lines.length && lines[end].startsWith('  - ')) end += 1;
    facts = lines.slice(start, end).join('\n');
  } else {
    // The Facts section holds the ledger entries the summary lacked: the keys and errors the prose held go with it unless
    // they stay (ctf_web_i_got_id lost its curl URLs, pydicom-1458 its E999 lines, when their checkpoints were cut to their
    // Facts), as a masked output keeps its keys. The prose is read as a tool output is: the summary quotes error lines.
    // (Where the room is short this form is larger than before, and the note on dropped turns can no longer fit.)
    const facts0 = facts;
    const entries = ledgerOfText(block.text.slice(header.length, at));
    const keys = keysWithin(
      rankedKeys(entries).filter((k) => !facts0.includes(k)),
      MAX_KEY_CHARS,
    );
    if (keys) facts = `${facts}\n- ${SUMMARY_KEYS_LABEL}: ${keys}`;
    // One text: its last errors are its latest (a summary lists them as items: their marker is not part of the line).
    const errors = entries
      .filter((e) => e.kind === 'error' && !facts0.includes(e.value))
      .slice(-2)
      .map((e) => cutLine(e.value.replace(/^[-*] /, '')));
    if (errors.length > 0) facts = `${facts}\n- ${SUMMARY_ERRORS_LABEL}:\n  - ${errors.join('\n  - ')}`;
  }
  const out: CanonicalMessage = { ...m, blocks: [{ type: 'text', text: `${header}\n\n${FACTS_HEADER}\n${facts}` }] };
  if (part === 'facts') factsForms.set(m, out);
  return out;
}
/** A checkpoint's Facts form, kept with the checkpoint message: the fallback cuts the same checkpoints read after read. */
const factsForms = new WeakMap<CanonicalMessage, CanonicalMessage | undefined>();

/** What a checkpoint the fallback let go leaves to the note on what was left out (goneFactsOf). */
interface GoneFacts {
  /** "messages 1–10", from the checkpoint's header line. */
  span: string;
  /** Its Facts form's keys (tests, files, settings and versions, commands, URLs, identifiers, its summary's keys), in the section's order. */
  keys: string[];
  /** Its Facts form's error lines, in their order. */
  errors: string[];
}
const goneFacts = new WeakMap<CanonicalMessage, GoneFacts>();
/** A setting or version as a key lists it: its latest value, without the earlier ones a Facts section adds (`(was …)`). */
function latestOnly(item: string): string {
  const at = item.lastIndexOf(' (was ');
  return at > 0 && item.endsWith(')') ? item.slice(0, at) : item;
}
/**
 * The ledger survives the fallback's last unprotected step too (SPEC.md "Facts ledger"): a checkpoint that goes (or keeps
 * only its user constraints) leaves its Facts form's keys and errors to the note, as a masked output leaves its keys to its
 * placeholder. Its prose groups (decisions, tasks, requests) stay out: sentences, not keys; its constraints stay where they
 * are. (aider-202408140950-0647 at summary size lost `AIDER_DARK_MODE=on (was …True)`, aider-202408131342-0618 its
 * `SyntaxError: Unexpected number '182'` line, with a checkpoint that went whole while the note listed its turns' keys.)
 */
function goneFactsOf(m: CanonicalMessage): GoneFacts {
  const known = goneFacts.get(m);
  if (known) return known;
  const facts = checkpointPart(m, 'facts');
  const text = facts?.blocks[0]?.type === 'text' ? facts.blocks[0].text : '';
  const header = text.slice(0, text.indexOf('\n'));
  const span = header.includes(' · ') ? header.slice(header.lastIndexOf(' · ') + 3) : '';
  const out: GoneFacts = { span: span.endsWith(']') ? span.slice(0, -1) : span, keys: [], errors: [] };
  const at = text.indexOf(`\n\n${FACTS_HEADER}\n`);
  const summaryErrors: string[] = [];
  for (const g of at < 0 ? [] : factsGroups(text.slice(at + FACTS_HEADER.length + 3))) {
    const kinds = g.label === SUMMARY_KEYS_LABEL ? ['identifier'] : g.label === SUMMARY_ERRORS_LABEL ? ['error'] : (factsGroupKinds(g.label) ?? []);
    if (g.label === SUMMARY_ERRORS_LABEL) summaryErrors.push(...g.items);
    else if (kinds.includes('error')) out.errors.push(...g.items);
    else if (kinds.some((k) => k === 'setting' || k === 'version')) out.keys.push(...g.items.map(latestOnly));
    else if (!kinds.some((k) => k === 'constraint' || k === 'decision' || k === 'task')) out.keys.push(...g.items);
  }
  // The ledger's own error lines first; the lines its summary's prose held only where it has none (prose that names an
  // error reads as one: "This should resolve the SyntaxError you encountered." in aider-202408131342-0618's summary).
  if (out.errors.length === 0) out.errors.push(...summaryErrors);
  goneFacts.set(m, out);
  return out;
}
const hasResults = (m: CanonicalMessage) => m.blocks.some((b) => b.type === 'tool_result');
/** A user message that answers no tool call opens a turn. */
const startsTurn = (m: CanonicalMessage) => m.role === 'user' && !hasResults(m);
const answersTools = (m: CanonicalMessage) => m.role === 'tool' || (m.role === 'user' && hasResults(m));
const callsTools = (m: CanonicalMessage) => m.role === 'assistant' && m.blocks.some((b) => toolUseIdOf(b) !== undefined);
// An artifact reference (offload stage) is already the short form of its output, and names where the full one is.
const isPlaceholder = (b: ToolResultBlock) =>
  typeof b.content === 'string' && (b.content.startsWith(MASKED_PREFIX) || b.content.startsWith(OFFLOADED_PREFIX) || b.content.startsWith(OFFLOAD_MARKER));

/**
 * What can be dropped, as whole units, oldest first: a `turn` is a user message and everything
 * up to the next one; in the last turn, whose user message can never go, a `step` is an
 * assistant message with the messages carrying its tool results. Units never cut a tool
 * exchange (Guarantee 2). `exchangeRange` is not used for the boundaries because it starts an
 * exchange only at messages holding nothing but results, and an Anthropic user message may
 * carry results and then text.
 */
interface Unit {
  kind: 'turn' | 'step';
  indexes: number[];
}

interface Shape {
  /** System prompts and other system messages that are not checkpoints or in the conversation: they never go. */
  systems: number[];
  checkpoints: number[];
  /** The last user message that answers no tool call: it never goes. */
  lastUser?: number;
  /** The trailing tool exchange (a call and its results, or a call still waiting): it never goes. */
  open: number[];
  units: Unit[];
}

function shapeOf(context: SessionMessage[]): Shape {
  const systems: number[] = [];
  const checkpoints: number[] = [];
  const conversation: number[] = [];
  context.forEach((m, i) => {
    // An in-conversation system message is conversation: it goes with its turn (or step).
    if (m.message.role !== 'system' || m.message.inConversation) conversation.push(i);
    else if (isCheckpoint(m.message)) checkpoints.push(i);
    else systems.push(i);
  });

  let lastUser: number | undefined;
  for (const i of conversation) if (startsTurn(context[i].message)) lastUser = i;

  // The trailing exchange: back from the end over result messages to the assistant that called.
  let f = conversation.length - 1;
  while (f >= 0 && (answersTools(context[conversation[f]].message) || context[conversation[f]].message.inConversation)) f -= 1;
  const open = f >= 0 && callsTools(context[conversation[f]].message) ? conversation.slice(f) : [];
  const openSet = new Set(open);

  const units: Unit[] = [];
  let current: Unit | undefined;
  for (const i of conversation) {
    if (i === lastUser || openSet.has(i)) {
      current = undefined;
      continue;
    }
    const m = context[i].message;
    const inLastTurn = lastUser === undefined || i > lastUser;
    const opens = inLastTurn ? m.role === 'assistant' : startsTurn(m);
    if (!current || opens) {
      current = { kind: inLastTurn ? 'step' : 'turn', indexes: [] };
      units.push(current);
    }
    current.indexes.push(i);
  }
  return { systems, checkpoints, lastUser, open, units };
}

/** The context being fitted: same indexes as the input, a message either kept (maybe in a smaller form) or removed. */
class Fitting {
  readonly current: SessionMessage[];
  readonly removed: boolean[];
  total: number;

  constructor(
    context: SessionMessage[],
    /** What the steps aim at: the stable target while unprotected content gives way, the budget once protections give way. */
    public limit: number,
  ) {
    this.current = [...context];
    this.removed = context.map(() => false);
    this.total = sumTokens(context);
  }

  fits(): boolean {
    return this.total <= this.limit;
  }

  replace(i: number, m: SessionMessage): void {
    this.total += m.tokens - this.current[i].tokens;
    this.current[i] = m;
  }

  /** Puts a message where a removed one was (the note that says what the dropped turns held). */
  restoreAs(i: number, m: SessionMessage): void {
    if (!this.removed[i]) return;
    this.removed[i] = false;
    this.current[i] = m;
    this.total += m.tokens;
  }

  remove(i: number): void {
    if (this.removed[i]) return;
    this.removed[i] = true;
    this.total -= this.current[i].tokens;
  }

  keptIndexes(): number[] {
    const out: number[] = [];
    this.removed.forEach((r, i) => {
      if (!r) out.push(i);
    });
    return out;
  }
}

interface Tally {
  maskedOutputs: number;
  offloadedOutputs: number;
  protectedOffloaded: number;
  openOffloaded: number;
  turns: number;
  steps: number;
  checkpoints: number;
  checkpointProse: number;
  protectedMessages: number;
  shrunkMessages: number;
}

/**
 * Fits an assembled context (`applyPrefix`'s output, made provider-valid) into `budget`
 * without an LLM: pure and deterministic. Under budget it returns the context unchanged;
 * otherwise it applies the steps of `FallbackStep` in order and stops as soon as the context
 * fits: the unprotected steps in whole steps of the budget (FALLBACK_STEP), protected content only
 * as far as the budget needs. What never goes: the system prompt(s), the last user message and an open tool
 * exchange; when those alone exceed the budget it throws `BudgetTooSmall` (422), never
 * returning an oversized context. A provider-valid input gives a provider-valid result:
 * only whole turns and steps are dropped, tool results keep their block and id when
 * replaced, and assistant messages (thinking included) are never edited.
 */
export function fitToBudget(context: SessionMessage[], options: FallbackOptions): FallbackResult {
  const { budget, countMessage } = options;
  const tokensBefore = sumTokens(context);
  const policy = options.protection;
  if (tokensBefore <= budget) {
    return {
      messages: [...context],
      tokens: tokensBefore,
      tokensBefore,
      applied: false,
      steps: [],
      dropped: [],
      droppedCheckpoints: [],
      maskedSeqs: [],
      offloadedSeqs: [],
      latestMessages: policy.latestMessages,
      line: `Within budget: ~${fmt(tokensBefore)} of ${fmt(budget)} tokens, no fallback needed`,
    };
  }

  const shape = shapeOf(context);
  // Unprotected content gives way in whole steps of the budget (see FALLBACK_STEP): a context that grew by less than a
  // step since the last read loses the same outputs and turns, so the prefix the provider cached stays the same.
  const fit = new Fitting(context, stableTarget(tokensBefore, budget));
  const steps: FallbackStep[] = [];
  /** Records a step that ran late (the note's room, in `finish`), in Guarantee 3's order. */
  const addStep = (step: FallbackStep) => {
    if (steps.includes(step)) return;
    steps.push(step);
    steps.sort((a, b) => STEP_ORDER.indexOf(a) - STEP_ORDER.indexOf(b));
  };
  const tally: Tally = { maskedOutputs: 0, offloadedOutputs: 0, protectedOffloaded: 0, openOffloaded: 0, turns: 0, steps: 0, checkpoints: 0, checkpointProse: 0, protectedMessages: 0, shrunkMessages: 0 };
  const maskedSeqs: number[] = [];
  const offloadedSeqs: number[] = [];
  /** The messages whose tool outputs became references once protections gave way, with how many outputs each: the give-back reads them. */
  const protectedOffloadedAt = new Map<number, { before: SessionMessage; outputs: number }>();
  /** Checkpoints whose prose the fallback cut, and those it dropped (all but their constraints): the give-back reads them. */
  const proseCut = new Set<number>();
  const checkpointsGone = new Set<number>();
  const openSeqs = new Set(shape.open.map((i) => context[i].seq));
  const openIndexes = new Set(shape.open);
  const toolNameOf = toolNameLookup(context);

  /** Protection of what is kept now, with `latestMessages` = n; the open exchange is never compacted before the last resort. */
  const protect = (n: number): Protection => {
    const p = protectionOf(
      fit.keptIndexes().map((i) => fit.current[i]),
      { ...policy, latestMessages: n },
    );
    for (const seq of openSeqs) p.whole.add(seq);
    return p;
  };
  const isProtected = (u: Unit, p: Protection) =>
    u.indexes.some((i) => {
      const m = context[i];
      return p.whole.has(m.seq) || p.userText.has(m.seq) || m.message.blocks.some((b) => b.type === 'tool_result' && p.exemptToolUseIds.has(b.toolUseId));
    });

  /** The units dropped whole, with the tally entry each one counts in (the give-back takes it off again). */
  const droppedUnits = new Map<Unit, { key: 'turns' | 'steps' | 'shrunkMessages' | 'protectedMessages'; n: number }>();
  /** Drops the units `take` accepts, oldest first, until the context fits; each counts in the tally as `count` says. */
  const dropUnit = (u: Unit, counted: { key: 'turns' | 'steps' | 'shrunkMessages' | 'protectedMessages'; n: number }): void => {
    for (const i of u.indexes) fit.remove(i);
    tally[counted.key] += counted.n;
    droppedUnits.set(u, counted);
  };
  const dropUnits = (take: (u: Unit) => boolean, count: (u: Unit) => { key: 'turns' | 'steps' | 'shrunkMessages' | 'protectedMessages'; n: number }): void => {
    for (const u of shape.units) {
      if (fit.fits()) break;
      if (u.indexes.some((i) => fit.removed[i]) || !take(u)) continue;
      dropUnit(u, count(u));
    }
  };

  /** Replaces the chosen tool outputs of `indexes` (oldest first) by a reference to the history, while it helps and until the context fits. */
  const offload = (indexes: number[], eligible: (b: ToolResultBlock) => boolean, at?: Map<number, { before: SessionMessage; outputs: number }>): number => {
    let outputs = 0;
    for (const i of indexes) {
      if (fit.fits()) break;
      if (fit.removed[i]) continue;
      const m = fit.current[i];
      // Assistant messages are never edited (thinking stays byte-exact); results live in user and tool messages.
      if (m.message.role === 'assistant' || !hasResults(m.message)) continue;
      // Which outputs go, under which tool name ('' = kept): with the message, all that decides its offloaded form.
      const offloadAs = m.message.blocks.map((b) => (b.type !== 'tool_result' || isPlaceholder(b) || !eligible(b) ? '' : (toolNameOf(i, b.toolUseId) ?? 'tool')));
      const replaced = offloadAs.filter((name) => name !== '').length;
      if (replaced === 0) continue;
      const offloaded = offloadedForm(m, offloadAs, countMessage);
      if (!offloaded) continue;
      fit.replace(i, offloaded);
      offloadedSeqs.push(m.seq);
      outputs += replaced;
      at?.set(i, { before: m, outputs: replaced });
    }
    return outputs;
  };

  /** The session's first request, stated as the goal block states it (taskOf), found once. */
  let task: SessionMessage | undefined | null = null;
  const sessionTask = () => {
    if (task === null) {
      const opening: SessionMessage[] = [];
      for (const m of context) {
        if (m.message.role === 'system' && !m.message.inConversation) continue;
        opening.push(m);
        if (m.message.role === 'assistant') break;
      }
      task = firstRequest(opening);
    }
    return task;
  };
  /** The first request as the note states it: as the goal block would (its share of the budget), then as long as a task section may be. */
  const taskForms = (first: SessionMessage) =>
    [Math.min(TASK_STATEMENT_MAX_TOKENS, Math.floor(TASK_STATEMENT_BUDGET_SHARE * budget)), TASK_STATEMENT_MAX_TOKENS].map((n) => taskOf(first, n, countMessage)?.text ?? '');

  /**
   * What the kept system messages (the system prompt, the goal block, the checkpoints) say already: the items they list (a
   * Facts section's quoted constraints, the goal block's), which the note need not quote again, and whether they state the task.
   */
  const systemSays = (): { quoted: Set<string>; statesTask: boolean } => {
    const quoted = new Set<string>();
    let statesTask = false;
    for (const i of [...shape.systems, ...shape.checkpoints]) {
      if (fit.removed[i]) continue;
      const says = saysOf(fit.current[i].message);
      statesTask ||= says.statesTask;
      for (const item of says.items) quoted.add(item);
    }
    return { quoted, statesTask };
  };

  /**
   * The note on the turns left out, in the place of the first of them, written for the room left (droppedNoteMessage):
   * `fits` is false when the user's constraints among them alone do not fit. A note with nothing binding in it is offered
   * only when it is smaller than what it stands for. Undefined when nothing is left out or the note would say nothing.
   */
  const noteOnDropped = (pinnedLimit = Infinity, room = fit.limit - fit.total, lean = false): { at: number; m: SessionMessage; fits: boolean; pinnedCount: number } | undefined => {
    const droppedAt: number[] = [];
    for (let i = 0; i < context.length; i++) if (fit.removed[i] && !isCheckpoint(context[i].message)) droppedAt.push(i);
    // The checkpoints that went (or kept only their constraints), oldest first: their Facts go into the note (goneFactsOf).
    const goneAt = lean ? [] : shape.checkpoints.filter((i) => checkpointsGone.has(i));
    const gone = goneAt.length === 0 ? undefined : goneAt.map((i) => goneFactsOf(context[i].message));
    // With no turn out, the note stands in the place of the first checkpoint that went whole.
    const noteAt = droppedAt[0] ?? goneAt.find((i) => fit.removed[i]);
    if (noteAt === undefined) return undefined;
    // The unprotected turns left out come first; protected ones that went after them: their ledger is kept apart (seedDroppedLedger).
    const unprotected = new Uint8Array(context.length);
    for (const [u, c] of droppedUnits) if (c.key === 'turns' || c.key === 'steps') for (const i of u.indexes) unprotected[i] = 1;
    let lead = 0;
    while (lead < droppedAt.length && unprotected[droppedAt[lead]] === 1) lead++;
    if (lead > 0 && lead < droppedAt.length) seedDroppedLedger(droppedAt.slice(0, lead).map((i) => context[i]));
    const turns: NoteParts =
      droppedAt.length > 0 ? droppedNote(droppedAt.map((i) => context[i]), seqSpan(context, droppedAt)) : { count: 0, span: '', keys: [], errors: [], pinned: [], requests: [] };
    // Newest first: a later checkpoint's keys are the likelier to matter, and go first where the room is short.
    const parts: NoteParts = gone
      ? { ...turns, gone: { spans: gone.map((g) => g.span), keys: [...new Set([...gone].reverse().flatMap((g) => g.keys))], errors: gone.flatMap((g) => g.errors) } }
      : turns;
    const system = systemSays();
    const first = sessionTask();
    const stated = first && !system.statesTask && droppedAt.some((i) => context[i].seq === first.seq) ? taskForms(first) : [];
    const note = droppedNoteMessage(parts, room, system.quoted, countMessage, pinnedLimit, stated, lean);
    if (!note) return undefined;
    const at = noteAt;
    const pinnedCount = parts.pinned.filter((e) => !system.quoted.has(e.value)).length;
    const droppedTokens = droppedAt.reduce((n, i) => n + context[i].tokens, 0) + goneAt.reduce((n, i) => n + context[i].tokens - (fit.removed[i] ? 0 : fit.current[i].tokens), 0);
    if (pinnedCount === 0 && note.tokens >= droppedTokens) return undefined;
    return { at, m: { seq: context[at].seq, message: note.message, tokens: note.tokens }, fits: note.fits, pinnedCount };
  };

  const giveBackUnits = () => {
    // Room is kept for the note on what was out before any came back (the note reads every dropped message, so it is
    // not written again for each candidate: at 10,000 messages that is seconds); the note on what is still out is then
    // written once, and if it does not fit after all, the turns that came back go again, the last one first.
    const whole = noteOnDropped(Infinity, Infinity, true);
    const before = whole && fit.total + whole.m.tokens <= fit.limit ? whole : noteOnDropped(Infinity, fit.limit - fit.total, true);
    const reserve = before?.fits ? before.m.tokens : 0;
    const back: Unit[] = [];
    for (const u of [...shape.units].reverse()) {
      const counted = droppedUnits.get(u);
      if (!counted || (counted.key !== 'shrunkMessages' && counted.key !== 'protectedMessages')) continue;
      if (fit.total + reserve + u.indexes.reduce((n, i) => n + fit.current[i].tokens, 0) > fit.limit) continue;
      for (const i of u.indexes) fit.restoreAs(i, fit.current[i]);
      back.push(u);
    }
    if (back.length === 0) return;
    while (reserve > 0 && back.length > 0) {
      // Where the whole note fitted before, the whole note on what is still out must fit now (it can be longer: its seqs).
      const note = noteOnDropped(Infinity, before === whole ? Infinity : reserve, true);
      if (!note || fit.total + note.m.tokens <= fit.limit) break;
      for (const i of back.pop()!.indexes) fit.remove(i);
    }
    for (const u of back) {
      const counted = droppedUnits.get(u)!;
      tally[counted.key] -= counted.n;
      droppedUnits.delete(u);
    }
    // A step whose every unit came back did nothing.
    const stillDropped = (keys: Array<keyof Tally>) => keys.some((k) => tally[k] > 0);
    for (const [step, keys] of [
      ['shrink-latest', ['shrunkMessages']],
      ['drop-protected', ['protectedMessages']],
    ] as const) {
      const at = steps.indexOf(step);
      if (at >= 0 && !stillDropped([...keys])) steps.splice(at, 1);
    }
  };

  const finish = (latestMessages: number): FallbackResult => {
    // Give back (the budget is used, issue #14): the steps run greedily in Guarantee 3's order, and a later one (a large
    // message the shrinking protection let go) can free more than the earlier ones needed. The checkpoints cut to their
    // Facts or dropped are put back, newest first (they went oldest first), in the fullest form the room left takes:
    // whole, their Facts section, their constraints.
    for (const i of [...shape.checkpoints].reverse()) {
      const original = context[i];
      if (!fit.removed[i] && fit.current[i] === original) continue;
      const now = fit.removed[i] ? 0 : fit.current[i].tokens;
      const forms: { kind: 'whole' | 'facts' | 'constraints'; m: SessionMessage }[] = [{ kind: 'whole', m: original }];
      for (const part of ['facts', 'constraints'] as const) {
        const reduced = checkpointPart(original.message, part);
        if (reduced) forms.push({ kind: part, m: { seq: original.seq, message: reduced, tokens: countMessage(reduced) } });
      }
      const form = forms.find((f) => f.m.tokens > now && fit.total - now + f.m.tokens <= fit.limit);
      if (!form) continue;
      if (fit.removed[i]) fit.restoreAs(i, form.m);
      else fit.replace(i, form.m);
      // The line tells what was finally done: a checkpoint back whole was neither cut nor dropped; back to its Facts, only cut.
      if (form.kind !== 'constraints' && checkpointsGone.delete(i)) tally.checkpoints -= 1;
      if (form.kind === 'whole' && proseCut.delete(i)) tally.checkpointProse -= 1;
    }
    // The protected turns and steps that gave way come back too, newest first, where the room left takes them, in the form
    // the earlier steps left (their tool outputs already references). They go oldest first until the context fits, and the last one is
    // often a large one that freed far more than was needed (claude-code-fe5e1c67 at the 1,574-token floor was served
    // 480 tokens). Unprotected ones stay out (Guarantee 3: they never stand in the place of protected content). Room stays
    // for the note on what is still out.
    giveBackUnits();
    // The ledger survives the fallback too (SPEC.md "Facts ledger"): the turns it left out leave a note with their keys, when it
    // fits. The user's constraints and locked decisions among them are protected content (Guarantee 3): while even the note
    // that keeps only them does not fit, another turn goes too (aider 0288 lost "from_coder should also copy the
    // read only files" with the turn that said it); when nothing is left to go, the note keeps the latest of them that fit.
    let note = noteOnDropped();
    while (note && !note.fits) {
      // Unprotected content goes before protected content (Guarantee 3), each oldest first.
      const kept = shape.units.filter((x) => !x.indexes.some((i) => fit.removed[i]));
      const u = kept.find((x) => !isProtected(x, initial)) ?? kept[0];
      if (!u) break;
      const protectedUnit = isProtected(u, initial);
      dropUnit(u, protectedUnit ? { key: 'protectedMessages', n: u.indexes.length } : { key: u.kind === 'turn' ? 'turns' : 'steps', n: 1 });
      addStep(protectedUnit ? 'drop-protected' : 'drop-turns');
      note = noteOnDropped();
    }
    for (let n = (note?.pinnedCount ?? 0) - 1; n >= 0 && note && !note.fits; n -= 1) note = noteOnDropped(n);
    const dropped: number[] = [];
    const droppedCheckpoints: number[] = [];
    fit.removed.forEach((r, i) => {
      if (r) (isCheckpoint(context[i].message) ? droppedCheckpoints : dropped).push(context[i].seq);
    });
    if (note?.fits) fit.restoreAs(note.at, note.m);
    // The tool outputs that became references once protections gave way come back whole, newest first, where the room left
    // after the note takes them (the budget is used: openhands-basic_gui_mode at 25% of the session was sent 749 tokens of
    // 1,255, its `http.server` output, 37 tokens with the URL it served, as a reference).
    for (const [i, { before, outputs }] of [...protectedOffloadedAt].sort((a, b) => b[0] - a[0])) {
      if (fit.removed[i] || fit.total - fit.current[i].tokens + before.tokens > fit.limit) continue;
      fit.replace(i, before);
      tally.protectedOffloaded -= outputs;
      const k = offloadedSeqs.lastIndexOf(context[i].seq);
      if (k >= 0) offloadedSeqs.splice(k, 1);
    }
    if (tally.protectedOffloaded === 0 && steps.includes('offload-protected')) steps.splice(steps.indexOf('offload-protected'), 1);
    const kept = fit.keptIndexes();
    const messages = kept.map((i) => fit.current[i]);
    const tokens = sumTokens(messages);
    return {
      messages,
      tokens,
      tokensBefore,
      applied: true,
      steps,
      dropped,
      droppedCheckpoints,
      maskedSeqs: [...maskedSeqs].sort((a, b) => a - b),
      offloadedSeqs: [...new Set(offloadedSeqs)].sort((a, b) => a - b),
      latestMessages,
      line: describe(tally, policy.latestMessages, latestMessages, tokensBefore - tokens, budget),
    };
  };

  // 1. Mask the tool outputs of unprotected messages, oldest first.
  const initial = protect(policy.latestMessages);
  {
    const kept = fit.keptIndexes();
    const masking = maskObservations(
      kept.map((i) => fit.current[i]),
      initial,
      { keepLatestTurns: 0, minTokens: options.maskMinTokens ?? FALLBACK_MASK_MIN_TOKENS },
      countMessage,
    );
    masking.messages.forEach((m, k) => {
      const i = kept[k];
      const before = fit.current[i];
      if (m === before || fit.fits()) return;
      tally.maskedOutputs += m.message.blocks.filter((b, j) => b !== before.message.blocks[j]).length;
      fit.replace(i, m);
      maskedSeqs.push(m.seq);
    });
    if (maskedSeqs.length > 0) steps.push('mask');
    if (fit.fits()) return finish(policy.latestMessages);
  }

  // 2. Offload what masking left of the unprotected tool outputs.
  tally.offloadedOutputs = offload(
    fit.keptIndexes().filter((i) => !initial.whole.has(context[i].seq)),
    (b) => !initial.exemptToolUseIds.has(b.toolUseId),
  );
  if (tally.offloadedOutputs > 0) steps.push('offload');
  if (fit.fits()) return finish(policy.latestMessages);

  // 3. Drop the oldest unprotected turns (and, in the last turn, steps) whole.
  dropUnits(
    (u) => !isProtected(u, initial),
    (u) => ({ key: u.kind === 'turn' ? 'turns' : 'steps', n: 1 }),
  );
  if (tally.turns + tally.steps > 0) steps.push('drop-turns');
  if (fit.fits()) return finish(policy.latestMessages);

  // 4. Checkpoints are summaries, not protected content. First their prose goes, oldest first: the Facts
  // section (the ledger entries the summary lacked: files, errors, tests, latest values) is the densest
  // memory of the span and stays (SPEC.md "Facts ledger").
  for (const i of shape.checkpoints) {
    if (fit.fits()) break;
    const m = fit.current[i];
    const reduced = checkpointPart(m.message, 'facts');
    if (!reduced) continue;
    const tokens = countMessage(reduced);
    if (tokens >= m.tokens) continue;
    fit.replace(i, { seq: m.seq, message: reduced, tokens });
    proseCut.add(i);
    tally.checkpointProse += 1;
  }
  if (tally.checkpointProse > 0) steps.push('checkpoint-facts');
  if (fit.fits()) return finish(policy.latestMessages);

  // Guarantee 3's give-way order: protected content gives way only as far as the budget needs, not to the stable target.
  fit.limit = budget;
  if (fit.fits()) return finish(policy.latestMessages);
  // (a) Protected tool outputs become references: still kept, so this comes before any checkpoint goes whole.
  tally.protectedOffloaded = offload(
    fit.keptIndexes().filter((i) => !openIndexes.has(i)),
    () => true,
    protectedOffloadedAt,
  );
  if (tally.protectedOffloaded > 0) steps.push('offload-protected');
  if (fit.fits()) return finish(policy.latestMessages);

  // 5. Then checkpoints go, oldest first; the user's constraints in their Facts sections stay (Guarantee 3).
  for (const i of shape.checkpoints) {
    if (fit.fits()) break;
    const m = fit.current[i];
    const pinned = checkpointPart(m.message, 'constraints');
    const tokens = pinned ? countMessage(pinned) : 0;
    if (pinned && tokens < m.tokens) fit.replace(i, { seq: m.seq, message: pinned, tokens });
    else if (!pinned) fit.remove(i);
    else continue;
    checkpointsGone.add(i);
    tally.checkpoints += 1;
  }
  if (tally.checkpoints > 0) steps.push('drop-checkpoints');
  if (fit.fits()) return finish(policy.latestMessages);

  // (b) The latest-N protection shrinks one message at a time; what it stops covering goes, oldest first.
  let latest = policy.latestMessages;
  for (let n = Math.min(latest, fit.keptIndexes().length) - 1; n >= 0 && !fit.fits(); n -= 1) {
    latest = n;
    const p = protect(n);
    dropUnits(
      (u) => !isProtected(u, p),
      (u) => ({ key: 'shrunkMessages', n: u.indexes.length }),
    );
  }
  if (tally.shrunkMessages > 0) steps.push('shrink-latest');
  if (fit.fits()) return finish(latest);
  latest = 0;

  // (c) The oldest protected messages go, a whole turn or step at a time.
  dropUnits(
    () => true,
    (u) => ({ key: 'protectedMessages', n: u.indexes.length }),
  );
  if (tally.protectedMessages > 0) steps.push('drop-protected');
  if (fit.fits()) return finish(latest);

  // Last resort: the open exchange's outputs become references (its calls and results stay).
  tally.openOffloaded = offload(shape.open, () => true);
  if (tally.openOffloaded > 0) steps.push('offload-open');
  if (fit.fits()) return finish(latest);

  // What is left is what can never go: the system prompt(s), the last user message, the open exchange.
  const keptSystem = fit.keptIndexes().reduce((n, i) => n + (fit.current[i].message.role === 'system' && !fit.current[i].message.inConversation ? fit.current[i].tokens : 0), 0);
  throw new BudgetTooSmall(budget, fit.total, { systemTokens: keptSystem, conversationTokens: fit.total - keptSystem });
}

/** Offloaded forms, kept with their messages (formMemo): the fallback offloads the same stored (or masked) messages on every read. */
const offloads = formMemo<SessionMessage | undefined>();

/** `m` with the outputs `offloadAs` names replaced by references to the history, counted again; undefined when that saves nothing. */
function offloadedForm(m: SessionMessage, offloadAs: string[], count: CountMessage): SessionMessage | undefined {
  return offloads(m, offloadAs, count, () => {
    const blocks: Block[] = m.message.blocks.map((b, j) => (b.type === 'tool_result' && offloadAs[j] !== '' ? referenceOf(b, m, offloadAs[j], count) : b));
    const message: CanonicalMessage = { ...m.message, blocks };
    const tokens = count(message);
    return tokens < m.tokens ? { seq: m.seq, message, tokens } : undefined;
  });
}

/** A tool result whose output is replaced by where to find it; same block, id and error flag, so the pair stays intact. */
/** Above this many characters a result's size is estimated, not counted: counting a megabyte would hold the API thread for seconds. */
const COUNT_RESULT_MAX_CHARS = 16 * 1024;

const blockChars = (b: Block): number =>
  b.type === 'text' ? b.text.length : b.type === 'tool_result' ? (typeof b.content === 'string' ? b.content.length : JSON.stringify(b.content).length) : JSON.stringify(b).length;

/**
 * A reference to the history in place of one result, with its approximate size: counted for a
 * small result; for a large one, its share by characters of the message's own count (made at
 * ingest, off the request thread).
 */
function referenceOf(b: ToolResultBlock, m: SessionMessage, name: string, count: CountMessage): ToolResultBlock {
  const role = m.message.role;
  const chars = blockChars(b);
  const approx =
    chars <= COUNT_RESULT_MAX_CHARS
      ? Math.max(1, count({ role, blocks: [b] }) - count({ role, blocks: [] }))
      : Math.max(1, Math.round((m.tokens * chars) / Math.max(1, m.message.blocks.reduce((n, x) => n + blockChars(x), 0))));
  const next: ToolResultBlock = { ...b, content: `${OFFLOADED_PREFIX}: ${name}, ~${fmt(approx)} tokens; full output in the session history at seq ${m.seq}]` };
  delete next.contentOmitted;
  return next;
}

function describe(t: Tally, policyLatest: number, latest: number, saved: number, budget: number): string {
  const parts: string[] = [];
  if (t.maskedOutputs > 0) parts.push(`masked ${plural(t.maskedOutputs, 'tool output')}`);
  if (t.offloadedOutputs > 0) parts.push(`offloaded ${plural(t.offloadedOutputs, 'tool output')} by reference`);
  if (t.turns > 0 || t.steps > 0) {
    const what = [t.turns > 0 ? `${fmt(t.turns)} oldest ${t.turns === 1 ? 'turn' : 'turns'}` : '', t.steps > 0 ? `${plural(t.steps, 'agent step')} of the last turn` : ''];
    parts.push(`dropped ${what.filter(Boolean).join(' and ')}`);
  }
  if (t.checkpointProse > 0) parts.push(`cut ${fmt(t.checkpointProse)} oldest ${t.checkpointProse === 1 ? 'checkpoint' : 'checkpoints'} to ${t.checkpointProse === 1 ? 'its' : 'their'} Facts section`);
  if (t.checkpoints > 0) parts.push(`dropped ${fmt(t.checkpoints)} oldest ${t.checkpoints === 1 ? 'checkpoint' : 'checkpoints'}`);
  if (t.protectedOffloaded > 0) parts.push(`offloaded ${plural(t.protectedOffloaded, 'protected tool output')} by reference`);
  if (t.shrunkMessages > 0) {
    parts.push(`shrank the latest-messages protection from ${fmt(policyLatest)} to ${fmt(latest)} and dropped ${plural(t.shrunkMessages, 'message')} it no longer covered`);
  }
  if (t.protectedMessages > 0) parts.push(`dropped ${fmt(t.protectedMessages)} oldest protected ${t.protectedMessages === 1 ? 'message' : 'messages'}`);
  if (t.openOffloaded > 0) parts.push(`offloaded the open tool exchange's ${plural(t.openOffloaded, 'output')} by reference`);
  return `Fallback: ${parts.join(', ')} (saved ~${fmt(saved)} tokens) to fit the ${fmt(budget)}-token budget`;
}
