import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** Every source file of the apps and libs (specs and generated code aside). */
function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'generated' || name === '.next' || name.startsWith('.')) continue;
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) sources(full, out);
    else if (/\.(ts|tsx)$/.test(name) && !/\.(spec|int-spec)\.ts$/.test(name) && !name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

describe('one budget (SPEC.md "Budget")', () => {
  it('is computed only in libs/compaction/src/budget: everything else calls sessionBudget', () => {
    const root = path.resolve(__dirname, '../../../..');
    const offenders = [...sources(path.join(root, 'apps')), ...sources(path.join(root, 'libs'))]
      .filter((file) => !file.includes(`${path.sep}budget${path.sep}budget.ts`))
      .filter((file) => /\bcomputeBudget\s*\(|\bcontextWindow\s*-\s*[\w.]*outputReserve/.test(readFileSync(file, 'utf8')))
      .map((file) => path.relative(root, file));
    expect(offenders).toEqual([]);
  });
});
