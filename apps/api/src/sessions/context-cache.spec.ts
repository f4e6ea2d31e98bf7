import { ContextCache, ContextSource } from './context-cache';

const source = (fingerprint: string, throughSeq: number): ContextSource => ({ fingerprint, throughSeq, messages: [], bodies: new Map() });

describe('ContextCache', () => {
  it('returns an entry only for the same fingerprint, and drops it otherwise', () => {
    const cache = new ContextCache(1000);
    const s = source('f1', 3);
    cache.set('a', s, 10);
    expect(cache.get('a', 'f1')).toBe(s);
    expect(cache.get('a', 'f2')).toBeUndefined();
    expect(cache.get('a', 'f1')).toBeUndefined();
    expect(cache.size).toEqual({ entries: 0, bytes: 0 });
  });

  it('keeps the source that reaches further when an older one arrives late', () => {
    const cache = new ContextCache(1000);
    const newer = source('f', 5);
    cache.set('a', newer, 10);
    cache.set('a', source('f', 4), 10);
    expect(cache.get('a', 'f')).toBe(newer);
  });

  it('evicts the least recently used entries past its byte budget', () => {
    const cache = new ContextCache(100);
    cache.set('a', source('f', 1), 40);
    cache.set('b', source('f', 1), 40);
    cache.get('a', 'f');
    cache.set('c', source('f', 1), 40);
    expect(cache.get('b', 'f')).toBeUndefined();
    expect(cache.get('a', 'f')).toBeDefined();
    expect(cache.get('c', 'f')).toBeDefined();
    const c = cache.get('c', 'f')!;
    cache.grow('c', c, 50);
    expect(cache.size.bytes).toBeLessThanOrEqual(100);
    expect(cache.get('a', 'f')).toBeUndefined();
  });

  it('stores nothing when disabled or when one entry exceeds the budget', () => {
    const off = new ContextCache(0);
    off.set('a', source('f', 1), 1);
    expect(off.get('a', 'f')).toBeUndefined();
    const small = new ContextCache(10);
    small.set('a', source('f', 1), 11);
    expect(small.get('a', 'f')).toBeUndefined();
  });
});
