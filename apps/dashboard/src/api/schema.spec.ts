import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const script = join(__dirname, '../../scripts/generate-client.mjs');

describe('generated API schema', () => {
  it('matches the committed OpenAPI document', () => {
    const regenerated = execFileSync(process.execPath, [script, '--stdout'], { encoding: 'utf8' });
    const committed = readFileSync(join(__dirname, 'schema.d.ts'), 'utf8');
    if (regenerated !== committed) {
      throw new Error(
        'apps/dashboard/src/api/schema.d.ts is out of date with the OpenAPI document. ' +
          'Run `node apps/dashboard/scripts/generate-client.mjs` and commit the result.',
      );
    }
  });
});
