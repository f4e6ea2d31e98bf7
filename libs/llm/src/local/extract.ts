/**
 * Candidate extraction for the local summarizer: messages → units (sentences, lines,
 * commands, file records), which `rank.ts` scores. Role-aware: user instructions weigh more,
 * tool results are mined for errors, paths and outcomes, tool calls and fenced actions become
 * commands paired with their outcome, and every file touched is recorded once with what was
 * done to it.
 */
import type { Block, CanonicalMessage } from '@compactor/compaction';
import { analyze, findPaths, letterRatio } from './signals';
import { type Category, categoryOfHeading } from './structure';
import { isBracketTagLine, markdownHeading, splitClauses, splitSentences } from './line-scan';
import { rankUnits } from './rank';
import { type FileEntry, normForDedupe, type RawUnit, type Source, type Unit } from './unit';

const EDIT_VERB = /^(?:edit|write|create|touch|insert|replace|str_replace\w*|apply_patch|patch|append|delete|remove|rm|mv|cp|rename|move|sed|tee|save|update|modify|mkdir|overwrite)\b/i;
const EDIT_TOOL = /edit|write|create|replace|insert|patch|append|delete|remove|rename|move|save/i;
const SHELL_TOOL = /bash|shell|terminal|exec|run|cmd|command|console|sh$/i;
const SHELL_KEYS = ['command', 'cmd', 'script', 'shell', 'bash', 'code', 'query', 'sql', 'expression'];
const PATH_KEY = /path|file|dir|folder|target|dest|src|source|filename|uri/i;
const SHELL_LANG = /^(?:ba|z|fi)?sh$|^shell$|^console$|^terminal$|^powershell$|^cmd$/i;

/** Files touched in the span: one record per file, however many times and however (suffix-equal paths merge). */
export class FileLedger {
  private readonly byBase = new Map<string, FileEntry[]>();
  private readonly order: FileEntry[] = [];

