import fc from 'fast-check';
import { ToolResultContent } from '../messages/canonical';
import { offloadDigest, offloadReference } from './offload';
import { trimLineColumn, trimTrailing } from './text-scan';

/**
 * The digest before it became one pass over the lines (issue #15, the 30 MB tool result: `split('\n')` and
 * `split(separators)` of the whole output, ~0.55 s of the worker's thread for 30 MB of log text): the new one
 * must write exactly the same text.
 */
const ERROR_LINE = /\b(error|errors|exception|traceback|failed|failure|fatal|panic|denied|not found)\b/i;
const FILE_EXT = /^[\w.-]+\.(py|ts|tsx|js|jsx|mjs|cjs|json|md|go|rs|java|kt|c|h|cc|cpp|hpp|cs|rb|php|sh|yml|yaml|toml|ini|cfg|txt|html|css|sql|xml|lock)$/;
const clip = (line: string, max = 120) => {
  const t = line.trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
};
function oldPathsIn(text: string, max: number): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const raw of text.split(/[\s"'`()[\]{}<>,;=]+/)) {
    if (out.length >= max) break;
    const token = trimTrailing(trimLineColumn(raw), '.:');
    if (token.length < 3 || token.length > 120 || token.includes('://') || seen.has(token)) continue;
    const pathLike = /^[\w.~/-]+$/.test(token) && /[\w]\/[\w.]|^\/[\w.]/.test(token) && /[A-Za-z]/.test(token);
    if (pathLike || FILE_EXT.test(token)) {
      seen.add(token);
      out.push(token);
    }
  }
  return out;
}
function oldDigest(content: ToolResultContent): string {
  const text = typeof content === 'string' ? content : content.map((p) => (p.type === 'text' ? p.text : '')).filter((t) => t.length > 0).join('\n');
  const lines = text.split('\n');
  const nonEmpty = lines.map((l, i) => [l, i] as const).filter(([l]) => l.trim().length > 0);
  const out: string[] = [];
  if (typeof content !== 'string') {
    const images = content.filter((p) => p.type === 'image').length;
    const others = content.filter((p) => p.type === 'opaque').length;
    const parts = [`${content.length} part(s)`, images ? `${images} image(s)` : '', others ? `${others} other block(s)` : ''].filter(Boolean);
    out.push(`parts: ${parts.join(', ')}`);
  }
  const head = nonEmpty.slice(0, 3);
  const tail = nonEmpty.slice(Math.max(3, nonEmpty.length - 3));
  if (head.length) out.push(`first lines: ${head.map(([l]) => clip(l)).join(' ⏎ ')}`);
  if (tail.length) out.push(`last lines: ${tail.map(([l]) => clip(l)).join(' ⏎ ')}`);
  const shown = new Set([...head, ...tail].map(([, i]) => i));
  const errors = nonEmpty.filter(([l, i]) => !shown.has(i) && ERROR_LINE.test(l));
  if (errors.length) out.push(`error lines (${errors.length}): ${errors.slice(0, 3).map(([l, i]) => `${i + 1}: ${clip(l, 100)}`).join(' ⏎ ')}`);
  const paths = oldPathsIn(text, 6);
  if (paths.length) out.push(`paths: ${paths.join(', ')}`);
  return out.join('\n');
}

const line = fc.oneof(
  fc.constantFrom('', ' ', '\t', 'ok', 'ERROR: disk full', 'Traceback (most recent call last):', 'fatal: not a git repo', 'done.', 'see ./src/a.ts:12:3', '/usr/lib/x.so', 'a/b', 'file.py,', 'https://x.io/a/b', '(lib/c.go)'),
  fc.string({ maxLength: 30 }),
);
const text = fc.array(line, { maxLength: 25 }).map((ls) => ls.join('\n'));

describe('offloadDigest in one pass (issue #15)', () => {
  it('writes what the split-based digest wrote, for strings and parts', () => {
    fc.assert(fc.property(text, (t) => expect(offloadDigest(t)).toBe(oldDigest(t))), { numRuns: 2_000 });
    fc.assert(
      fc.property(text, text, (a, b) => {
        const parts: ToolResultContent = [{ type: 'text', text: a }, { type: 'image', mediaType: 'image/png', data: 'AAAA' } as never, { type: 'text', text: b }];
        expect(offloadDigest(parts)).toBe(oldDigest(parts));
      }),
      { numRuns: 500 },
    );
  });

  it('counts the lines as split did', () => {
    fc.assert(
      fc.property(text, (t) => {
        const ref = offloadReference({ id: 'art_x', toolName: 'bash', content: t, tokens: 1, isError: false });
        expect(ref).toContain(` ${t.split('\n').length.toLocaleString('en-US')} lines,`);
      }),
      { numRuns: 300 },
    );
  });
});
