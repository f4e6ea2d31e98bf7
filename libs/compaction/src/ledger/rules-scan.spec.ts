// The scans that replaced super-linear or undecidable regexes in rules.ts do exactly what those
// regexes did: the old regexes are the oracles, on short strings drawn from the characters that
// matter to them; then a megabyte of the input that made the regex slow.
import fc from 'fast-check';
import { blankUrls, errorCodesIn, identifierTokens, matchesNotAfter, numbersIn } from './rules';

const from = (alphabet: string[], maxLength = 16) => fc.array(fc.constantFrom(...alphabet), { maxLength }).map((a) => a.join(''));
const runs = { numRuns: 4000 };

describe('rules.ts scans match the regexes they replace', () => {
  it('blankUrls', () => {
    const url = /\b[a-z][a-z0-9+.-]*:\/\/\S*/gi;
    const alphabet = ['h', 'T', '1', '+', '.', '-', '_', ':', '/', '://', ' ', '\t', 'x', 'é', 'http://a'];
    fc.assert(fc.property(from(alphabet), (s) => blankUrls(s) === s.replace(url, (m) => ' '.repeat(m.length))), runs);
    expect(blankUrls('see https://example.com/a?b=1 and ftp://x')).toBe(`see ${' '.repeat(25)} and ${' '.repeat(7)}`);
  });

  it('matchesNotAfter (path tokens)', () => {
    const old = /(?<![\w.@+~/\\-])(?:[A-Za-z]:\\|~\/|\.{1,2}\/|\/)?[\w@+-][\w.@+-]*(?:[/\\][\w.@+-]+)*\/?/g;
    const token = /(?:[A-Za-z]:\\|~\/|\.{1,2}\/|\/)?[\w@+-][\w.@+-]*(?:[/\\][\w.@+-]+)*\/?/y;
    const alphabet = ['a', 'C', ':', '\\', '~', '/', '.', '..', '@', '+', '-', ' ', '(', '"', 'x.py'];
    fc.assert(
      fc.property(from(alphabet), (s) => {
        const want = [...s.matchAll(old)].map((m) => [m.index, m[0]]);
        const got = [...matchesNotAfter(s, /[\w.@+~/\\-]/, token)].map((m) => [m.index, m.text]);
        return JSON.stringify(got) === JSON.stringify(want);
      }),
      runs,
    );
  });

  it('identifierTokens', () => {
    const old = /(?<![\w$/\\-])[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)*(?![\w/]|-\w)/g;
    const alphabet = ['a', 'B', '_', '1', '.', '::', ':', '/', '-', '$', '\\', ' ', '(', 'foo.bar'];
    fc.assert(fc.property(from(alphabet), (s) => JSON.stringify(identifierTokens(s)) === JSON.stringify([...s.matchAll(old)].map((m) => m[0]))), runs);
  });

  it('numbersIn (settings, then numbers with units)', () => {
    const UNIT_SPACED = 'ms|µs|us|ns|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?|[kKMGT]i?B|bytes?|tokens?|req/s|rps|qps|rpm|px|fps|[kMG]Hz';
    const UNIT_TIGHT = '%|x|k|K|M|B';
    const numberWithUnit = new RegExp(`(?<![\\w.:/-])\\d+(?:\\.\\d+)?(?:\\s?(?:${UNIT_SPACED})\\b|(?:${UNIT_TIGHT})(?![\\w%]))`, 'g');
    const setting = new RegExp(`(?<![\\w.-])[A-Za-z_][\\w.-]{1,40} ?[=:] ?-?\\d+(?:\\.\\d+)?(?:\\s?(?:${UNIT_SPACED})\\b|(?:${UNIT_TIGHT})(?![\\w%]))?(?![\\w.:/-])`, 'g');
    const oracle = (line: string) => {
      const out: string[] = [];
      const settings = line.replace(setting, (m) => {
        out.push(m);
        return ' '.repeat(m.length);
      });
      for (const m of settings.matchAll(numberWithUnit)) out.push(m[0]);
      return out;
    };
    const alphabet = ['1', '25', '.', ' ', 'ms', 's', 'seconds', 'KiB', 'MB', '%', 'x', 'k', 'B', 'a', 'timeout', '=', ':', '-', '/', 'req/s', 'µs', '_'];
    fc.assert(fc.property(from(alphabet, 10), (s) => JSON.stringify(numbersIn(s)) === JSON.stringify(oracle(s))), runs);
    expect(numbersIn('timeout=30s, took 1.5 ms and 80% of 2 GiB')).toEqual(['timeout=30s', '1.5 ms', '80%', '2 GiB']);
  });

  it('the HTTP status with its reason phrase', () => {
    const reasons: Record<string, string> = { '404': 'not found', '500': 'internal server error', '429': 'too many requests' };
    const re = new RegExp(`\\b([45]\\d\\d) (${Object.values(reasons).join('|')})\\b`, 'gi');
    const oracle = (s: string) => [...s.matchAll(re)].filter((m) => reasons[m[1]] === m[2].toLowerCase()).map((m) => m[0]);
    const alphabet = ['404', '500', '429', '4040', ' ', 'not found', 'Not Found', 'internal server error', 'too many requests', 'x', '_', 'd'];
    fc.assert(
      fc.property(from(alphabet, 8), (s) => {
        const got = errorCodesIn(s).filter((c) => /^\d{3} [A-Za-z]/.test(c));
        return JSON.stringify(got) === JSON.stringify(oracle(s));
      }),
      runs,
    );
  });

  it('stays linear on a megabyte', () => {
    const started = Date.now();
    blankUrls('a'.repeat(1 << 20));
    blankUrls(`${'a'.repeat(1 << 20)}://${'b'.repeat(1 << 20)}`);
    blankUrls('a://'.repeat(1 << 18));
    errorCodesIn('404 '.repeat(1 << 18));
    identifierTokens('a.'.repeat(1 << 19));
    numbersIn(`${'1'.repeat(1 << 20)}x1`);
    numbersIn(`${'a'.repeat(40)}=${'1'.repeat(1 << 20)}`);
    identifierTokens(`${'a'.repeat(1 << 20)}/`);
    Array.from(matchesNotAfter(' a/'.repeat(1 << 18), /[\w.@+~/\\-]/, /[\w@+-][\w.@+-]*(?:[/\\][\w.@+-]+)*\/?/y));
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
