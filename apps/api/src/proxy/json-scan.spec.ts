import fc from 'fast-check';
import { commonPrefixLength, scanMessages, unchangedElements } from './json-scan';

/** What scanMessages must find: the bytes of each element, as JSON.parse reads them. */
function elements(body: Buffer): unknown[] | undefined {
  const layout = scanMessages(body);
  if (!layout) return undefined;
  return layout.items.map(([s, e]) => JSON.parse(body.toString('utf8', s, e)));
}

describe('scanMessages', () => {
  it('finds each message of the top-level messages array, whatever strings, nesting, spacing and unicode they hold', () => {
    const messages = [
      { role: 'user', content: 'brackets ] [ } { and "quotes" and \\ backslashes \\" and ünïcödé ✓ 😀' },
      { role: 'assistant', content: [{ type: 'text', text: '"messages": [1, 2]' }], nested: { messages: [{ a: [] }] } },
      42,
      'a string',
      null,
      [],
    ];
    const body = Buffer.from(`{ "model" : "m", "messages" :\n [ ${messages.map((m) => JSON.stringify(m, null, 2)).join(' ,\n ')} ] , "stream": true }`);
    expect(elements(body)).toEqual(messages);
  });

  it('matches JSON.parse on any body with a messages array (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue()), fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 3 }), fc.boolean(), (messages, rest, pretty) => {
        delete rest.messages;
        const body = Buffer.from(JSON.stringify({ ...rest, messages, tail: 'x' }, null, pretty ? 2 : undefined));
        expect(elements(body)).toEqual(JSON.parse(JSON.stringify(messages)));
      }),
      { numRuns: 300 },
    );
  });

  it('gives up on what is not an object with a messages array (the caller then parses the whole body)', () => {
    for (const text of ['[]', '{"messages": {"a": 1}}', '{"model": "messages"}', '{"messages": [1,]}', '{"messages": [1', '"x"', '{"nested": {"messages": []}}']) {
      expect(scanMessages(Buffer.from(text))).toBeUndefined();
    }
    expect(scanMessages(Buffer.from('{"messages": []}'))).toEqual({ start: 13, end: 15, items: [] });
  });
});

describe('scanMessages resumed from the previous body', () => {
  it('lays out any body as a scan from its start does, whatever the previous body was (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.jsonValue(), { maxLength: 8 }),
        fc.array(fc.jsonValue(), { maxLength: 4 }),
        fc.nat(8),
        fc.boolean(),
        fc.nat(40),
        fc.constantFrom('same', 'longer', 'cut'),
        (history, added, edited, pretty, cutAt, system) => {
          const write = (messages: unknown[], head: string) => Buffer.from(JSON.stringify({ model: 'm', system: head, messages, stream: false }, null, pretty ? 1 : undefined));
          const before = write(history, 'sys');
          const previous = scanMessages(before);
          if (!previous) return;
          const place = { bytes: before, start: previous.start, ranges: previous.items };
          const next = [...history, ...added];
          if (edited < next.length) next[edited] = { edited: next[edited] };
          let after = write(next, system === 'longer' ? 'sys, longer' : 'sys');
          if (system === 'cut') after = after.subarray(0, Math.max(0, after.length - cutAt));
          expect(scanMessages(after, 'messages', place)).toEqual(scanMessages(after));
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('reads only what follows the elements the previous body shares', () => {
    const history = Array.from({ length: 50 }, (_, k) => ({ role: k % 2 ? 'assistant' : 'user', content: `message ${k}` }));
    const before = Buffer.from(JSON.stringify({ model: 'm', messages: history }));
    const previous = scanMessages(before)!;
    const after = Buffer.from(JSON.stringify({ model: 'm', messages: [...history, { role: 'user', content: 'next' }] }));
    const resumed = scanMessages(after, 'messages', { bytes: before, start: previous.start, ranges: previous.items })!;
    expect(resumed).toEqual(scanMessages(after));
    // The elements before the last shared one are the previous layout's.
    expect(resumed.items.slice(0, 49)).toEqual(previous.items.slice(0, 49));
  });
});

describe('commonPrefixLength', () => {
  it('counts the equal bytes at the start, across 64 KiB steps', () => {
    const a = Buffer.alloc(200_000, 7);
    const b = Buffer.from(a);
    expect(commonPrefixLength(a, b)).toBe(200_000);
    b[150_001] = 8;
    expect(commonPrefixLength(a, b)).toBe(150_001);
    expect(commonPrefixLength(a, b.subarray(0, 10))).toBe(10);
  });
});

describe('unchangedElements', () => {
  const place = (text: string) => {
    const bytes = Buffer.from(text);
    const layout = scanMessages(bytes)!;
    return { bytes, start: layout.start, ranges: layout.items };
  };

  it('finds the unchanged elements when a field before the array changed length', () => {
    const before = place('{"model":"m","messages":[{"a":1},{"b":2},{"c":3}]}');
    const after = place('{"model":"m","stream":true,"messages":[{"a":1},{"b":2},{"c":4},{"d":5}]}');
    const unchanged = unchangedElements(before, after);
    expect([0, 1, 2, 3].map(unchanged)).toEqual([true, true, false, false]);
  });

  it('stops at the first changed byte of the array, even when a later element is the same again', () => {
    const before = place('{"messages":[{"a":1},{"b":2},{"c":3}]}');
    const after = place('{"messages":[{"a":9},{"b":2},{"c":3}]}');
    expect([0, 1, 2].map(unchangedElements(before, after))).toEqual([false, false, false]);
    // Same bytes, shifted inside the array (spacing): not the same place.
    const spaced = place('{"messages":[ {"a":1},{"b":2}]}');
    expect([0, 1].map(unchangedElements(before, spaced))).toEqual([false, false]);
  });
});
