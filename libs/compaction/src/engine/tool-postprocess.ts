import { Block, CanonicalMessage, ToolResultBlock } from '../messages/canonical';
import { IngestResult, IngestStep } from './preset';
import { CountMessage } from './types';
import { isWhitespace, replaceMarkdownLinks, replaceScriptAndStyle, replaceTags, splitCapitalRuns } from './text-scan';

/**
 * Seed 000's selective tool post-processing ("compress token-heavy tool outputs immediately
 * after retrieval; preserve small, structured results"), as a deterministic ingest step: no
 * LLM, no clock, same input → same output (Guarantee 8). Only the `content` of a tool_result
 * block changes; its `toolUseId` and `isError` stay, so every tool pair is intact (Guarantee 2).
 */

export type ToolKind = 'web-search' | 'file-read' | 'database' | 'api';

export interface ToolPostprocessParams {
  /**
   * Tool names per kind. A pattern matches a tool name whose words contain the pattern's words,
   * adjacent and in order (words split on `_ - . / :`, spaces and camelCase, compared lower-case):
   * `read_file` matches `read_file`, `mcp__fs__read_file` and `readFile`. Kinds are tried in the
   * order web search, database, API, file read.
   */
  toolNames: { webSearch: string[]; database: string[]; api: string[]; fileRead: string[] };
  /** When the name says nothing, recognize the kind from the content's shape (JSON search hits, rows, HTTP status, numbered file lines). */
  detectByShape: boolean;
  /** Seed 000 "Small results: already compact, <200 tokens": kept as-is. */
  keepBelowTokens: number;
  /** Seed 000 "Structured data: need for validation, JSON/YAML <500 tokens": kept as-is. */
  keepStructuredBelowTokens: number;
  /** Seed 000 "File reads: if >500 lines: summary + line ranges". */
  fileReadMaxLines: number;
  fileHeadLines: number;
  fileTailLines: number;
  /** At most this many definitions in a file's outline (the least indented first). */
  fileOutlineMax: number;
  /** Seed 000 "Database queries: keep row count + sample rows; discard full result set if >100 rows". */
  databaseMaxRows: number;
  databaseSampleRows: number;
  /** Seed 000 "Web search results: keep title + snippet + URL only". */
  webSnippetChars: number;
  /** Seed 000 "API responses: keep status + key fields; discard verbose metadata". Fields listed first when present. */
  apiKeyFields: string[];
  /** Verbose metadata fields left out (at any depth, compared lower-case). */
  apiDropFields: string[];
  apiMaxFields: number;
  apiMaxValueChars: number;
}

export const TOOL_POSTPROCESS_DEFAULTS: ToolPostprocessParams = {
  toolNames: {
    webSearch: ['web_search', 'websearch', 'search_web', 'internet_search', 'google', 'bing', 'brave', 'tavily', 'serp', 'serpapi', 'duckduckgo', 'exa', 'perplexity'],
    database: ['database', 'db', 'sql', 'query', 'postgres', 'postgresql', 'mysql', 'sqlite', 'bigquery', 'snowflake', 'mongo', 'mongodb', 'redshift', 'clickhouse'],
    api: ['api', 'http', 'fetch', 'request', 'rest', 'graphql', 'curl', 'webhook'],
    fileRead: ['read', 'read_file', 'file_read', 'readfile', 'view_file', 'open_file', 'open', 'cat', 'view', 'str_replace_editor', 'get_file_contents'],
  },
  detectByShape: true,
  keepBelowTokens: 200,
  keepStructuredBelowTokens: 500,
  fileReadMaxLines: 500,
  fileHeadLines: 30,
  fileTailLines: 10,
  fileOutlineMax: 80,
  databaseMaxRows: 100,
  databaseSampleRows: 5,
  webSnippetChars: 300,
  apiKeyFields: ['status', 'statusCode', 'status_code', 'code', 'error', 'message', 'id', 'name', 'title', 'type', 'result', 'data', 'total', 'count'],
  apiDropFields: ['headers', 'metadata', 'meta', '_links', 'links', '_meta', 'debug', 'trace', 'stack', 'request', 'config', 'request_id', 'requestid', 'x-request-id', 'timing', 'timings', 'server', '_embedded'],
  apiMaxFields: 40,
  apiMaxValueChars: 200,
};

