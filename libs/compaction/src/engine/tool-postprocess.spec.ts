import fc from 'fast-check';
import { countTextSync } from '@compactor/tokens';
import { Block, CanonicalMessage, ToolResultBlock } from '../messages/canonical';
import { countableParts } from '../messages/countable';
import { providerValidityProblems } from '../messages/provider-valid';
import {
  isClassBodyMethod,
  isModifiedMember,
  condenseApiResponse,
  condenseWebSearch,
  isStructured,
  nameWords,
  outlineFileRead,
  postprocessToolResults,
  sampleDatabaseRows,
  TOOL_POSTPROCESS_DEFAULTS,
  toolKindOfName,
  ToolPostprocessParams,
} from './tool-postprocess';
import { CountMessage, SessionMessage } from './types';

const countText = (t: string) => countTextSync(t, 'o200k_base');
const count: CountMessage = (m) => 3 + countableParts(m).texts.reduce((n, t) => n + countText(t), 0);
const P = TOOL_POSTPROCESS_DEFAULTS;

const result = (content: ToolResultBlock['content'], isError = false, id = 'call_1'): ToolResultBlock => ({ type: 'tool_result', toolUseId: id, content, isError });
const toolMessage = (blocks: Block[], seq = 3): SessionMessage => {
  const message: CanonicalMessage = { role: 'user', blocks };
  return { seq, message, tokens: count(message) };
};
const run = (content: ToolResultBlock['content'], name: string | undefined, opts: { isError?: boolean; params?: ToolPostprocessParams } = {}) => {
  const m = toolMessage([result(content, opts.isError)]);
  const names = new Map(name ? [['call_1', name]] : []);
  return { before: m, out: postprocessToolResults(m, opts.params ?? P, count, names) };
};
const contentOf = (m: SessionMessage | undefined) => (m?.message.blocks[0] as ToolResultBlock).content as string;

// ---- fixtures -------------------------------------------------------------------------------

const searchJson = (n: number) =>
  JSON.stringify({
    query: 'nx monorepo jest',
    search_metadata: { id: 'abc', engine: 'google', total_time_taken: 1.2 },
    organic_results: Array.from({ length: n }, (_, i) => ({
      position: i + 1,
      title: `<b>Result ${i}</b> about Nx`,
      link: `https://example.com/page-${i}`,
      snippet: `Snippet ${i}: how to configure jest in an Nx workspace with many projects and shared presets.`,
      html: `<html><body>${'<div class="ad">noise</div>'.repeat(40)}</body></html>`,
      cached_page_link: `https://webcache.example.com/${i}`,
    })),
  });

const searchText = (n: number) =>
  Array.from(
    { length: n },
    (_, i) =>
      `${i + 1}. Result ${i}: configuring Jest in Nx\nURL: https://example.com/r/${i}\nSnippet: Nx generates a jest.config.ts per project; ${'the preset is shared across projects. '.repeat(6)}\n<div>${'<span>ad</span>'.repeat(10)}</div>`,
  ).join('\n\n');

/** A TypeScript file with classes and functions, `lines` long. */
function sourceFile(lines: number): string {
  const out: string[] = [];
  let k = 0;
  while (out.length < lines) {
    out.push(`export class Service${k} {`, `  constructor(private readonly dep${k}: number) {}`, `  compute${k}(x: number): number {`);
    for (let i = 0; i < 8; i += 1) out.push(`    const v${i} = x * ${i} + this.dep${k}; // step ${i}`);
    out.push('    return x;', '  }', '}', '', `export function helper${k}(a: string): string {`, `  return a.repeat(${k});`, '}', '');
    k += 1;
  }
  return out.slice(0, lines).join('\n');
}

const rowsJson = (n: number) => JSON.stringify({ rowCount: n, rows: Array.from({ length: n }, (_, i) => ({ id: i + 1, region: `r${i % 4}`, amount: i * 10.5, quarter: (i % 4) + 1 })) });
const psqlTable = (n: number) =>
  [' id | region | amount ', '----+--------+--------', ...Array.from({ length: n }, (_, i) => ` ${i + 1} | r${i % 4} | ${i * 3}.50`), `(${n} rows)`].join('\n');

