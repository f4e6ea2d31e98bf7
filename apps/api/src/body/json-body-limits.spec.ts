import { mayHoldUnstorableText, nestsDeeperThan, unstorableText } from './json-body-limits';

describe('nestsDeeperThan', () => {
  it('counts arrays and objects, not brackets inside strings', () => {
    expect(nestsDeeperThan(Buffer.from('{"a":[[1]]}'), 3)).toBe(false);
    expect(nestsDeeperThan(Buffer.from('{"a":[[[1]]]}'), 3)).toBe(true);
    expect(nestsDeeperThan(Buffer.from('{"a":"[[[[[[\\"[[[["}'), 1)).toBe(false);
    expect(nestsDeeperThan(Buffer.from(`${'['.repeat(100_000)}${']'.repeat(100_000)}`), 128)).toBe(true);
  });
});

describe('unstorable text', () => {
  it('flags NUL and surrogate escapes in the bytes, and confirms them on the parsed value', () => {
    const nul = '{"a":"x\\u0000"}';
    expect(mayHoldUnstorableText(Buffer.from(nul))).toBe(true);
    expect(unstorableText(JSON.parse(nul))).toEqual({ field: 'a', message: 'contains U+0000 (NUL), which PostgreSQL cannot store in text' });
    const pair = '{"a":["\\uD83D\\uDE00"]}';
    expect(mayHoldUnstorableText(Buffer.from(pair))).toBe(true);
    expect(unstorableText(JSON.parse(pair))).toBeUndefined();
    expect(unstorableText(JSON.parse('{"a":[1,{"b":"\\udc00"}]}'))?.field).toBe('a[1].b');
    expect(unstorableText(JSON.parse('{"a":{"\\u0000k":1}}'))?.field).toBe('a.\\u0000k');
    expect(mayHoldUnstorableText(Buffer.from('{"a":"\\u00e9 \\u0041 plain"}'))).toBe(false);
  });
});
