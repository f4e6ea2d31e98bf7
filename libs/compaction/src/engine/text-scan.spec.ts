// Each scan must do exactly what the regular expression it replaced did: the old regexes are
// the oracles here, on short strings (where their backtracking costs nothing) drawn from the
// characters that matter to them. The last test checks the scans stay linear on the inputs that
// made the regexes blow up.
import fc from 'fast-check';
import {
  isListingLine,
  leadingWordAndRest,
  replaceMarkdownLinks,
  replaceScriptAndStyle,
  replaceTags,
  splitCapitalRuns,
  trailingDashWord,
  trimEnds,
  trimLineColumn,
  trimTrailing,
  wholePhraseTest,
} from './text-scan';

const from = (alphabet: string[], maxLength = 24) => fc.array(fc.constantFrom(...alphabet), { maxLength }).map((a) => a.join(''));
const runs = { numRuns: 3000 };

describe('linear scans match the regexes they replace', () => {
  it('trimTrailing and trimEnds', () => {
    fc.assert(fc.property(from(['a', '/', '.', ',', ';', ':', ' ']), (s) => trimTrailing(s, '.,;:') === s.replace(/[.,;:]+$/, '')), runs);
    fc.assert(
      fc.property(from(['a', '`', "'", '"', '.', ',', ';', ':', ' ']), (s) => trimEnds(s, '`\'"', '`\'".,;:') === s.replace(/^[`'"]+|[`'".,;:]+$/g, '')),
      runs,
    );
  });

  it('wholePhraseTest', () => {
    const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const words = ['must', 'must not', 'never', "don't", 'do not', 'a', 'aa', 'ab', 'b a', '.x'];
    const phraseLists = fc.uniqueArray(fc.constantFrom(...words), { minLength: 1, maxLength: 5 });
    const text = from(['must', 'MUST', 'never', 'Neverland', ' ', "'", "don't", 'not', 'do', 'a', 'A', 'b', '_', '1', '.', 'x', '\n'], 12);
    fc.assert(
      fc.property(phraseLists, text, (phrases, s) => {
        const re = new RegExp(`(^|[^\\w'])(${phrases.map(escape).join('|')})(?![\\w'])`, 'i');
        return wholePhraseTest(phrases)(s) === re.test(s);
      }),
      runs,
    );
    const many = wholePhraseTest(Array.from({ length: 100 }, (_, i) => `${'a'.repeat(199)}${i}`));
    const started = Date.now();
    expect(many('a'.repeat(100_000))).toBe(false);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('trimLineColumn', () => {
    fc.assert(fc.property(from(['a', ':', '1', '23', '.', '/']), (s) => trimLineColumn(s) === s.replace(/(:\d+)+:?$/, '')), runs);
    expect(trimLineColumn('src/app.ts:12:3:')).toBe('src/app.ts');
    expect(trimLineColumn(`x${':1'.repeat(100_000)}y`)).toBe(`x${':1'.repeat(100_000)}y`);
  });

  it('trailingDashWord', () => {
    const words = ['COMPLETED', 'DONE', 'IN PROGRESS', 'IN-PROGRESS', 'PENDING', 'LOCKED', 'UNLOCKED'];
    const re = /\s+[-–—]\s*(COMPLETED|DONE|IN[ -]PROGRESS|PENDING|UNLOCKED|LOCKED)\s*$/i;
    fc.assert(
      fc.property(from(['x', ' ', '\t', '-', '–', '—', 'done', 'Done', 'locked', 'UN', 'in progress', 'IN-PROGRESS', 'pending', '\u00a0'], 10), (s) => {
        const m = re.exec(s);
        const got = trailingDashWord(s, words);
        return m ? got?.index === m.index && got.word === m[1] : got === undefined;
      }),
      runs,
    );
  });

  it('leadingWordAndRest', () => {
    const re = /^(created|added|removed)\s+(.+)$/i;
    fc.assert(
      fc.property(from(['created', 'Added', 'removed', ' ', '\t', '\n', '\u2028', 'x', 'y'], 8), (s) => {
        const m = re.exec(s);
        const got = leadingWordAndRest(s, ['created', 'added', 'removed']);
        return m ? got?.word === m[1] && got.rest === m[2] : got === undefined;
      }),
      runs,
    );
  });

  it('splitCapitalRuns', () => {
    fc.assert(fc.property(from(['A', 'B', 'a', 'b', '1', '_']), (s) => splitCapitalRuns(s) === s.replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')), runs);
  });

  it('replaceScriptAndStyle and replaceTags', () => {
    const alphabet = ['<', '>', '/', 'script', 'SCRIPT', 'style', 'Style', '</script>', '</STYLE>', 'x', ' '];
    fc.assert(fc.property(from(alphabet, 14), (s) => replaceScriptAndStyle(s, ' ') === s.replace(/<(script|style)[\s\S]*?<\/\1>/gi, ' ')), runs);
    fc.assert(fc.property(from(['<', '>', 'a', ' ', '\n']), (s) => replaceTags(s, ' ') === s.replace(/<[^>]+>/g, ' ')), runs);
  });

  it('replaceMarkdownLinks', () => {
    fc.assert(fc.property(from(['[', ']', '(', ')', 'a', ' ']), (s) => replaceMarkdownLinks(s) === s.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')), runs);
  });

  it('isListingLine', () => {
    const re = /^\s*[\w.~@+/-]+\/?(?:(?:\t+| {2,})[\w.~@+/-]+\/?)*\s*$/;
    fc.assert(fc.property(from(['a', '/', '.', ' ', '\t', '\r', '\u00a0', '*', '\n'], 16), (s) => isListingLine(s) === re.test(s)), runs);
  });

  it('stay linear on the inputs that made the regexes blow up (1 MB each, well under a second)', () => {
    const mb = 1 << 20;
    const inputs: Array<[string, () => unknown]> = [
      ['dash word after spaces', () => trailingDashWord(`a${' '.repeat(mb)}b`, ['DONE'])],
      ['artifact verb and spaces', () => leadingWordAndRest(`added${'\t'.repeat(mb)}\n`, ['added'])],
      ['capital run', () => splitCapitalRuns('A'.repeat(mb))],
      ['unclosed scripts', () => replaceScriptAndStyle('<script'.repeat(mb / 7), ' ')],
      ['unclosed tags', () => replaceTags('<x'.repeat(mb / 2), ' ')],
      ['unclosed links', () => replaceMarkdownLinks('['.repeat(mb))],
      ['links without targets', () => replaceMarkdownLinks('[a]('.repeat(mb / 4))],
      ['ls -F line', () => isListingLine(`//${'\t+/\t+/'.repeat(mb / 6)}\u0000`)],
      ['quotes', () => trimEnds(`x${'"'.repeat(mb)}x`, '"', '"')],
    ];
    for (const [name, run] of inputs) {
      const started = performance.now();
      run();
      expect({ name, fast: performance.now() - started < 1000 }).toEqual({ name, fast: true });
    }
  });
});
