import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestApi } from '../test-app';
import { buildOpenApiDocument, serializeOpenApiDocument } from './openapi-document';

describe('committed OpenAPI document', () => {
  it('matches what the API serves (run `npm run openapi:write` after changing the API)', async () => {
    const api = await startTestApi();
    try {
      const live = serializeOpenApiDocument(buildOpenApiDocument(api.app));
      const committed = readFileSync(join(__dirname, '../../openapi.json'), 'utf8');
      expect(live).toBe(committed);
    } finally {
      await api.close();
    }
  });
});
