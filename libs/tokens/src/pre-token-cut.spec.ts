import fc from 'fast-check';
import { countTextSync } from './encoders';
import { cutAtPreTokenBoundaries } from './pre-token-cut';
import { Encoding } from './types';

const ENCODINGS: Encoding[] = ['o200k_base', 'cl100k_base'];

/** Text made of what a cut meets: line feeds and carriage returns, spaces, tabs, slashes, punctuation, letters, digits, non-ASCII. */
const mixedText = fc
  .array(fc.constantFrom('\n', '\r\n', '\n\n', ' ', '  ', '\t', '/', '//', '.', '...', '"', "'s", 'abc', 'Word', 'x', '123', '4567', 'é', '日本', '🙂', '-', '|', '#', '\u00a0', '\u2028'), {
    maxLength: 400,
  })
  .map((parts) => parts.join(''));

describe('cutAtPreTokenBoundaries', () => {
  it.each(ENCODINGS)('pieces count to the whole text in %s, wherever the cuts fall', (encoding) => {
    fc.assert(
      fc.property(mixedText, fc.integer({ min: 1, max: 64 }), (text, pieceChars) => {
        const pieces = cutAtPreTokenBoundaries(text, pieceChars);
        expect(pieces.join('')).toBe(text);
        expect(pieces.reduce((sum, piece) => sum + countTextSync(piece, encoding), 0)).toBe(countTextSync(text, encoding));
      }),
      { numRuns: 300 },
    );
  });

  it('cuts log text near the piece size, and leaves a text without line breaks whole', () => {
    const line = '2026-11-28T03:00:00.000Z INFO  [http] GET /api/v1/items/1 200 1.2ms\n';
    const text = line.repeat(20_000);
    const pieces = cutAtPreTokenBoundaries(text, 100_000);
    expect(pieces.length).toBeGreaterThan(10);
    expect(pieces.every((p) => p.length <= 100_000 + line.length)).toBe(true);
    expect(pieces.reduce((sum, p) => sum + countTextSync(p, 'o200k_base'), 0)).toBe(countTextSync(text, 'o200k_base'));
    const blob = 'QUJD'.repeat(100_000);
    expect(cutAtPreTokenBoundaries(blob, 1000)).toEqual([blob]);
  });
});