const apiJson = (extraMeta: number) =>
  JSON.stringify({
    status: 200,
    data: { id: 'ord_42', customer: { name: 'Ada', email: 'ada@example.com' }, total: 99.5, items: Array.from({ length: 30 }, (_, i) => ({ sku: `s${i}` })) },
    headers: Object.fromEntries(Array.from({ length: extraMeta }, (_, i) => [`x-header-${i}`, `value-${i}-${'z'.repeat(20)}`])),
    metadata: { trace: Array.from({ length: extraMeta }, (_, i) => `span-${i}`), server: 'edge-7' },
  });

describe('selective tool post-processing (seed 000 "Selective Tool Post-Processing")', () => {
  it('seed 000: web search results keep title + snippet + URL only (full HTML and metadata discarded)', () => {
    const { before, out } = run(searchJson(10), 'web_search');
    expect(out).toBeDefined();
    const text = contentOf(out?.message);
    expect(text.split('\n')[0]).toBe('[web search results: 10 results; title, snippet and URL kept]');
    for (let i = 0; i < 10; i += 1) {
      expect(text).toContain(`${i + 1}. Result ${i} about Nx`);
      expect(text).toContain(`https://example.com/page-${i}`);
      expect(text).toContain(`Snippet ${i}: how to configure jest`);
    }
    expect(text).not.toMatch(/<div|<b>|webcache|search_metadata/);
    expect(out?.message.tokens).toBeLessThan(before.tokens);
    expect(out?.stage).toBe('web-search condensed');
  });

  it('seed 000: web search results given as text (numbered entries with URLs) are reduced to title + snippet + URL', () => {
    const text = condenseWebSearch(searchText(6), { ...P, webSnippetChars: 80 }) as string;
    expect(text.split('\n')[0]).toBe('[web search results: 6 results; title, snippet and URL kept]');
    expect(text).toContain('1. Result 0: configuring Jest in Nx\n   https://example.com/r/0\n   Nx generates a jest.config.ts per project;');
    expect(text).not.toContain('<span>');
    // Snippets are clipped to webSnippetChars.
    for (const line of text.split('\n').filter((l) => l.startsWith('   Nx'))) expect(line.length).toBeLessThanOrEqual(83);
  });

  it('seed 000: a file read over 500 lines becomes a summary with line ranges (outline of definitions, first and last lines)', () => {
    const file = sourceFile(1_200);
    const { before, out } = run(file, 'read_file');
    const text = contentOf(out?.message);
    expect(text.split('\n')[0]).toBe('[file read: 1,200 lines (' + file.length.toLocaleString('en-US') + ' chars); summary with line ranges, the full content is in the session history at seq 3]');
    // Each class spans 14 lines and each helper 3, in a 19-line period: ranges come from the file's own structure.
    expect(text).toContain('Outline (80 of 191 definitions, least indented first; line ranges):\n  1–14: export class Service0 {\n  16–18: export function helper0(a: string): string {\n  20–33: export class Service1 {');
    // Methods nest under their class with their own range when the outline has room.
    const full = outlineFileRead(file, { ...P, fileOutlineMax: 500 }) as string;
    expect(full).toContain('Outline (191 definitions; line ranges):\n  1–14: export class Service0 {\n  3–13:   compute0(x: number): number {\n  16–18: export function helper0');
    expect(text).toContain('Lines 1–30:\n1: export class Service0 {');
    expect(text).toContain('… lines 31–1190 omitted …');
    expect(text).toContain('Lines 1191–1200:');
    expect(out?.message.tokens).toBeLessThan(before.tokens / 2);
    expect(out?.stage).toBe('file-read outlined');
  });

  it('seed 000: a file read of exactly 500 lines is not over the threshold and is kept as-is; 501 lines are summarized', () => {
    expect(run(sourceFile(500), 'read_file').out).toBeUndefined();
    expect(run(sourceFile(501), 'read_file').out).toBeDefined();
  });

  it('seed 000: a `cat -n` style read keeps the file\'s own line numbers and path; the outline keeps the least indented definitions first', () => {
    const body = sourceFile(800)
      .split('\n')
      .map((l, i) => `${String(i + 101).padStart(6)}\t${l}`);
    const text = outlineFileRead(["Here's the result of running `cat -n` on /repo/src/service.ts:", ...body].join('\n'), { ...P, fileOutlineMax: 10 }) as string;
    expect(text.split('\n')[0]).toMatch(/^\[file read: \/repo\/src\/service\.ts, 801 lines/);
    expect(text).toContain('  101–114: export class Service0 {');
    const outline = text.split('\n').filter((l) => /^ {2}\d+–\d+: /.test(l));
    expect(outline).toHaveLength(10);
    expect(outline.every((l) => l.includes(': export'))).toBe(true);
    expect(text).toContain(`   101\texport class Service0 {`);
  });

  it('seed 000: database results over 100 rows keep the row count and sample rows (JSON rows and a psql table)', () => {
    const json = run(rowsJson(1_000), 'database_query');
    const text = contentOf(json.out?.message);
    expect(text.split('\n')).toEqual([
      '[database result: 1,000 rows; columns: id, region, amount, quarter; 5 sample rows kept]',
      '{"id":1,"region":"r0","amount":0,"quarter":1}',
      '{"id":2,"region":"r1","amount":10.5,"quarter":2}',
      '{"id":3,"region":"r2","amount":21,"quarter":3}',
      '{"id":4,"region":"r3","amount":31.5,"quarter":4}',
      '{"id":5,"region":"r0","amount":42,"quarter":1}',
    ]);
    expect(json.out?.stage).toBe('database sampled');
    const table = sampleDatabaseRows(psqlTable(300), P) as string;
    expect(table.split('\n')).toEqual(['[database result: 300 rows; 5 sample rows kept]', ' id | region | amount ', ' 1 | r0 | 0.50', ' 2 | r1 | 3.50', ' 3 | r2 | 6.50', ' 4 | r3 | 9.50', ' 5 | r0 | 12.50']);
  });

  it('seed 000: a database result of exactly 100 rows is kept in full ("discard full result set if >100 rows"); 101 rows are sampled', () => {
    expect(run(psqlTable(100), 'execute_sql').out).toBeUndefined();
    expect(run(psqlTable(101), 'execute_sql').out).toBeDefined();
    expect(sampleDatabaseRows(rowsJson(100), P)).toBeUndefined();
  });

  it('seed 000: API responses keep the status and key fields, verbose metadata discarded', () => {
    const { before, out } = run(apiJson(60), 'http_request');
    const lines = contentOf(out?.message).split('\n');
    expect(lines[0]).toBe('[api response: status 200; key fields kept, verbose metadata dropped]');
    expect(lines).toContain('status: 200');
    expect(lines).toContain('data.id: "ord_42"');
    expect(lines).toContain('data.total: 99.5');
    expect(lines).toContain('data.items: [30 items]');
    expect(lines).toContain('data.customer: {2 fields: name, email}');
    expect(lines.at(-1)).toBe('(dropped: headers, metadata)');
    expect(contentOf(out?.message)).not.toContain('x-header-');
    expect(out?.message.tokens).toBeLessThan(before.tokens);
    expect(out?.stage).toBe('api-response condensed');
  });

  it('seed 000: an HTTP response (status line, headers, JSON body) keeps its status line and the body\'s key fields, headers dropped', () => {
    const raw = ['HTTP/1.1 404 Not Found', ...Array.from({ length: 40 }, (_, i) => `X-Debug-${i}: ${'q'.repeat(30)}`), '', JSON.stringify({ error: 'not_found', message: 'No order ord_9' })].join('\n');
    const text = condenseApiResponse(raw, P) as string;
    expect(text.split('\n')).toEqual(['[api response: status 404 Not Found; key fields kept, verbose metadata dropped]', 'error: "not_found"', 'message: "No order ord_9"', '(response headers dropped)']);
  });

  it('seed 000 "Preserve As-Is": tool errors are always kept, whatever their size', () => {
    expect(run(searchJson(30), 'web_search', { isError: true }).out).toBeUndefined();
    expect(run(sourceFile(2_000), 'read_file', { isError: true }).out).toBeUndefined();
  });

  it('seed 000 "Preserve As-Is": results under 200 tokens are kept (199 kept, 200 processed)', () => {
    // A database text table whose size we tune to the token: 3 columns, many rows, sampled when processed.
    const sized = (tokens: number) => {
      let rows = 101;
      let t = psqlTable(rows);
      while (countText(t) < tokens) t = psqlTable((rows += 1));
      return t;
    };
    const table = sized(600);
    const params = { ...P, keepBelowTokens: countText(table) + 1 };
    expect(run(table, 'execute_sql', { params }).out).toBeUndefined();
    expect(run(table, 'execute_sql', { params: { ...params, keepBelowTokens: countText(table) } }).out).toBeDefined();
    // With the default, a small web search answer stays as it is.
    expect(run(searchJson(1).slice(0, 300), 'web_search').out).toBeUndefined();
  });

  it('seed 000 "Preserve As-Is": JSON and YAML under 500 tokens are kept; the same JSON over 500 tokens is condensed', () => {
    const small = apiJson(8);
    expect(countText(small)).toBeGreaterThanOrEqual(200);
    expect(countText(small)).toBeLessThan(500);
    expect(run(small, 'http_request').out).toBeUndefined();
    const large = apiJson(60);
    expect(countText(large)).toBeGreaterThanOrEqual(500);
    expect(run(large, 'http_request').out).toBeDefined();
    const yaml = (n: number) => ['---', 'status: ok', 'items:', ...Array.from({ length: n }, (_, i) => `  - name: item-${i}\n    url: https://example.com/${i}\n    snippet: ${'text '.repeat(i % 3)}`)].join('\n');
    expect(isStructured(yaml(20))).toBe(true);
    expect(countText(yaml(20))).toBeLessThan(500);
    expect(countText(yaml(20))).toBeGreaterThanOrEqual(200);
    expect(run(yaml(20), 'web_search').out).toBeUndefined();
    expect(countText(yaml(60))).toBeGreaterThanOrEqual(500);
    expect(run(yaml(60), 'web_search').out?.stage).toBe('web-search condensed');
  });

  it('seed 000: the tool type comes from the tool name by word patterns, and the name map is an overridable parameter', () => {
    expect(nameWords('mcp__brave__braveWebSearch')).toEqual(['mcp', 'brave', 'brave', 'web', 'search']);
    expect(toolKindOfName('mcp__brave__braveWebSearch', P)).toBe('web-search');
    expect(toolKindOfName('tavily_search', P)).toBe('web-search');
    expect(toolKindOfName('readFile', P)).toBe('file-read');
    expect(toolKindOfName('str_replace_editor', P)).toBe('file-read');
    expect(toolKindOfName('execute_sql', P)).toBe('database');
    expect(toolKindOfName('database_query', P)).toBe('database');
    expect(toolKindOfName('HTTPRequest', P)).toBe('api');
    expect(toolKindOfName('bash', P)).toBeUndefined();
    expect(toolKindOfName('search_file', P)).toBeUndefined();
    expect(toolKindOfName('breadcrumbs', P)).toBeUndefined();
    const custom: ToolPostprocessParams = { ...P, toolNames: { ...P.toolNames, database: ['warehouse_lookup'] } };
    expect(toolKindOfName('warehouse_lookup', custom)).toBe('database');
    expect(toolKindOfName('execute_sql', custom)).toBeUndefined();
    expect(run(rowsJson(500), 'warehouse_lookup', { params: { ...custom, detectByShape: false } }).out).toBeDefined();
    expect(run(rowsJson(500), 'warehouse_lookup', { params: { ...P, detectByShape: false } }).out).toBeUndefined();
  });

  it('seed 000: when the name says nothing, the type is recognized from the content shape (rows, search hits, HTTP status, numbered file lines)', () => {
    expect(run(psqlTable(400), 'bash').out?.stage).toBe('database sampled');
    expect(run(searchJson(8), 'mystery_tool').out?.stage).toBe('web-search condensed');
    expect(run(apiJson(60), undefined).out?.stage).toBe('api-response condensed');
    const numbered = sourceFile(700)
      .split('\n')
      .map((l, i) => `${i + 1}:${l}`)
      .join('\n');
    expect(run(numbered, 'bash').out?.stage).toBe('file-read outlined');
    // Plain prose of unknown origin is kept.
    expect(run('The build passed. '.repeat(400), 'bash').out).toBeUndefined();
    expect(run(psqlTable(400), 'bash', { params: { ...P, detectByShape: false } }).out).toBeUndefined();
  });

  it('seed 000: the new form is used only when smaller; an already compact list of search results is left alone', () => {
    const compact = Array.from({ length: 40 }, (_, i) => `${i + 1}. R${i}\nhttps://e.co/${i}\ns${i}`).join('\n');
    expect(countText(compact)).toBeGreaterThanOrEqual(200);
    expect(condenseWebSearch(compact, P)).toBeDefined();
    expect(run(compact, 'web_search').out).toBeUndefined();
  });

  it('keeps the tool_result block (toolUseId, isError, extras) and the other blocks of the message, so tool pairs stay intact', () => {
    const assistant: CanonicalMessage = {
      role: 'assistant',
      blocks: [
        { type: 'text', text: 'Looking it up.' },
        { type: 'tool_use', id: 'call_a', name: 'web_search', input: { q: 'nx' } },
        { type: 'tool_use', id: 'call_b', name: 'read_file', input: { path: 'a.ts' } },
      ],
    };
    const big: ToolResultBlock = { ...result(searchJson(12), false, 'call_a'), extras: { cache_control: { type: 'ephemeral' } }, origin: 'anthropic' };
    const small = result('ok', false, 'call_b');
    const m = toolMessage([big, small, { type: 'text', text: 'Also check the docs.' }]);
    const out = postprocessToolResults(m, P, count, new Map([['call_a', 'web_search'], ['call_b', 'read_file']]));
    expect(out).toBeDefined();
    const blocks = out?.message.message.blocks ?? [];
    expect(blocks).toHaveLength(3);
    expect(blocks[0]).toMatchObject({ type: 'tool_result', toolUseId: 'call_a', isError: false, extras: { cache_control: { type: 'ephemeral' } }, origin: 'anthropic' });
    expect(blocks[1]).toBe(small);
    expect(blocks[2]).toEqual({ type: 'text', text: 'Also check the docs.' });
    expect(out?.message.seq).toBe(m.seq);
    expect(out?.message.tokens).toBe(count(out?.message.message as CanonicalMessage));
    expect(out?.artifacts).toEqual([]);
    expect(providerValidityProblems([{ role: 'user', blocks: [{ type: 'text', text: 'go' }] }, assistant, out?.message.message as CanonicalMessage])).toEqual([]);
  });

  it('post-processes text-only content parts, leaves results with images alone, and never processes its own output again', () => {
    const parts = run(
      [
        { type: 'text', text: psqlTable(200) },
        { type: 'text', text: 'trailer' },
      ],
      'execute_sql',
    );
    expect(parts.out?.stage).toBe('database sampled');
    expect(typeof contentOf(parts.out?.message)).toBe('string');
    const image = run(
      [
        { type: 'text', text: psqlTable(200) },
        { type: 'image', source: { kind: 'url', url: 'https://example.com/chart.png' } },
      ],
      'execute_sql',
    );
    expect(image.out).toBeUndefined();
    const once = run(sourceFile(3_000), 'read_file').out as NonNullable<ReturnType<typeof run>['out']>;
    expect(postprocessToolResults(once.message, { ...P, keepBelowTokens: 0 }, count, new Map([['call_1', 'read_file']]))).toBeUndefined();
  });

  it('messages without tool results are never touched', () => {
    const m = toolMessage([{ type: 'text', text: sourceFile(900) }]);
    expect(postprocessToolResults(m, P, count, new Map())).toBeUndefined();
  });

  it('properties: the same input gives the same output (G8); a changed message is smaller (G5), keeps its blocks\' ids, error flags and order (G2), and errors are never changed', () => {
    const kinds = fc.constantFrom('web', 'file', 'db', 'api', 'prose');
    const payload = fc.record({ kind: kinds, n: fc.integer({ min: 1, max: 1_200 }), isError: fc.boolean(), name: fc.constantFrom('web_search', 'read_file', 'execute_sql', 'http_request', 'bash', 'tool') });
    fc.assert(
      fc.property(fc.array(payload, { minLength: 1, maxLength: 4 }), (items) => {
        const blocks: Block[] = items.map((it, i) => {
          const content =
            it.kind === 'web' ? searchJson(Math.ceil(it.n / 40)) : it.kind === 'file' ? sourceFile(it.n) : it.kind === 'db' ? psqlTable(Math.ceil(it.n / 4)) : it.kind === 'api' ? apiJson(Math.ceil(it.n / 10)) : 'word '.repeat(it.n);
          return result(content, it.isError, `call_${i}`);
        });
        const names = new Map(items.map((it, i) => [`call_${i}`, it.name]));
        const m = toolMessage(blocks);
        const a = postprocessToolResults(m, P, count, names);
        const b = postprocessToolResults(m, P, count, names);
        expect(b).toEqual(a);
        if (!a) return;
        expect(a.message.tokens).toBeLessThan(m.tokens);
        expect(a.message.seq).toBe(m.seq);
        const out = a.message.message.blocks as ToolResultBlock[];
        expect(out.map((x) => [x.type, x.toolUseId, x.isError])).toEqual(blocks.map((x) => [x.type, (x as ToolResultBlock).toolUseId, (x as ToolResultBlock).isError]));
        out.forEach((x, i) => {
          if (x.isError) expect(x).toBe(blocks[i]);
        });
      }),
      { numRuns: 60, seed: 7 },
    );
  });
});

describe('definition scans match the regexes they replace', () => {
  const from = (alphabet: string[], maxLength = 14) => fc.array(fc.constantFrom(...alphabet), { maxLength }).map((a) => a.join(''));
  const runs = { numRuns: 4000 };

  it('isModifiedMember', () => {
    const re = /^\s*(?:(?:public|private|protected|internal|static|final|abstract|sealed|partial)\s+)+(?:[\w<>[\],\s]+\s+)?\w+\s*\(/;
    const alphabet = ['public', 'static', ' ', '  ', '\t', 'void', 'x', 'List', '<', '>', '[', ']', ',', '(', ')', '{', '$', '.'];
    fc.assert(fc.property(from(alphabet), (s) => isModifiedMember(s) === re.test(s)), runs);
    expect(isModifiedMember('    public static <T> List<T> of(T... items) {')).toBe(true);
    expect(isModifiedMember(`public ${'a '.repeat(50_000)}`)).toBe(false);
  });

  it('isClassBodyMethod', () => {
    const re = /^\s+(?!(?:if|for|while|switch|catch|with|return|else|do|try|new|await|throw|typeof)\b)(?:(?:public|private|protected|static|async|readonly|override|get|set)\s+)*[\w$]+\s*(?:<[^>]*>)?\([^)]*\)\s*(?::\s*[^={;]+)?\{\s*$/;
    const alphabet = [' ', '  ', 'if', 'do', 'x', 'dox', '$', 'async', 'get', '(', ')', '<', '>', ':', '{', '=', ';', 'T'];
    fc.assert(fc.property(from(alphabet), (s) => isClassBodyMethod(s) === re.test(s)), runs);
    expect(isClassBodyMethod('  async load(id: string): Promise<void> {')).toBe(true);
    expect(isClassBodyMethod('  if (ready) {')).toBe(false);
  });
});
