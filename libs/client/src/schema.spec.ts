import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const script = join(__dirname, '../scripts/generate-client.mjs');

describe('the client package’s generated API types', () => {
  it('match the committed OpenAPI document', () => {
    const regenerated = execFileSync(process.execPath, [script, '--stdout'], { encoding: 'utf8' });
    const committed = readFileSync(join(__dirname, 'generated/schema.ts'), 'utf8');
    if (regenerated !== committed) {
      throw new Error(
        'libs/client/src/generated/schema.ts is out of date with apps/api/openapi.json. ' +
          'Run `node libs/client/scripts/generate-client.mjs` and commit the result.',
      );
    }
  });
});

describe('the README', () => {
  it('shows the example the int-spec runs, verbatim', () => {
    const readme = readFileSync(join(__dirname, '../README.md'), 'utf8');
    const example = readFileSync(join(__dirname, '../examples/append-context-compact-undo.ts'), 'utf8');
    expect(readme).toContain('```ts\n' + example + '```');
  });
});
