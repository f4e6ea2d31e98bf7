import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { cleanupOpenApiDoc } from 'nestjs-zod';
import { ErrorResponse } from '../errors/error-response.dto';

/** The OpenAPI document; committed as apps/api/openapi.json, from which the dashboard's client is generated. */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Compactor API')
    .setDescription('Keeps LLM agent conversations inside their context window without losing what matters.')
    .setVersion('1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'A Compactor API key.' })
    .build();
  // Request bodies are createZodDto classes: nestjs-zod's cleanup turns the markers their schemas leave into plain OpenAPI 3.0.
  return cleanupOpenApiDoc(SwaggerModule.createDocument(app, config, { extraModels: [ErrorResponse] }));
}

export function serializeOpenApiDocument(document: OpenAPIObject): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