  touch(rawPath: string, verb: string | null, message: number, pos: number): void {
    const path = rawPath.replace(/^["'`]|["'`,;:]$/g, '').replace(/\/(?:\.\/)+/g, '/');
    if (path.length < 3) return;
    const base = path.slice(path.lastIndexOf('/') + 1).toLowerCase();
    const list = this.byBase.get(base) ?? [];
    let entry = list.find((e) => e.path === path || e.path.endsWith(`/${path.replace(/^\.\//, '')}`) || path.endsWith(`/${e.path.replace(/^\.\//, '')}`));
    if (!entry) {
      entry = { path, verbs: [], messages: new Set(), firstPos: pos, lastPos: pos, edited: false };
      list.push(entry);
      this.byBase.set(base, list);
      this.order.push(entry);
    }
    // The longest spelling names the file most exactly.
    if (path.length > entry.path.length) entry.path = path;
    entry.messages.add(message);
    entry.lastPos = Math.max(entry.lastPos, pos);
    if (verb) {
      const v = verb.toLowerCase();
      if (!entry.verbs.includes(v) && entry.verbs.length < 6) entry.verbs.push(v);
      if (EDIT_VERB.test(v) || EDIT_TOOL.test(v)) entry.edited = true;
    }
  }

  entries(): readonly FileEntry[] {
    return this.order;
  }
}

/** Trailing spaces dropped, blank-line runs folded to one. Line by line: a regex anchored at line ends is quadratic on long runs of spaces. */
export function normalizeWhitespace(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

export function truncateChars(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, Math.max(1, max - 1));
  const space = cut.lastIndexOf(' ');
  return `${space > max * 0.6 ? cut.slice(0, space) : cut}…`;
}

/** Shell prompts, parenthesised status lines and rules carry nothing. */
export function isNoiseLine(line: string): boolean {
  const t = line.trim();
  if (!t) return true;
  if (/^\S{0,40}[$#>%]\s*$/.test(t)) return true;
  if (/^\([^()]*\)$/.test(t) && t.length < 200) return true;
  if (/^[-=_*~#.+|]{3,}$/.test(t)) return true;
  return false;
}

const CODE_LISTING = /^\s*\d+(?:[:|]|\t)/;

const PROSE_PUNCT = new Set([...",.'\"?!"].map((ch) => ch.charCodeAt(0)));
const CODE_PUNCT = new Set([...'=(){}[]<>/\\_|#$@;'].map((ch) => ch.charCodeAt(0)));

/** A line that reads as a sentence: five words or more, mostly letters, next to no code punctuation. */
function isProseLine(line: string): boolean {
  if (line.length < 20 || !/^["'(*[]?[A-Za-z]/.test(line)) return false;
  let words = 1;
  let letters = 0;
  let code = 0;
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    const l = c | 32;
    if (l >= 97 && l <= 122) letters++;
    else if (c === 32) {
      letters++;
      if (line.charCodeAt(i - 1) !== 32) words++;
    } else if (PROSE_PUNCT.has(c)) letters++;
    else if (CODE_PUNCT.has(c)) code++;
  }
  return words >= 5 && letters / line.length > 0.8 && code <= 2;
}

/** Share of lines that read as prose: low for pasted output, listings and tracebacks. */
export function proseRatio(text: string): number {
  const lines = text.split('\n').map((l) => l.trim()).filter(Boolean);
  if (lines.length === 0) return 1;
  let prose = 0;
  for (const l of lines) if (isProseLine(l)) prose++;
  return prose / lines.length;
}

// One regex per kind, each proven linear by recheck (as one alternation the checker timed out).
const CODE_START = [
  /^(?:def|class|import|return|raise|except|try:|elif|else:|finally:|const|let|var|function|public|private|protected|static|fn|func|package|#include|#!)(?:\b|\s|$)/,
  /^from\s+\S+\s+import(?:\b|\s|$)/,
  /^@\w+\(?(?:\b|\s|$)/,
  /^[})\]](?:\b|\s|$)/,
];

/** A line of code (or a numbered listing line) quoted in prose: mined for paths and errors, ranked low. */
export function looksLikeCode(line: string): boolean {
  if (CODE_LISTING.test(line) || CODE_START.some((re) => re.test(line))) return true;
  if (/[;{]\s*$/.test(line) || /^\s*(?:if|for|while|with)\b.*:\s*$/.test(line)) return true;
  const codeChars = (line.match(/[=(){}[\];<>]/g) ?? []).length;
  return codeChars >= 3 && !isProseLine(line);
}

const BULLET = /^(?:[-*•+]|\d{1,3}[.)])\s+/;
/** A whole line in brackets that starts with a lower-case label: a compaction step's note in place of an output. */
const EDITORIAL_NOTE = /^\[[a-z][a-z ]{2,40}:[^\]\n]*\]$/;

function blockTexts(content: Extract<Block, { type: 'tool_result' }>['content']): string {
  if (typeof content === 'string') return content;
  return content.map((p) => (p.type === 'text' ? p.text : '')).filter(Boolean).join('\n');
}

function firstWord(text: string): string {
  return (text.trim().match(/^[^\s]+/)?.[0] ?? '').replace(/^\$/, '');
}

function oneLine(text: string): string {
  return /\s{2}|[\t\n\r\f\v]|^\s|\s$/.test(text) ? text.replace(/\s+/g, ' ').trim() : text;
}

export interface ExtractOptions {
  kind: 'checkpoint' | 'chunk' | 'merge';
  goal?: string;
  /** Longest unit, in characters. */
  maxUnitChars: number;
  /** Called between messages; throws to abort. */
  checkAbort?: () => void;
}

/** Turns a span into scored, deduplicated candidates; superseded facts are dropped (latest value wins). */
export class Extractor {
  private readonly raw: RawUnit[] = [];
  private readonly files = new FileLedger();
  private pos = 0;
  private message = 0;
  private requestSeen = false;
  /** Output lines seen so far (digits folded), to spot what is new in a repeated output. */
  private readonly seenOutput = new Set<string>();

  constructor(private readonly options: ExtractOptions) {}

  run(messages: CanonicalMessage[]): Unit[] {
    const toolUses = new Map<string, RawUnit>();
    let pendingAction: RawUnit | null = null;
    let previousAssistantActed = false;
    messages.forEach((m, index) => {
      this.options.checkAbort?.();
      this.message = index;
      if (this.options.kind === 'merge' || m.tags?.includes('checkpoint')) {
        for (const b of m.blocks) if (b.type === 'text') this.summaryText(b.text);
        return;
      }
      let acted = false;
      for (const block of m.blocks) {
        switch (block.type) {
          case 'text': {
            if (m.role === 'user') {
              const asOutput = m.tags?.includes('observation') || (previousAssistantActed && proseRatio(block.text) < 0.5);
              if (asOutput) this.output(block.text, pendingAction, false);
              else this.userText(block.text);
            } else if (m.role === 'tool') this.output(block.text, null, false);
            else {
              const action = this.prose(block.text, m.role === 'system' ? 'system' : 'assistant', 1, 0);
              if (action) {
                pendingAction = action;
                acted = true;
              }
            }
            break;
          }
          case 'thinking':
            this.prose(block.thinking, 'assistant', 0.6, 0);
            break;
          case 'tool_use': {
            const unit = this.toolUse(block.name, block.input);
            toolUses.set(block.id, unit);
            acted = true;
            break;
          }
          case 'tool_result':
            this.output(blockTexts(block.content), toolUses.get(block.toolUseId) ?? null, block.isError);
            break;
          default:
            break;
        }
      }
      if (m.role === 'assistant') previousAssistantActed = acted;
      else if (m.role === 'user') {
        previousAssistantActed = false;
        pendingAction = null;
      }
    });
    return this.finish();
  }

  private push(unit: Omit<RawUnit, 'pos' | 'message'>): RawUnit {
    const u = unit as RawUnit;
    u.text = truncateChars(oneLine(unit.text), this.options.maxUnitChars);
    u.pos = this.pos++;
    u.message = this.message;
    if (u.text.length > 0) this.raw.push(u);
    return u;
  }

  private notePaths(text: string, verb: string | null): string[] {
    // A minified blob of a line names its files near the start if anywhere useful.
    const paths = findPaths(text.length > 4_000 ? text.slice(0, 4_000) : text);
    for (const p of paths) this.files.touch(p, verb, this.message, this.pos);
    return paths;
  }

  /** A human turn: instructions and constraints weigh more; the first one states the request. */
  private userText(text: string): void {
    const isRequest = !this.requestSeen && text.length <= 8_000;
    if (isRequest) this.requestSeen = true;
    // A long pasted document weighs less per sentence than a short instruction.
    const weight = Math.min(1, Math.max(0.35, 2_000 / Math.max(1, text.length)));
    this.prose(text, 'user', weight, isRequest ? 1.5 : 0);
  }

  /**
   * Prose with optional fenced blocks. A fence that ends an assistant message (or a shell-tagged
   * fence) is the agent's action: returned as a command unit so the next turn's output can be paired with it.
   */
  private prose(text: string, source: Source, weight: number, requestBonus: number): RawUnit | null {
    const lines = text.replace(/\r\n?/g, '\n').split('\n');
    type Segment = { fence: boolean; lang: string; lines: string[] };
    const segments: Segment[] = [];
    let current: Segment = { fence: false, lang: '', lines: [] };
    for (const line of lines) {
      const fence = /^\s*(```|~~~)\s*([\w+-]*)/.exec(line);
      if (fence) {
        segments.push(current);
        current = current.fence ? { fence: false, lang: '', lines: [] } : { fence: true, lang: fence[2] ?? '', lines: [] };
        continue;
      }
      current.lines.push(line);
    }
    segments.push(current);
    const meaningful = segments.filter((s) => s.lines.some((l) => l.trim()));
    const last = meaningful[meaningful.length - 1];

    let action: RawUnit | null = null;
    for (const seg of meaningful) {
      if (seg.fence) {
        const nonblank = seg.lines.filter((l) => l.trim());
        if (source === 'assistant' && (seg === last || SHELL_LANG.test(seg.lang))) {
          const commands = seg === last || nonblank.length === 1 ? [nonblank[0]] : nonblank.slice(0, 8);
          for (const c of commands) {
            // An edit's body is the change itself (as for an edit tool's new text): its start is shown; other commands' continuation lines are elided.
            const body = nonblank.slice(1).filter((l) => !/^end_of_\w+$|^EOF$/.test(l.trim()));
            const extra = seg === last && nonblank.length > 1 ? (EDIT_VERB.test(firstWord(c)) && body.length > 0 ? ` … ${truncateChars(body.map((l) => l.trim()).join('; '), 120)}` : ' …') : '';
            action = this.command(c.trim(), extra);
          }
        } else {
          for (const l of nonblank.slice(0, 400)) {
            this.notePaths(l, null);
            // The request's own code (a reproduction, the failing call) states the problem in its identifiers.
            this.push({ text: l.trim(), source, form: 'code', weight, bonus: requestBonus, request: requestBonus > 0 });
          }
        }
        continue;
      }
      for (const rawLine of seg.lines) {
        let line = rawLine.trim();
        if (isNoiseLine(line)) continue;
        if (/^#{1,6}\s/.test(line) || /^\*\*[^*]{1,80}\*\*:?$/.test(line) || (/^[A-Z][\w /&-]{0,40}:$/.test(line) && line.split(/\s+/).length <= 5)) continue;
        line = line.replace(BULLET, '');
        if (/^\$\s+\S/.test(line) && source !== 'tool') {
          this.command(line.replace(/^\$\s+/, ''), '');
          continue;
        }
        this.notePaths(line, null);
        if (looksLikeCode(line)) {
          this.push({ text: line, source, form: 'code', weight, bonus: requestBonus, request: requestBonus > 0 });
          continue;
        }
        const pieces = line.length > 80 ? splitSentences(line) : [line];
        for (const piece of pieces) {
          if (piece.trim().length < 3) continue;
          this.push({ text: piece, source, form: 'prose', weight, bonus: requestBonus, request: requestBonus > 0 });
        }
      }
    }
    return action;
  }

  private command(line: string, suffix: string): RawUnit {
    const verb = firstWord(line);
    const paths = this.notePaths(line, verb);
    const editLike = EDIT_VERB.test(verb);
    return this.push({ text: `$ ${line}${suffix}`, source: 'assistant', form: 'command', weight: 1, bonus: 0, verb, ownPaths: paths, editLike });
  }

  private toolUse(name: string, input: unknown): RawUnit {
    const args = input !== null && typeof input === 'object' && !Array.isArray(input) ? (input as Record<string, unknown>) : {};
    let shell: string | undefined = typeof input === 'string' ? input : undefined;
    // A command line, not a sub-command name: an editor tool's `command: "str_replace"` is rendered with its arguments.
    for (const k of SHELL_KEYS) {
      const v = args[k];
      if (!shell && typeof v === 'string' && v.trim() && (SHELL_TOOL.test(name) || /\s/.test(v.trim()))) shell = v;
    }
    const paths: string[] = [];
    for (const [k, v] of Object.entries(args)) if (PATH_KEY.test(k) && typeof v === 'string' && v.trim()) paths.push(v.trim());
    const editLike = EDIT_TOOL.test(name);
    let text: string;
    let verb = name;
    if (shell !== undefined) {
      const lines = shell.trim().split('\n');
      const head = lines[0].trim();
      text = `${SHELL_TOOL.test(name) ? '$' : `${name}:`} ${head}${lines.length > 1 ? ' …' : ''}`;
      if (SHELL_TOOL.test(name)) verb = firstWord(head) || name;
      paths.push(...findPaths(head));
    } else {
      const parts: string[] = [name];
      for (const [k, v] of Object.entries(args)) {
        if (typeof v === 'string') {
          const single = oneLine(v);
          if (PATH_KEY.test(k) && single.length <= 200) parts.push(single);
          // An edit's new text is the change itself: show more of it.
          else parts.push(`${k}=${single.length > 48 || v.includes('\n') ? `"${truncateChars(single, editLike ? 100 : 40)}"` : single}`);
        } else if (typeof v === 'number' || typeof v === 'boolean') parts.push(`${k}=${String(v)}`);
      }
      text = parts.join(' ');
    }
    const unique = [...new Set(paths)];
    for (const p of unique) this.files.touch(p, verb, this.message, this.pos);
    return this.push({ text, source: 'assistant', form: 'command', weight: 1, bonus: 0, verb, ownPaths: unique, editLike });
  }

  /** Tool output (or user-turn output): mined line by line; the command it answers gets its outcome. */
  private output(text: string, command: RawUnit | null, isError: boolean): void {
    const lines = text.replace(/\r\n?/g, '\n').split('\n');
    const meaningful: string[] = [];
    let editorial = false;
    for (const l of lines) {
      if (l.length > 0) this.notePaths(l, null);
      // A compaction step's own note about the output ("[masked tool output: …]") is not the output.
      if (EDITORIAL_NOTE.test(l.trim())) {
        editorial = true;
        continue;
      }
      // Bare labels ("ERRORS:") introduce what follows and say nothing alone.
      if (!isNoiseLine(l) && !/^[A-Za-z][\w -]{0,30}:$/.test(l.trim())) meaningful.push(l.trim().replace(BULLET, ''));
    }
    // What changed since earlier outputs: when most of an output was seen before, its new lines are the news.
    const keys = meaningful.map((l) => l.toLowerCase().replace(/\d+/g, '#').replace(/\s+/g, ' '));
    const fresh = keys.map((k) => !this.seenOutput.has(k));
    const freshCount = fresh.filter(Boolean).length;
    const mostlySeen = meaningful.length >= 4 && freshCount > 0 && freshCount <= Math.max(3, meaningful.length * 0.2);
    for (const k of keys) this.seenOutput.add(k);

    if (command) {
      if (command.editLike && command.ownPaths && command.ownPaths.length === 0 && command.verb) {
        // An edit naming no file acted on the one its output names first.
        const named = meaningful.slice(0, 4).flatMap((l) => findPaths(l))[0];
        if (named) this.files.touch(named, command.verb, this.message, this.pos);
      }
      const news = mostlySeen ? meaningful.filter((_, i) => fresh[i] && !looksLikeCode(meaningful[i])) : [];
      const revealed = news.length > 0 && news.length <= 3;
      const outcome = revealed
        ? truncateChars(news.join(' / '), 160)
        : editorial && meaningful.length === 0
          ? 'output not kept'
          : outcomeOf(meaningful, isError);
      // A repeated probe whose output finally changed found something.
      if (revealed) command.bonus += 2;
      const base = command.text;
      // An edit's echo of the file says nothing new; only its failure does.
      const failed = isError || meaningful.some(isErrorLine);
      const key = `cmd:${normForDedupe(base)}`;
      if (!command.editLike || failed) {
        command.blind = !revealed && !failed && /^(?:output not kept|no output|\d+-line output)$/.test(outcome);
        command.text = truncateChars(`${base} → ${outcome}`, this.options.maxUnitChars);
        command.facts = [{ key, value: normForDedupe(outcome) }];
      } else command.facts = [{ key, value: 'ok' }];
    }
    const n = meaningful.length;
    meaningful.forEach((l, i) => {
      const edge = i < 2 ? 0.8 - i * 0.3 : i >= n - 2 ? 0.5 : 0;
      const novelty = mostlySeen && fresh[i] ? 2.5 : 0;
      const pieces = l.length > 400 ? splitClauses(l).slice(0, 20) : [l];
      for (const p of pieces) {
        if (p.trim().length < 2) continue;
        this.push({ text: p, source: 'tool', form: looksLikeCode(p) ? 'code' : 'line', weight: 1, bonus: edge + novelty + (isError && i === 0 ? 3 : isError ? 0.5 : 0) });
      }
    });
  }

  /** An earlier summary (merge): headings give each item its category; bracket tags are dropped. */
  private summaryText(text: string): void {
    let hint: Category | undefined;
    for (const rawLine of text.replace(/\r\n?/g, '\n').split('\n')) {
      let line = rawLine.trim();
      if (!line || isBracketTagLine(line)) continue;
      line = line.replace(/^\[SUMMARY\]:?\s*/, '');
      if (!line) continue;
      const heading = markdownHeading(line)?.title ?? /^\*\*([^*]{1,60})\*\*:?$/.exec(line)?.[1] ?? /^([A-Z][\w /&-]{0,40}):$/.exec(line)?.[1];
      if (heading !== undefined) {
        hint = categoryOfHeading(heading) ?? undefined;
        continue;
      }
      line = line.replace(BULLET, '');
      if (/^\(none\)$/i.test(line)) continue;
      // A file record ("path (verbs)") merges with the same file's records from the other summaries.
      const record = /^(\S+)(?: \(([^()]*)\))?$/.exec(line);
      if (record && findPaths(record[1]).length > 0 && (hint === 'file' || record[2] !== undefined)) {
        const verbs = record[2] ? record[2].split(/,\s*/) : [];
        if (verbs.length === 0) this.files.touch(record[1], null, this.message, this.pos);
        for (const v of verbs) this.files.touch(record[1], v, this.message, this.pos);
        this.pos++;
        continue;
      }
      this.notePaths(line, null);
      const pieces = line.length > this.options.maxUnitChars ? splitSentences(line) : [line];
      for (const p of pieces) if (p.trim().length >= 3) this.push({ text: p, source: 'summary', form: 'prose', weight: 1, bonus: 0, hint });
    }
  }

  private finish(): Unit[] {
    // Duplicates (a listing shown twice, a repeated status line) fold into their latest occurrence before scoring.
    const byNorm = new Map<string, RawUnit>();
    for (const r of this.raw) {
      const norm = normForDedupe(r.text);
      if (!norm) continue;
      r.norm = norm;
      const prev = byNorm.get(norm);
      if (prev) {
        // A request sentence that an earlier message already said is boilerplate (a template's standing instructions), not what this request asks.
        if (r.request && prev.message !== r.message) {
          r.request = false;
          r.bonus = prev.bonus;
        }
        r.bonus = Math.max(r.bonus, prev.bonus);
        r.weight = Math.max(r.weight, prev.weight);
        r.messages = [...(prev.messages ?? [prev.message]), r.message];
        byNorm.delete(norm);
      }
      byNorm.set(norm, r);
    }
    const unique = [...byNorm.values()];
    return rankUnits({ raw: this.raw, unique, files: this.files.entries(), goal: this.options.goal, positions: this.pos, merge: this.options.kind === 'merge' });
  }
}

/** Cheap guards before the full analysis: most output lines hold neither. */
const MAY_BE_ERROR = /Error|Exception|Fault|Traceback|FAIL|ERR|FATAL|PANIC|CRITICAL|[Ee]rror|[Ff]atal|[Pp]anic|exit|not found|denied|fault|dumped|E\d{3}/;
const MAY_BE_TEST_SUMMARY = /\d\s+[a-z]|^\s*(?:OK|FAILED|PASSED|FAIL|PASS)\b|Ran \d|[Tt]ests?:|tests? (?:pass|fail|succeed)/;

function isErrorLine(line: string): boolean {
  return MAY_BE_ERROR.test(line) && !looksLikeCode(line) && analyze(line).errorStrong > 0;
}

/** The outcome of a command, in a line: its short output, its error, its test summary, or its size. */
export function outcomeOf(lines: string[], isError: boolean): string {
  if (lines.length === 0) return isError ? 'error (no output)' : 'no output';
  const total = lines.reduce((n, l) => n + l.length, 0);
  if (lines.length <= 2 && total <= 160) return `${isError ? 'error: ' : ''}${lines.join(' / ')}`;
  let errorLine: string | undefined;
  let testLine: string | undefined;
  for (const l of lines) {
    if (isErrorLine(l)) errorLine = l;
    if (MAY_BE_TEST_SUMMARY.test(l) && analyze(l).testSummary > 0) testLine = l;
  }
  // A traceback ends with the exception; a test run ends with its summary.
  if (errorLine) return truncateChars(errorLine, 160);
  if (testLine) return truncateChars(testLine, 160);
  // Otherwise the last short line that reads as text (outputs end with their result more often
  // than they start with it), or just the size: a listing or a page says nothing in one line.
  for (let i = lines.length - 1; i >= Math.max(0, lines.length - 5); i--) {
    const l = lines[i];
    if (l.length <= 80 && !looksLikeCode(l) && !/[<>{}]/.test(l) && l.split(/\s+/).length >= 2 && letterRatio(l) >= 0.6) return `… ${oneLine(l)} (${lines.length}-line output)`;
  }
  // Hyphenated so the size does not read as a measured value.
  return `${lines.length}-line output`;
}
