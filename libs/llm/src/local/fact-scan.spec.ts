// The fact scans do exactly what signals.ts's fact regexes did: those regexes (below, as they were
// built) are the oracles, on short strings drawn from the words and characters that matter to
// them; then a megabyte of the inputs that made the regexes slow (or could have).
import fc from 'fast-check';
import { assignments, changeStatements, copulaStatements, type FactMatch } from './fact-scan';

const QUOTED = '"[^"\\n]{1,60}"|\'[^\'\\n]{1,60}\'|`[^`\\n]{1,60}`';
const VALUE_LIKE = `(?:${QUOTED}|[$€£]?-?\\d[\\d,]*(?:\\.\\d+)?(?:\\s?(?:%|[A-Za-zµ/]{1,8}\\b))?|v?\\d+(?:\\.\\d+){1,3}\\b|(?:true|false|on|off|enabled|disabled|null|none|nil)(?=\\s*(?:[.,;:)!?]|$))|[A-Za-z_][\\w./-]*\\d[\\w./-]*)`;
const ANY_VALUE = `(?:${QUOTED}|[^\\s,;)]{1,60})`;
const KEY_WORDS = '[A-Za-z_][\\w.\\-]*(?:\\s+[A-Za-z_][\\w.\\-]*){0,2}';
const CHANGE_VERBS = 'set|changed|updated|increased|decreased|reduced|raised|lowered|bumped|configured|moved|pinned';
const FACT_ASSIGN = new RegExp(`(?:^|[\\s(,;])(?:export\\s+|set\\s+|let\\s+|const\\s+|var\\s+)?([A-Za-z_][\\w.\\-]*(?:\\[[^\\]\\n]{1,30}\\])?)\\s*(?::=|=)(?![=>~])\\s*(${ANY_VALUE})`, 'g');
const FACT_COPULA = new RegExp(
  `(?:^|[\\s(])(${KEY_WORDS})\\s+(?:is|are|was|were|has been|have been|remains|stays)\\s+(?:now\\s+|currently\\s+|still\\s+|already\\s+)?(?:(?:${CHANGE_VERBS})\\s+to\\s+(${ANY_VALUE})|(${VALUE_LIKE}))(?=[\\s.,;:)!?]|$)`,
  'gi',
);
const FACT_CHANGE = new RegExp(
  `\\b(?:set|sets|setting|change|changes|changed|changing|update|updates|updated|bump|bumped|increase|increased|decrease|decreased|raise|raised|lower|lowered|reduce|reduced|configure|configured|pin|pinned)\\s+(?:the\\s+)?(${KEY_WORDS}?)\\s+(?:from\\s+\\S+\\s+)?to\\s+(${ANY_VALUE})`,
  'gi',
);

const from = (alphabet: string[], maxLength = 14) => fc.array(fc.constantFrom(...alphabet), { maxLength }).map((a) => a.join(''));
const runs = { numRuns: 20_000 };
const oracle = (re: RegExp, s: string): FactMatch[] =>
  [...s.matchAll(re)].map((m) => ({ start: m.index ?? 0, end: (m.index ?? 0) + m[0].length, key: m[1], value: m[2] ?? m[3] }));
const same = (scan: (s: string) => Iterable<FactMatch>, re: RegExp) => (s: string) => JSON.stringify([...scan(s)]) === JSON.stringify(oracle(re, s));
/** A long run of one piece, so that the 60- and 30-character bounds and the 8-letter units are reached. */
const longish = (pieces: string[]) => fc.tuple(fc.constantFrom(...pieces), fc.integer({ min: 1, max: 70 })).map(([p, k]) => p.repeat(k));
const mixed = (alphabet: string[], long: string[]) => fc.array(fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...alphabet) }, { weight: 1, arbitrary: longish(long) }), { maxLength: 10 }).map((a) => a.join(''));

const pick = (...xs: string[]) => fc.constantFrom(...xs);
/** Statements built from the parts each regex looks for, with near misses, one or two in a row. */
const statements = (parts: fc.Arbitrary<string>[]) =>
  fc.array(fc.tuple(...parts).map((p) => p.join('')), { minLength: 1, maxLength: 2 }).map((a) => a.join(''));