const MARKER = /^\[(web search results|file read|database result|api response):/;
const fmt = (n: number) => n.toLocaleString('en-US');

// ---------------------------------------------------------------------------------------------
// Recognizing the tool kind

/** The words of a tool name or pattern: `mcp__fs__readFile` → `mcp fs read file`. */
export function nameWords(name: string): string[] {
  return splitCapitalRuns(name.replace(/([a-z0-9])([A-Z])/g, '$1 $2'))
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 0);
}

function matchesPattern(words: string[], pattern: string): boolean {
  const p = nameWords(pattern);
  if (p.length === 0) return false;
  for (let i = 0; i + p.length <= words.length; i += 1) if (p.every((w, k) => words[i + k] === w)) return true;
  return false;
}

/** The kind a tool name names, or undefined. */
export function toolKindOfName(name: string, params: ToolPostprocessParams): ToolKind | undefined {
  const words = nameWords(name);
  const order: Array<[ToolKind, string[]]> = [
    ['web-search', params.toolNames.webSearch],
    ['database', params.toolNames.database],
    ['api', params.toolNames.api],
    ['file-read', params.toolNames.fileRead],
  ];
  for (const [kind, patterns] of order) if (patterns.some((p) => matchesPattern(words, p))) return kind;
  return undefined;
}

