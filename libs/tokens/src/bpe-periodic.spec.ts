import fc from 'fast-check';
import cl100k from 'js-tiktoken/ranks/cl100k_base';
import o200k from 'js-tiktoken/ranks/o200k_base';
import { createTokenCounter } from './bpe-counter';

/**
 * Long runs of one ASCII character are counted by their period (issue #15: a 1 MB run of spaces
 * or dashes took 1.3-2.8 s to merge). The periodic count must equal the full merge: here the
 * threshold is lowered so runs of a few thousand bytes take the periodic path, and the same
 * counter with the path off is the oracle.
 */
describe('periodic counting of long single-character runs', () => {
  const ranks = { o200k_base: o200k, cl100k_base: cl100k };
  for (const [name, data] of Object.entries(ranks)) {
    const periodic = createTokenCounter(data, { uniformRunBytes: 800 });
    const exact = createTokenCounter(data, { uniformRunBytes: Number.MAX_SAFE_INTEGER });

    it(`${name}: equals the full merge on runs with short heads and tails`, () => {
      const run = fc.constantFrom(' ', '-', '=', '*', '#', '_', '.', '~', '\t', '/', '+', '!', '|', '\n', 'a', 'Z', '0', '>', '`');
      const edge = fc.array(fc.constantFrom(' ', '-', 'a', '\n', '/', 'x1', '#', ''), { maxLength: 4 }).map((a) => a.join(''));
      fc.assert(
        fc.property(run, fc.integer({ min: 800, max: 6000 }), edge, edge, (c, n, head, tail) => {
          const text = `${head}${c.repeat(n)}${tail}`;
          return periodic(text) === exact(text);
        }),
        { numRuns: 120 },
      );
    });

    it(`${name}: a megabyte of spaces, dashes or equals signs in a line counts fast and the same as a 300 KB exact merge extrapolates`, () => {
      for (const c of [' ', '-', '=']) {
        const fast = createTokenCounter(data);
        const started = Date.now();
        const big = fast(`x${c.repeat(1 << 20)}\ny`);
        expect(Date.now() - started).toBeLessThan(1_000);
        // The same piece at 300 KB, merged exactly, against the periodic path at that size.
        const mid = `x${c.repeat(300_000)}\ny`;
        expect(createTokenCounter(data, { uniformRunBytes: 800 })(mid)).toBe(exact(mid));
        expect(big).toBeGreaterThan(0);
      }
    });
  }
});
