// The scans that replaced signals.ts's undecidable or super-linear regexes do exactly what those
// regexes did: the old regexes are the oracles, on short strings drawn from the characters that
// matter to them; then a megabyte of the inputs that made the regexes slow.
import fc from 'fast-check';
import { arrowParts, bareFiles, extensionSet, hasExtension, slashPaths, specialFiles } from './signal-scan';
import { BARE_EXT, FILE_EXT, findPaths } from './signals';

const from = (alphabet: string[], maxLength = 16) => fc.array(fc.constantFrom(...alphabet), { maxLength }).map((a) => a.join(''));
const runs = { numRuns: 5000 };
const all = (re: RegExp, s: string) => [...s.matchAll(re)].map((m) => m[0]);
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

describe('signals.ts path scans match the regexes they replace', () => {
  it('slashPaths', () => {
    const old = /(?<![\w:/.@%-])(?:~|\.{1,2})?\/?(?:[\w@+.-]+\/)+[\w@+.-]*[\w@+-]/g;
    const alphabet = ['a', 'Z', '1', '_', '/', '//', '.', '..', '~', '@', '+', '-', ':', '%', ' ', '(', 'é', 'x.py', './', '~/'];
    fc.assert(fc.property(from(alphabet), (s) => same(slashPaths(s), all(old, s))), runs);
    fc.assert(fc.property(from(['a', '/', '.', '+', '-', '~', ' ']), (s) => same(slashPaths(s), all(old, s))), runs);
    expect(slashPaths('see src/a.ts, /usr/bin/python, ./x and ~/y/z or http://h/p')).toEqual(['src/a.ts', '/usr/bin/python', './x', '~/y/z']);
  });

  it('hasExtension', () => {
    const old = new RegExp(`\\.(?:${FILE_EXT})$`, 'i');
    const extensions = extensionSet(FILE_EXT);
    const alphabet = ['.', 'py', 'PY', 'yml', 'YaML', 'htm', 'html', 'jpg', 'JPEG', 'mli', 'ml', 'a', 'tar', '.gz', '/', 'ſ', 'K', 'İ', 'x'];
    fc.assert(fc.property(from(alphabet, 6), (s) => hasExtension(s, extensions) === old.test(s)), runs);
    for (const ext of extensions) expect(old.test(`a.${ext}`) && hasExtension(`a.${ext.toUpperCase()}`, extensions)).toBe(true);
  });

  it('bareFiles', () => {
    const old = new RegExp(`(?<![\\w/.@:-])[A-Za-z0-9_@+-][\\w@+.-]*\\.(?:${BARE_EXT})\\b(?![\\w/(-])`, 'g');
    const extensions = extensionSet(BARE_EXT);
    const alphabet = ['a', 'B', '1', '_', '@', '+', '-', '.', '/', ':', '(', ' ', 'é', 'py', 'yml', 'yaml', 'Py', 'json', 'log', 'setup', '.py', '.md'];
    fc.assert(fc.property(from(alphabet), (s) => same(bareFiles(s, extensions), all(old, s))), runs);
    expect(bareFiles('run setup.py and a.b.config.yaml, not x.log or obj.py(', extensions)).toEqual(['setup.py', 'a.b.config.yaml']);
  });

  it('specialFiles', () => {
    const old = /(?<![\w/.-])(?:Dockerfile|Makefile|Procfile|Gemfile|Rakefile|Jenkinsfile|Vagrantfile|CMakeLists\.txt|\.env(?:\.\w+)?|\.gitignore|\.dockerignore)(?![\w/-])/g;
    const alphabet = ['Dockerfile', 'Makefile', 'CMakeLists.txt', '.env', '.gitignore', '.dockerignore', '.', 'a', '_', '/', '-', ' ', '(', 'Gemfile', 'local'];
    fc.assert(fc.property(from(alphabet, 10), (s) => same(specialFiles(s), all(old, s))), runs);
  });

  it('arrowParts', () => {
    const old = /^(.{3,160}?)\s+(?:→|->|=>)\s+(.+)$/;
    const oracle = (s: string) => {
      const m = old.exec(s);
      return m ? { head: m[1], tail: m[2] } : undefined;
    };
    const alphabet = ['a', 'ls', ' ', '  ', '\t', '\n', '\r', '\u2028', '\u00a0', '→', '->', '=>', '-', '>', '=', ' → ', ' -> ok'];
    fc.assert(fc.property(from(alphabet, 14), (s) => same(arrowParts(s), oracle(s))), runs);
    const long = fc.tuple(fc.integer({ min: 150, max: 170 }), from(alphabet, 8)).map(([k, t]) => 'x'.repeat(k) + t);
    fc.assert(fc.property(fc.tuple(from(alphabet, 6), long), ([a, b]) => same(arrowParts(a + b), oracle(a + b))), runs);
    expect(arrowParts('npm test → 3 passed')).toEqual({ head: 'npm test', tail: '3 passed' });
  });

  it('stays linear on a megabyte', () => {
    const extensions = extensionSet(BARE_EXT);
    const mb = 1 << 20;
    const started = Date.now();
    slashPaths(`/ ${'+a'.repeat(mb / 2)}`);
    slashPaths(`${'+a/'.repeat(mb / 3)}.`);
    slashPaths('a/'.repeat(mb / 2));
    slashPaths(`${'~'.repeat(mb)}/`);
    bareFiles('+a.'.repeat(mb / 3), extensions);
    bareFiles(`${'+a.x'.repeat(mb / 4)}.py`, extensions);
    specialFiles(` .env.${'a'.repeat(mb)}/`);
    specialFiles(' .env'.repeat(mb / 5));
    arrowParts(`abc${' '.repeat(mb)}`);
    arrowParts(`abc${' ->'.repeat(mb / 3)}`);
    arrowParts(`abc -> ${' '.repeat(mb)}\n`);
    arrowParts(`${' → '.repeat(60)}\n${'a'.repeat(mb)}`);
    findPaths(`/ ${'+a.'.repeat(mb / 3)}Makefile`);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
