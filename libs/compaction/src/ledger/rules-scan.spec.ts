// The scans that replaced super-linear or undecidable regexes in rules.ts do exactly what those
// regexes did: the old regexes are the oracles, on short strings drawn from the characters that
// matter to them; then a megabyte of the input that made the regex slow.
import fc from 'fast-check';
import { blankUrls, errorCodesIn } from './rules';

const from = (alphabet: string[], maxLength = 16) => fc.array(fc.constantFrom(...alphabet), { maxLength }).map((a) => a.join(''));
const runs = { numRuns: 4000 };

describe('rules.ts scans match the regexes they replace', () => {
  it('blankUrls', () => {
    const url = /\b[a-z][a-z0-9+.-]*:\/\/\S*/gi;
    const alphabet = ['h', 'T', '1', '+', '.', '-', '_', ':', '/', '://', ' ', '\t', 'x', 'é', 'http://a'];
    fc.assert(fc.property(from(alphabet), (s) => blankUrls(s) === s.replace(url, (m) => ' '.repeat(m.length))), runs);
    expect(blankUrls('see https://example.com/a?b=1 and ftp://x')).toBe(`see ${' '.repeat(25)} and ${' '.repeat(7)}`);
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
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
