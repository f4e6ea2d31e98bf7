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
  return wrapRefSiblings(cleanupOpenApiDoc(SwaggerModule.createDocument(app, config, { extraModels: [ErrorResponse] })));
}

/**
 * OpenAPI 3.0 ignores the siblings of a `$ref` (a field's description next to the reference to its type). zod's JSON
 * Schema puts them side by side; they become `{ allOf: [{ $ref }], ...siblings }`, as @nestjs/swagger writes them.
 */
export function wrapRefSiblings<T>(node: T): T {
  if (Array.isArray(node)) return node.map((item: unknown) => wrapRefSiblings(item)) as T;
  if (node === null || typeof node !== 'object') return node;
  const entries = Object.entries(node as Record<string, unknown>).map(([key, value]) => [key, wrapRefSiblings(value)] as const);
  const object = Object.fromEntries(entries) as Record<string, unknown>;
  if (typeof object.$ref !== 'string' || entries.length === 1) return object as T;
  const { $ref, ...siblings } = object;
  return { allOf: [{ $ref }], ...siblings } as T;
}

export function serializeOpenApiDocument(document: OpenAPIObject): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
