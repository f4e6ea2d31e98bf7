import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { jsonSha256 } from './json-hash';

const whole = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex');

describe('jsonSha256', () => {
  it('equals the hash of JSON.stringify for any parsed JSON value', () => {
    fc.assert(fc.property(fc.jsonValue(), (value) => jsonSha256(value) === whole(value)));
  });

  it('equals it for strings longer than a slice, with escapes, lone surrogates and pairs at every cut', () => {
    const slice = 1 << 16;
    const unit = fc.constantFrom('a', '"', '\\', '\n', '\u0001', '\ud83d', '\ude00', '\ud83d\ude00', 'é');
    fc.assert(
      fc.property(fc.array(unit, { maxLength: 40 }), fc.integer({ min: slice - 3, max: 2 * slice + 3 }), (tail, size) => {
        const text = 'x'.repeat(size) + tail.join('');
        return jsonSha256({ messages: [{ role: 'tool', content: text }] }) === whole({ messages: [{ role: 'tool', content: text }] });
      }),
      { numRuns: 60 },
    );
    // A pair cut exactly at the slice boundary.
    const pair = `${'y'.repeat(slice - 1)}\ud83d\ude00${'z'.repeat(slice)}`;
    expect(jsonSha256([pair])).toBe(whole([pair]));
  });

  it('leaves out undefined members and writes undefined array items as null, as JSON.stringify does', () => {
    const value = { a: undefined, b: [undefined, 1], c: 'x' };
    expect(jsonSha256(value)).toBe(whole(value));
  });
});