const gap = from([' ', '  ', '\t', '\n'], 2);
const quotes = ['"a b"', '"', "'x'", "'", '`c`', '``', '""'];
const value = fc.oneof(
  from(['5', '1', ',', '.', '-', '$', '€', 'v', 'v2.0', 'v1.2.3', 'V1.2.3.4.5', '1.2.3', '.1', 'ms', 'MiB', 'abcdefghi', '%', 'µ', 'μ', '/', ' ', 'true', 'on', 'None', 'one', 'a', '_', ':', '!', ')', '~', 'x1', ';', ...quotes], 6),
  longish(['1', '1,', 'a', 'a1.', '.1', 'x', ' ', 'ms', 'a"', '"']),
);
const assignParts = [
  from([' ', '(', ',', ';', 'a', ')'], 2),
  pick('', 'export ', 'set  ', 'let', 'Set ', 'var\t', 'const'),
  pick('a', 'X_1', 'a.b-c', '1', '', 'set', '_'),
  pick('', '', '[k]', '[]', `[${'x'.repeat(30)}]`, `[${'x'.repeat(31)}]`, '[a\n]', '['),
  from([' ', '\t'], 2),
  pick('=', '=', ':=', '==', '=>', '=~', ':', ''),
  from([' ', '\n'], 2),
  value,
];
const copulaParts = [
  from([' ', '(', 'a', '\n'], 2),
  from(['x', 'Max', ' ', '  ', 'a.b', '_k', '1', '-', '\t', 'is'], 5),
  gap,
  pick('is', 'IS', 'has been', 'have  been', 'are', 'stays', 'isn', 'x'),
  gap,
  pick('', '', 'now ', 'still  ', 'now', 'currently\n'),
  pick('', '', 'set to ', 'Changed  to ', 'set to', 'moved\tTO ', 'pinned '),
  value,
  from([' ', '.', ',', '~', 'a', '\n', ')'], 2),
];
const changeParts = [
  pick('', ' ', 'a', '_', '.', '\n'),
  pick('set', 'Sets', 'setting', 'bumped', 'configure', 'setx', 'pin', 'RAISED'),
  gap,
  pick('', '', 'the ', 'THE  ', 'the', 'theory '),
  from(['x', 'max', ' ', 'a.b', '_', '1', 'from', 'to', '\n', 'y-z'], 5),
  gap,
  pick('', '', 'from 1 ', 'FROM  "a b" ', 'from  ', 'from x', 'from\t-\n'),
  pick('to ', 'To\t', 'to', 'tomorrow ', 'to\n'),
  value,
];

