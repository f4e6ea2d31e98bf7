// Writes apps/api/openapi.json from the controllers' metadata (`npm run openapi:write`).
// Preview mode builds the module graph without instantiating providers: no database needed.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NestFactory } from '@nestjs/core';
import { AppModule } from '../app.module';
import { loadApiConfig } from '../config/api-config';
import { createLogger } from '../logging/logger';
import { buildOpenApiDocument, serializeOpenApiDocument } from './openapi-document';

async function main(): Promise<void> {
  const config = loadApiConfig();
  const app = await NestFactory.create(AppModule.forRoot(config, createLogger('silent')), { preview: true, logger: false });
  const target = join(process.cwd(), 'apps/api/openapi.json');
  writeFileSync(target, serializeOpenApiDocument(buildOpenApiDocument(app)));
  await app.close();
  console.log(`wrote ${target}`);
}

void main();
