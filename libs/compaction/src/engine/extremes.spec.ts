import { maxOf, minOf } from './extremes';

describe('maxOf / minOf', () => {
  it('take the start into account and work on any iterable', () => {
    expect(maxOf(5, [1, 2, 3])).toBe(5);
    expect(maxOf(0, new Set([4, 9, 2]))).toBe(9);
    expect(minOf(Infinity, [])).toBe(Infinity);
    expect(minOf(7, [8, 3, 5])).toBe(3);
  });

  it('handle more values than a spread call can take (a long session: 500,000 seqs)', () => {
    const seqs = Array.from({ length: 500_000 }, (_, i) => i + 1);
    expect(() => Math.max(...seqs)).toThrow(RangeError);
    expect(maxOf(0, seqs)).toBe(500_000);
    expect(minOf(Infinity, seqs)).toBe(1);
  });
});