function parseJson(text: string): unknown {
  const t = text.trim();
  if (!(t.startsWith('{') || t.startsWith('['))) return undefined;
  try {
    return JSON.parse(t) as unknown;
  } catch {
    return undefined;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const pick = (o: Record<string, unknown>, keys: string[]): unknown => {
  for (const k of keys) if (o[k] !== undefined && o[k] !== null && o[k] !== '') return o[k];
  return undefined;
};

/** JSON, or YAML by its look (a document marker, or key/list lines throughout). */
export function isStructured(text: string): boolean {
  if (parseJson(text) !== undefined) return true;
  const lines = text.split('\n').filter((l) => l.trim() !== '' && !l.trim().startsWith('#'));
  if (lines.length < 2) return false;
  const yamlish = lines.filter((l) => /^\s*(- )?[\w"'.-]+:(\s|$)/.test(l) || /^\s*- \S/.test(l) || /^\s+\S/.test(l) || l.trim() === '---').length;
  return /^(---|[\w"'.-]+:(\s|$))/.test(lines[0]) && yamlish === lines.length;
}

// ---------------------------------------------------------------------------------------------
// Web search → title + snippet + URL per result

const URL_RE = /https?:\/\/[^\s<>"'`)\]]+/;
const stripHtml = (s: string) =>
  replaceTags(replaceScriptAndStyle(s, ' '), ' ')
    .replace(/&nbsp;/g, ' ')
    .replace(/&amp;/g, '&')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'");
const collapse = (s: string) => s.replace(/\s+/g, ' ').trim();
const clip = (s: string, n: number) => (s.length <= n ? s : `${s.slice(0, Math.max(0, n - 1)).trimEnd()}…`);

interface SearchHit {
  title: string;
  url: string;
  snippet: string;
}

/** The first array of objects, breadth first, where most items carry a URL. */
function findHits(value: unknown): Array<Record<string, unknown>> | undefined {
  const queue: unknown[] = [value];
  for (let steps = 0; queue.length > 0 && steps < 200; steps += 1) {
    const v = queue.shift();
    if (Array.isArray(v)) {
      const objs = v.filter(isObject);
      if (objs.length > 0 && objs.filter((o) => typeof pick(o, ['url', 'link', 'href', 'uri']) === 'string').length * 2 >= objs.length) return objs;
      queue.push(...v.filter((x) => typeof x === 'object' && x !== null));
    } else if (isObject(v)) queue.push(...Object.values(v).filter((x) => typeof x === 'object' && x !== null));
  }
  return undefined;
}

function hitsFromJson(value: unknown): SearchHit[] | undefined {
  const objs = findHits(value);
  if (!objs) return undefined;
  return objs.map((o) => ({
    title: collapse(stripHtml(String(pick(o, ['title', 'name', 'heading']) ?? ''))),
    url: String(pick(o, ['url', 'link', 'href', 'uri']) ?? ''),
    snippet: collapse(stripHtml(String(pick(o, ['snippet', 'description', 'summary', 'abstract', 'content', 'text', 'body']) ?? ''))),
  }));
}

const ITEM_START = /^\s*(\d+[.)]\s|#{1,6}\s|[-*•]\s|title:)/i;
const LABEL = /^\s*(\d+[.)]|#{1,6}|[-*•]|title:|url:|link:|source:|snippet:|description:|content:|summary:)\s*/i;

function hitsFromText(text: string): SearchHit[] {
  const groups: string[][] = [];
  let current: string[] = [];
  for (const raw of stripHtml(text).split('\n')) {
    const line = raw.trim();
    if (line === '' || (ITEM_START.test(line) && current.some((l) => URL_RE.test(l)))) {
      if (current.length) groups.push(current);
      current = line === '' ? [] : [line];
    } else current.push(line);
  }
  if (current.length) groups.push(current);
  const hits: SearchHit[] = [];
  for (const g of groups) {
    const urlLine = g.find((l) => URL_RE.test(l));
    if (!urlLine) continue;
    const url = (URL_RE.exec(urlLine) as RegExpExecArray)[0];
    const cleaned = g.map((l) => collapse(replaceMarkdownLinks(l.replace(LABEL, '')).replace(URL_RE, '')));
    const titleIndex = cleaned.findIndex((l) => l.length > 0);
    const title = titleIndex >= 0 ? cleaned[titleIndex] : '';
    const snippet = cleaned.filter((l, i) => i !== titleIndex && l.length > 0).join(' ');
    hits.push({ title, url, snippet });
  }
  return hits;
}

/** Seed 000: web search results → title + snippet + URL per result (full HTML and page bodies discarded). */
export function condenseWebSearch(text: string, params: ToolPostprocessParams): string | undefined {
  const json = parseJson(text);
  const hits = (json !== undefined ? hitsFromJson(json) : undefined) ?? (json === undefined ? hitsFromText(text) : []);
  if (hits.length === 0) return undefined;
  const lines = [`[web search results: ${hits.length} result${hits.length === 1 ? '' : 's'}; title, snippet and URL kept]`];
  hits.forEach((h, i) => {
    lines.push(`${i + 1}. ${clip(h.title || '(untitled)', 200)}`, `   ${h.url}`);
    if (h.snippet) lines.push(`   ${clip(h.snippet, params.webSnippetChars)}`);
  });
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------
// File read over 500 lines → summary + line ranges

const NUMBERED = /^\s*(\d+)(?:\t|:| \| | │ |→)/;

const MEMBER_MODIFIER = /^\s*(?:public|private|protected|internal|static|final|abstract|sealed|partial)\s+/;
const isSpaceChar = (ch: string) => /\s/.test(ch);
const isWordChar = (ch: string) => /\w/.test(ch);
/** `[\w<>[\],\s]`: what a Java/C# return type and further modifiers are made of. */
const isTypeChar = (ch: string) => isWordChar(ch) || isSpaceChar(ch) || '<>[],'.includes(ch);

/**
 * A Java/C# member with modifiers, `public static <T> List<T> of(`: what
 * `/^\s*(?:(?:MOD)\s+)+(?:[\w<>[\],\s]+\s+)?\w+\s*\(/` matched (polynomial backtracking on a long
 * line of words), decided by a scan: no type character is `(`, so only the first `(` can end it.
 */
export function isModifiedMember(line: string): boolean {
  const modifier = MEMBER_MODIFIER.exec(line);
  if (!modifier) return false;
  const rest = line.slice(modifier[0].length);
  const open = rest.indexOf('(');
  if (open < 0) return false;
  for (let i = 0; i < open; i++) if (!isTypeChar(rest[i])) return false;
  let end = open;
  while (end > 0 && isSpaceChar(rest[end - 1])) end -= 1;
  let start = end;
  while (start > 0 && isWordChar(rest[start - 1])) start -= 1;
  if (start === end) return false;
  // Either the name follows the modifiers, or a type (at least one character) and whitespace come first.
  return start === 0 || (start >= 2 && isSpaceChar(rest[start - 1]));
}

const NOT_METHODS = new Set(['if', 'for', 'while', 'switch', 'catch', 'with', 'return', 'else', 'do', 'try', 'new', 'await', 'throw', 'typeof']);
const CLASS_BODY_METHOD = /^\s+(?:(?:public|private|protected|static|async|readonly|override|get|set)\s+)*[\w$]+\s*(?:<[^>]*>)?\([^)]*\)\s*(?::[^={;]+)?\{\s*$/;
const LEADING_WORD = /^\s+(\w+)/;

/**
 * Methods in a class body (TypeScript, JavaScript, Java, C#): an indented name with parameters
 * opening a block, not a statement (`if (…) {`). The statement keywords were a lookahead, which
 * the linear-time checker cannot decide: the line's first word is compared instead (`(?!(?:if|…)\b)`
 * after the indent is exactly "the leading word run is not one of them").
 */
export function isClassBodyMethod(line: string): boolean {
  const word = LEADING_WORD.exec(line)?.[1];
  return (word === undefined || !NOT_METHODS.has(word)) && CLASS_BODY_METHOD.test(line);
}

const DEFINITION: ((line: string) => boolean)[] = [
  /^\s*(?:export\s+(?:default\s+)?)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?:function\*?|class|interface|type|enum|namespace|module)\s+[\w$]+/,
  /^\s*(?:export\s+)?(?:const|let|var)\s+[\w$]+\s*=\s*(?:async\s+)?(?:\([^)]*\)|[\w$]+)\s*(?::[^=]+)?=>/,
  /^\s*(?:async\s+)?def\s+\w+|^\s*class\s+\w+/,
  /^\s*(?:pub(?:\([\w:]+\))?\s+)?(?:async\s+)?(?:fn|struct|enum|trait|impl|mod)\b/,
  /^func\s|^type\s+\w+\s+(?:struct|interface)\b/,
  isModifiedMember,
  /^\s*(?:(?:public|private|protected|internal|static|final|abstract|sealed)\s+)*(?:class|interface|enum|record|struct)\s+\w+/,
  isClassBodyMethod,
  /^#{1,6}\s+\S/,
].map((d) => (d instanceof RegExp ? (line: string) => d.test(line) : d));

interface OutlineEntry {
  start: number;
  end: number;
  indent: number;
  label: string;
}

function outlineOf(lines: Array<{ n: number; code: string }>, max: number): { entries: OutlineEntry[]; total: number } {
  const defs: Array<{ index: number; indent: number; label: string; heading: number }> = [];
  lines.forEach((l, index) => {
    if (!DEFINITION.some((isDefinition) => isDefinition(l.code))) return;
    const heading = /^(#{1,6})\s/.exec(l.code)?.[1].length ?? 0;
    defs.push({ index, indent: heading > 0 ? heading - 1 : (/^\s*/.exec(l.code) as RegExpExecArray)[0].replace(/\t/g, '    ').length, label: clip(l.code.trim(), 100), heading });
  });
  const indentOf = (code: string) => (/^\s*/.exec(code) as RegExpExecArray)[0].replace(/\t/g, '    ').length;
  const entries = defs.map((d, k) => {
    let endIndex = lines.length - 1;
    if (d.heading > 0) {
      // A markdown section runs to the next heading of the same or a higher level.
      const next = defs.slice(k + 1).find((e) => e.heading > 0 && e.heading <= d.heading);
      if (next) endIndex = next.index - 1;
    } else {
      // A code definition runs while lines are indented deeper; a closer at its own indentation ends it.
      for (let i = d.index + 1; i < lines.length; i += 1) {
        const code = lines[i].code;
        if (code.trim() === '') continue;
        const indent = indentOf(code);
        if (indent > d.indent) continue;
        const t = code.trim();
        if (indent === d.indent && /^[)\]]/.test(t) && /[{:]$/.test(t)) continue;
        endIndex = indent === d.indent && /^([}\])]|end\b)/.test(t) ? i : i - 1;
        break;
      }
    }
    // Trailing blank lines belong to no definition.
    while (endIndex > d.index && lines[endIndex].code.trim() === '') endIndex -= 1;
    return { start: lines[d.index].n, end: lines[endIndex].n, indent: d.indent, label: d.label };
  });
  if (entries.length <= max) return { entries, total: entries.length };
  const kept = new Set([...entries].sort((a, b) => a.indent - b.indent || a.start - b.start).slice(0, max));
  return { entries: entries.filter((e) => kept.has(e)), total: entries.length };
}

/** Seed 000: a file read over 500 lines → a summary (path, size, outline of definitions with their line ranges) plus its first and last lines. */
export function outlineFileRead(text: string, params: ToolPostprocessParams, seq?: number): string | undefined {
  const raw = text.split('\n');
  if (raw.length <= params.fileReadMaxLines) return undefined;
  const numbered = raw.filter((l) => NUMBERED.test(l)).length >= 0.8 * raw.length;
  const lines = raw.map((l, i) => {
    const m = numbered ? NUMBERED.exec(l) : null;
    return m ? { n: Number(m[1]), code: l.slice(m[0].length), raw: l } : { n: i + 1, code: l, raw: l };
  });
  const head = raw.slice(0, 3).join('\n');
  const path = /\[File: ([^\s\]]+)/.exec(head)?.[1] ?? /running `cat -n` on (\S+?):?$/m.exec(head)?.[1] ?? /^(?:File|Path):\s*(\S+)/im.exec(head)?.[1];
  const { entries: outline, total } = outlineOf(lines, params.fileOutlineMax);
  const show = (l: { n: number; raw: string }) => (numbered ? l.raw : `${l.n}: ${l.raw}`);
  const headLines = lines.slice(0, params.fileHeadLines);
  const tailLines = lines.slice(Math.max(params.fileHeadLines, lines.length - params.fileTailLines));
  const out = [`[file read: ${path ? `${path}, ` : ''}${fmt(raw.length)} lines (${fmt(text.length)} chars); summary with line ranges, the full content is in the session history${seq !== undefined ? ` at seq ${seq}` : ''}]`];
  if (outline.length > 0) {
    const shown = outline.length < total ? `${outline.length} of ${total} definitions, least indented first` : `${total} definition${total === 1 ? '' : 's'}`;
    out.push(`Outline (${shown}; line ranges):`);
    for (const e of outline) out.push(`  ${e.start}–${e.end}: ${' '.repeat(Math.min(e.indent, 12))}${e.label}`);
  } else out.push('Outline: no definitions recognized.');
  if (headLines.length > 0) out.push(`Lines ${headLines[0].n}–${headLines[headLines.length - 1].n}:`, ...headLines.map(show));
  const omittedFrom = headLines.length;
  const omittedTo = lines.length - tailLines.length - 1;
  if (omittedTo >= omittedFrom) out.push(`… lines ${lines[omittedFrom].n}–${lines[omittedTo].n} omitted …`);
  if (tailLines.length > 0) out.push(`Lines ${tailLines[0].n}–${tailLines[tailLines.length - 1].n}:`, ...tailLines.map(show));
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------------
// Database result over 100 rows → row count + sample rows

function rowsFromJson(value: unknown): { rows: unknown[]; stated?: number } | undefined {
  const isRowArray = (v: unknown): v is unknown[] => Array.isArray(v) && v.length > 0 && v.every((r) => isObject(r) || Array.isArray(r));
  if (isRowArray(value)) return { rows: value };
  if (!isObject(value)) return undefined;
  for (const key of ['rows', 'data', 'results', 'records', 'items', 'values', 'hits', 'documents', 'result']) {
    const v = value[key];
    if (isRowArray(v)) {
      const stated = pick(value, ['rowCount', 'row_count', 'rowcount', 'count', 'total', 'totalRows', 'total_rows']);
      return { rows: v, ...(typeof stated === 'number' ? { stated } : {}) };
    }
    if (isObject(v)) {
      const inner = rowsFromJson(v);
      if (inner) return inner;
    }
  }
  return undefined;
}

/** `/^[\s|+:=-]*-{3,}[\s|+:=-]*$/` (cubic on a long line of dashes) as a scan: table-rule characters only, with a `---`. */
/** A table rule (`---|---`, `+----+`): only rule characters and whitespace, with `---` in it. A loop, not `[...t]`: a megabyte-long line would be a million strings. */
const isSeparatorLine = (t: string) => {
  if (!t.includes('---')) return false;
  for (let i = 0; i < t.length; i++) if (!'|+:=-'.includes(t[i]) && !isWhitespace(t[i])) return false;
  return true;
};
/** How many times `d` occurs in `l` (`l.split(d).length - 1` without building the pieces). */
const occurrences = (l: string, d: string) => {
  let n = 0;
  for (let at = l.indexOf(d); at >= 0; at = l.indexOf(d, at + d.length)) n++;
  return n;
};
const ROWS_FOOTER = /^\((\d[\d,]*) rows?\)$/;

/** psql / mysql / markdown / CSV / TSV tables: a header line and rows with the same number of delimiters. */
function rowsFromText(text: string): { header: string; rows: string[]; stated?: number } | undefined {
  let stated: number | undefined;
  const lines: string[] = [];
  for (const l of text.split('\n')) {
    const t = l.trim();
    if (t === '' || isSeparatorLine(t) || /^\+[-+]+\+$/.test(t)) continue;
    const footer = ROWS_FOOTER.exec(t);
    if (footer) {
      stated = Number(footer[1].replace(/,/g, ''));
      continue;
    }
    lines.push(l);
  }
  if (lines.length < 3) return undefined;
  for (const d of ['|', '\t', ',']) {
    const per = (l: string) => occurrences(l, d);
    const want = per(lines[0]);
    if (want === 0) continue;
    if (lines.filter((l) => per(l) === want).length >= 0.9 * lines.length) return { header: lines[0], rows: lines.slice(1), ...(stated !== undefined ? { stated } : {}) };
  }
  return undefined;
}

/** Seed 000: a database result over 100 rows → its row count and a few sample rows. */
export function sampleDatabaseRows(text: string, params: ToolPostprocessParams): string | undefined {
  const json = parseJson(text);
  if (json !== undefined) {
    const found = rowsFromJson(json);
    if (!found || found.rows.length <= params.databaseMaxRows) return undefined;
    const count = Math.max(found.rows.length, found.stated ?? 0);
    const first = found.rows[0];
    const columns = isObject(first) ? Object.keys(first) : undefined;
    const sample = found.rows.slice(0, params.databaseSampleRows);
    return [
      `[database result: ${fmt(count)} rows${columns ? `; columns: ${columns.join(', ')}` : ''}; ${sample.length} sample rows kept]`,
      ...sample.map((r) => JSON.stringify(r)),
    ].join('\n');
  }
  const table = rowsFromText(text);
  if (!table || table.rows.length <= params.databaseMaxRows) return undefined;
  const count = Math.max(table.rows.length, table.stated ?? 0);
  const sample = table.rows.slice(0, params.databaseSampleRows);
  return [`[database result: ${fmt(count)} rows; ${sample.length} sample rows kept]`, table.header, ...sample].join('\n');
}

// ---------------------------------------------------------------------------------------------
// API response → status + key fields

const HTTP_STATUS = /^HTTP\/\d(?:\.\d)?\s+(\d{3})([^\n]*)/;

function flatten(value: unknown, prefix: string, params: ToolPostprocessParams, drop: Set<string>, out: string[], dropped: Set<string>, depth: number): void {
  if (out.length >= params.apiMaxFields) return;
  if (Array.isArray(value)) {
    out.push(`${prefix || 'body'}: [${fmt(value.length)} item${value.length === 1 ? '' : 's'}]`);
    if (depth === 0 && value.length > 0 && isObject(value[0])) flatten(value[0], `${prefix}[0]`, params, drop, out, dropped, depth + 1);
    return;
  }
  if (isObject(value)) {
    const keys = Object.keys(value);
    if (depth >= 2) {
      out.push(`${prefix}: {${keys.length} field${keys.length === 1 ? '' : 's'}: ${clip(keys.join(', '), 80)}}`);
      return;
    }
    const priority = params.apiKeyFields.map((k) => k.toLowerCase());
    const rank = (k: string) => {
      const r = priority.indexOf(k.toLowerCase());
      return r < 0 ? priority.length : r;
    };
    const ordered = keys.map((k, i) => ({ k, i })).sort((a, b) => rank(a.k) - rank(b.k) || a.i - b.i);
    for (const { k } of ordered) {
      if (drop.has(k.toLowerCase())) {
        dropped.add(k);
        continue;
      }
      flatten(value[k], prefix ? `${prefix}.${k}` : k, params, drop, out, dropped, depth + 1);
    }
    return;
  }
  const shown = typeof value === 'string' ? JSON.stringify(clip(collapse(value), params.apiMaxValueChars)) : JSON.stringify(value);
  out.push(`${prefix || 'body'}: ${shown}`);
}

/** Seed 000: an API response → its status and key fields (headers and verbose metadata discarded). */
export function condenseApiResponse(text: string, params: ToolPostprocessParams): string | undefined {
  let status: string | undefined;
  let body = text;
  const http = HTTP_STATUS.exec(text.trimStart());
  if (http) {
    status = `${http[1]}${http[2].trim() ? ` ${http[2].trim()}` : ''}`;
    const blank = text.search(/\r?\n\r?\n/);
    body = blank >= 0 ? text.slice(blank).trim() : '';
  }
  const json = parseJson(body);
  if (json === undefined && !http) return undefined;
  if (status === undefined && isObject(json)) {
    const s = pick(json, ['status', 'statusCode', 'status_code', 'httpStatus', 'http_status', 'code']);
    if (typeof s === 'string' || typeof s === 'number' || typeof s === 'boolean') status = String(s);
  }
  const drop = new Set(params.apiDropFields.map((k) => k.toLowerCase()));
  const fields: string[] = [];
  const dropped = new Set<string>();
  if (json !== undefined) flatten(json, '', params, drop, fields, dropped, 0);
  else if (body) fields.push(`body: ${JSON.stringify(clip(collapse(body), params.apiMaxValueChars))}`);
  const out = [`[api response: status ${status ?? 'unknown'}; key fields kept, verbose metadata dropped]`, ...fields];
  if (http) out.push('(response headers dropped)');
  if (dropped.size > 0) out.push(`(dropped: ${[...dropped].join(', ')})`);
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------------
// The ingest step

function kindOfShape(text: string, params: ToolPostprocessParams): ToolKind | undefined {
  const json = parseJson(text);
  if (json !== undefined) {
    const hits = findHits(json);
    if (hits && hits.some((h) => typeof pick(h, ['title', 'name']) === 'string')) return 'web-search';
    const rows = rowsFromJson(json);
    if (rows && rows.rows.length > params.databaseMaxRows) return 'database';
    if (isObject(json) && ['status', 'statusCode', 'status_code', 'httpStatus', 'http_status'].some((k) => k in json)) return 'api';
    return undefined;
  }
  if (HTTP_STATUS.test(text.trimStart())) return 'api';
  const table = rowsFromText(text);
  if (table && table.rows.length > params.databaseMaxRows) return 'database';
  const lines = text.split('\n');
  if (lines.length > params.fileReadMaxLines && (lines.filter((l) => NUMBERED.test(l)).length >= 0.8 * lines.length || /^\[File: /.test(text))) return 'file-read';
  return undefined;
}

/** A result's text: its string content, or its parts when all are text (images and other parts leave it alone). */
function resultText(block: ToolResultBlock): string | undefined {
  if (typeof block.content === 'string') return block.content;
  if (block.content.length === 0 || !block.content.every((p) => p.type === 'text')) return undefined;
  return block.content.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
}

export interface PostprocessDecision {
  kind?: ToolKind;
  /** The new content, or undefined when the result is kept as-is. */
  text?: string;
  /** Why it was kept: `tool-error`, `small`, `structured`, `unrecognized`, `not-large`. */
  kept?: 'tool-error' | 'small' | 'structured' | 'unrecognized' | 'not-large' | 'already-processed' | 'not-text';
}

/**
 * Whether a text has at least `tokens` tokens without counting it (counting a megabyte holds the
 * thread for seconds): no token of o200k_base or cl100k_base is longer than 128 bytes, and an
 * estimated model's multiplier is at least 0.5 (MULTIPLIER_RANGE), so every 256 UTF-8 bytes, and
 * so every 256 UTF-16 code units, are at least one counted token.
 */
function surelyAtLeast(text: string, tokens: number): boolean {
  return text.length >= 256 * tokens;
}

/**
 * What seed 000 does with one tool result: kept as-is (errors, under 200 tokens, JSON/YAML under
 * 500 tokens) or condensed by its kind. `textTokens` counts a text the way the session counts it.
 */
export function postprocessResult(block: ToolResultBlock, toolName: string | undefined, params: ToolPostprocessParams, textTokens: (text: string) => number, seq?: number): PostprocessDecision {
  if (block.isError) return { kept: 'tool-error' };
  const text = resultText(block);
  if (text === undefined) return { kept: 'not-text' };
  if (MARKER.test(text)) return { kept: 'already-processed' };
  const tokens = surelyAtLeast(text, Math.max(params.keepBelowTokens, params.keepStructuredBelowTokens)) ? Infinity : textTokens(text);
  if (tokens < params.keepBelowTokens) return { kept: 'small' };
  if (tokens < params.keepStructuredBelowTokens && isStructured(text)) return { kept: 'structured' };
  const kind = (toolName !== undefined ? toolKindOfName(toolName, params) : undefined) ?? (params.detectByShape ? kindOfShape(text, params) : undefined);
  if (!kind) return { kept: 'unrecognized' };
  const condensed =
    kind === 'web-search'
      ? condenseWebSearch(text, params)
      : kind === 'file-read'
        ? outlineFileRead(text, params, seq)
        : kind === 'database'
          ? sampleDatabaseRows(text, params)
          : condenseApiResponse(text, params);
  return condensed === undefined ? { kind, kept: 'not-large' } : { kind, text: condensed };
}

const STAGE: Record<ToolKind, string> = {
  'web-search': 'web-search condensed',
  'file-read': 'file-read outlined',
  database: 'database sampled',
  api: 'api-response condensed',
};

/**
 * The ingest step (`IngestStep`): every tool_result block of the message is post-processed by
 * its tool's kind; the message is returned only when it changed and is smaller.
 */
export const postprocessToolResults: IngestStep<ToolPostprocessParams> = (m, params, count, names) => {
  if (!m.message.blocks.some((b) => b.type === 'tool_result')) return undefined;
  const textTokens = textCounter(count);
  const stages: string[] = [];
  let changed = false;
  const blocks: Block[] = m.message.blocks.map((b) => {
    if (b.type !== 'tool_result') return b;
    const d = postprocessResult(b, names.get(b.toolUseId), params, textTokens, m.seq);
    if (d.text === undefined || d.kind === undefined) return b;
    changed = true;
    if (!stages.includes(STAGE[d.kind])) stages.push(STAGE[d.kind]);
    return { ...b, content: d.text };
  });
  if (!changed) return undefined;
  const message: CanonicalMessage = { ...m.message, blocks };
  const tokens = count(message);
  if (tokens >= m.tokens) return undefined;
  const result: IngestResult = { message: { seq: m.seq, message, tokens }, artifacts: [], stage: stages.join(', ') };
  return result;
};

function textMessage(text: string): CanonicalMessage {
  return { role: 'user', blocks: [{ type: 'text', text }] };
}

/** Counts a text with a message counter (the message's overhead taken off). */
export function textCounter(count: CountMessage): (text: string) => number {
  const empty = count(textMessage(''));
  return (t: string) => Math.max(0, count(textMessage(t)) - empty);
}
