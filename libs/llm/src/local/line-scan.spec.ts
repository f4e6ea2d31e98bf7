// Each scan must do exactly what the regular expression it replaced did: the old regexes are the
// oracles, on short strings drawn from the characters that matter to them. The last test checks
// the scans stay linear on the inputs that made the regexes blow up.
import fc from 'fast-check';
import { boldLabel, isBracketTagLine, listedLabel, markdownHeading, splitClauses, splitSentences, withoutBracketHeader } from './line-scan';

const from = (alphabet: string[], maxLength = 16) => fc.array(fc.constantFrom(...alphabet), { maxLength }).map((a) => a.join(''));
const runs = { numRuns: 4000 };

describe('line scans match the regexes they replace', () => {
  it('splitSentences', () => {
    const re = /(?<=[.!?])\s+(?=[A-Z0-9"'`([*])/;
    fc.assert(fc.property(from(['.', '!', '?', ' ', '\n', '\u00a0', 'A', 'b', '1', '"', '(', '*', '-', 'x. Y']), (s) => JSON.stringify(splitSentences(s)) === JSON.stringify(s.split(re))), runs);
  });

  it('splitClauses', () => {
    const re = /(?<=[.;!?])\s+|,(?=\s*")/;
    fc.assert(fc.property(from(['.', ';', '!', ',', ' ', '\t', '"', 'a', ', "', '. ']), (s) => JSON.stringify(splitClauses(s)) === JSON.stringify(s.split(re))), runs);
  });

  it('isBracketTagLine and withoutBracketHeader', () => {
    const line = /^\[[A-Z][A-Z0-9 _-]*(?:[\s:#·][^\]\n]*)?\]:?$/;
    const header = /^\[[A-Z][A-Z0-9 _-]*(?:[\s:#·][^\]\n]*)?\]:?[ \t]*\n?/;
    const alphabet = ['[', ']', 'A', 'Z', '1', ' ', '_', '-', '\t', '\n', ':', '#', '·', 'a', '.', 'SUMMARY', 'CHECKPOINT 2'];
    fc.assert(fc.property(from(alphabet), (s) => isBracketTagLine(s) === line.test(s) && withoutBracketHeader(s) === s.replace(header, '')), runs);
    fc.assert(fc.property(from(alphabet), (s) => isBracketTagLine(`[${s}`) === line.test(`[${s}`) && withoutBracketHeader(`[A${s}`) === `[A${s}`.replace(header, '')), runs);
  });

  it('markdownHeading', () => {
    const re = /^(#{1,6})\s+(.+?)\s*#*$/;
    fc.assert(
      fc.property(from(['#', '##', ' ', '\t', '\n', '\r', 'a', 'C#', '*', ':']), (s) => {
        const m = re.exec(s);
        const got = markdownHeading(s);
        return m ? got?.hashes === m[1] && got.title === m[2] : got === undefined;
      }),
      runs,
    );
  });

  it('boldLabel and listedLabel', () => {
    const bold = /^(?:(?:\d{1,2}[.)]|[-*•])\s+)?\*\*([^*]{2,60}?)\*\*\s*(?::|—|–|-|$)/;
    const listed = /^(\d{1,2}[.)]|[-*•])\s+([A-Z][^:—–\n]{1,60}?)\s*(?::|—|–|\s-\s|$)/;
    const alphabet = ['*', '**', '1', '12', '123', '.', ')', '-', '•', ' ', '\n', 'A', 'b', ':', '—', '–', 'Key Decisions', 'x'.repeat(30)];
    fc.assert(fc.property(from(alphabet, 12), (s) => boldLabel(s) === bold.exec(s)?.[1]), runs);
    fc.assert(
      fc.property(from(alphabet, 12), (s) => {
        const m = listed.exec(s);
        const got = listedLabel(s);
        return m ? got?.marker === m[1] && got.label === m[2] : got === undefined;
      }),
      runs,
    );
  });

  it('stays linear on a megabyte', () => {
    const started = Date.now();
    const spaces = ' '.repeat(1 << 20);
    splitSentences(`a.${spaces}`);
    splitClauses(`a,${spaces}`);
    isBracketTagLine(`[A${spaces}`);
    withoutBracketHeader(`[A${' x'.repeat(1 << 19)}`);
    markdownHeading(`#${spaces}x${spaces}`);
    boldLabel(`- **${'x'.repeat(50)}**${spaces}`);
    listedLabel(`1. A${spaces}`);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