describe('signals.ts fact scans match the regexes they replace', () => {
  it('assignments (FACT_ASSIGN)', () => {
    const alphabet = ['a', 'X_1', '.', '-', ' ', '\t', '\n', '(', ',', ';', ')', '=', ':=', ':', '>', '~', '[', ']', 'k', 'export', 'set', 'let', 'const', 'var', 'Set', '"', "'", '`', '"v"', '5', '$'];
    fc.assert(fc.property(from(alphabet), same(assignments, FACT_ASSIGN)), runs);
    fc.assert(fc.property(mixed(alphabet, ['a', 'k', '1', ' ', '"', 'x"']), same(assignments, FACT_ASSIGN)), runs);
    fc.assert(fc.property(statements(assignParts), same(assignments, FACT_ASSIGN)), runs);
  });

  it('copulaStatements (FACT_COPULA)', () => {
    const alphabet = [
      'x', 'Max retries', 'a.b', ' ', '  ', '\n', '(', 'is', 'IS', 'has been', 'are', 'stays', 'now', 'Still', 'set', 'Changed', 'to', 'TO',
      '5', '-', '$', '€', '1,2', ',', '1.5', '.', 'v', '3', 'ms', 'MiB', 'abcdefghi', '%', 'µ', 'μ', '/', 'true', 'on', 'None', 'one',
      '"a"', "'", '`', '"', 'a1', '_', ':', '!', ')', '~',
    ];
    fc.assert(fc.property(from(alphabet), same(copulaStatements, FACT_COPULA)), runs);
    fc.assert(fc.property(fc.tuple(fc.constantFrom('x is ', 'x are now ', 'a b c was ', 'y is set to '), from(alphabet, 8)).map(([a, b]) => a + b), same(copulaStatements, FACT_COPULA)), runs);
    fc.assert(fc.property(statements(copulaParts), same(copulaStatements, FACT_COPULA)), runs);
    const words = fc.array(pick('x', 'is', 'a1', 'are', 'now', 'set', 'to', '5', 'on', '(x'), { minLength: 1, maxLength: 7 }).map((w) => w.join(' '));
    fc.assert(fc.property(fc.tuple(words, from([' ', '.', '~'], 1)).map((p) => p.join('')), same(copulaStatements, FACT_COPULA)), runs);
    fc.assert(fc.property(fc.tuple(pick('x is ', 'x is now ', 'y are set to '), value, from([' ', '.', 'a', '~', '\n'], 2)).map((p) => p.join('')), same(copulaStatements, FACT_COPULA)), runs);
  });

  it('changeStatements (FACT_CHANGE)', () => {
    const alphabet = ['set', 'Sets', 'bumped', 'configure', 'the', 'THE', 'x', 'max retries', 'a.b', '_', '1', ' ', '  ', '\n', 'from', 'to', 'To', 'tomorrow', '5', '"v"', '"', ',', ';', ')', '-', 'é'];
    fc.assert(fc.property(from(alphabet), same(changeStatements, FACT_CHANGE)), runs);
    fc.assert(fc.property(fc.tuple(fc.constantFrom('set ', 'raise the ', 'bumped x from '), from(alphabet, 8)).map(([a, b]) => a + b), same(changeStatements, FACT_CHANGE)), runs);
    fc.assert(fc.property(statements(changeParts), same(changeStatements, FACT_CHANGE)), runs);
    const words = fc.array(pick('set', 'x', 'the', 'from', 'to', 'a1', '5', 'to5', '"a'), { minLength: 1, maxLength: 8 }).map((w) => w.join(' '));
    fc.assert(fc.property(words, same(changeStatements, FACT_CHANGE)), runs);
  });

  it('examples', () => {
    const pairs = (it: Iterable<FactMatch>) => [...it].map((m) => [m.key, m.value]);
    expect(pairs(assignments('export PORT=8080; x[key] := "a b"'))).toEqual([['PORT', '8080'], ['x[key]', '"a b"']]);
    expect(pairs(copulaStatements('The max retries is now 5. Mode was set to fast.'))).toEqual([['The max retries', '5'], ['Mode', 'fast.']]);
    expect(pairs(changeStatements('We bumped node from 18 to 20 and set the timeout to 30s'))).toEqual([['node', '20'], ['timeout', '30s']]);
  });

  it('stays linear on a megabyte', () => {
    const mb = 1 << 20;
    const drain = (it: Iterable<FactMatch>) => [...it].length;
    const started = Date.now();
    drain(copulaStatements(`x is a${'1'.repeat(mb)}~`));
    drain(copulaStatements(`x is ${'1,'.repeat(mb / 2)}~`));
    drain(copulaStatements(`x is on${' '.repeat(mb)}~`));
    drain(copulaStatements(' a b c is'.repeat(mb / 9)));
    drain(copulaStatements(`x is 1.${'1'.repeat(mb)}`));
    drain(assignments(' a'.repeat(mb / 2)));
    drain(assignments(`a${' '.repeat(mb)}`));
    drain(assignments(`export${' '.repeat(mb)}`));
    drain(assignments('a='.repeat(mb / 2)));
    drain(changeStatements('set '.repeat(mb / 4)));
    drain(changeStatements(`set x from ${'a'.repeat(mb)}`));
    drain(changeStatements(`set the${' '.repeat(mb)}x`));
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
