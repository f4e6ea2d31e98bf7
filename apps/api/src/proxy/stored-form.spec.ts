import fc from 'fast-check';
import { jsonClone } from './stored-form';

/**
 * Whether two JSON values are the same: primitives by Object.is, arrays element by element, objects plain (Object.prototype)
 * with the same own keys in the same order. (Jest's toStrictEqual compares `constructor`, which a JSON object may hold as a key.)
 */
function sameJson(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return Object.is(a, b);
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => i in a && sameJson(x, b[i]));
  }
  if (Object.getPrototypeOf(a) !== Object.prototype || Object.getPrototypeOf(b) !== Object.prototype) return false;
  const ka = Reflect.ownKeys(a);
  const kb = Reflect.ownKeys(b);
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && sameJson((a as Record<string, unknown>)[k as string], (b as Record<string, unknown>)[k as string]));
}

describe('jsonClone', () => {
  const leaf = fc.oneof(
    fc.string(),
    fc.string({ unit: 'binary' }), // lone surrogates included
    fc.double(), // NaN, ±Infinity, -0 included
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.constant(() => 1),
    fc.constant(Symbol('s')),
    fc.date({ noInvalidDate: true }),
  );
  const key = fc.oneof(fc.string(), fc.constantFrom('__proto__', '0', '10', '2', 'toJSON', 'constructor'));
  const { value } = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('value'), { maxLength: 5 }), fc.dictionary(key, tie('value'), { maxKeys: 6 })),
  }));

  it('gives what JSON.parse(JSON.stringify(value)) gives, keys in the same order', () => {
    fc.assert(
      fc.property(fc.oneof(fc.array(value), fc.dictionary(key, value)), (v) => {
        const expected = JSON.parse(JSON.stringify(v)) as unknown;
        const got = jsonClone(v);
        expect(JSON.stringify(got)).toBe(JSON.stringify(expected));
        expect(sameJson(got, expected)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps a __proto__ key as an own property and leaves the prototype alone', () => {
    const parsed = JSON.parse('{"__proto__":{"polluted":true},"a":1}') as Record<string, unknown>;
    const got = jsonClone(parsed) as Record<string, unknown>;
    expect(Object.keys(got)).toEqual(['__proto__', 'a']);
    expect(Object.getPrototypeOf(got)).toBe(Object.prototype);
    expect((got as { polluted?: boolean }).polluted).toBeUndefined();
    expect(JSON.stringify(got)).toBe('{"__proto__":{"polluted":true},"a":1}');
  });

  it('shares strings instead of copying them, and copies objects and arrays', () => {
    const text = 'x'.repeat(1000);
    const blocks = [{ type: 'text', text, extra: undefined }];
    const got = jsonClone(blocks) as Array<Record<string, unknown>>;
    expect(got).not.toBe(blocks);
    expect(got[0]).not.toBe(blocks[0]);
    expect(got[0]).toEqual({ type: 'text', text });
    expect('extra' in got[0]).toBe(false);
  });

  it('unwraps boxed primitives, applies toJSON with its key, and throws on a BigInt as JSON.stringify does', () => {
    const seen: string[] = [];
    const value = { n: new Number(3), s: new String('a'), b: new Boolean(false), t: { toJSON: (k: string) => (seen.push(k), 'T') }, z: -0 };
    expect(sameJson(jsonClone(value), JSON.parse(JSON.stringify(value)))).toBe(true);
    expect(seen).toEqual(['t', 't']);
    expect(() => jsonClone({ big: BigInt(1) })).toThrow(TypeError);
    expect(() => JSON.stringify({ big: BigInt(1) })).toThrow(TypeError);
  });
});
