import { ArgumentMetadata, Injectable, PipeTransform } from '@nestjs/common';
import { createZodValidationPipe } from 'nestjs-zod';
import { z } from 'zod';
import { validationFailed } from './validation';

/** Set on a request-body DTO whose body may be left out: a missing body is parsed as `{}` (the routes' old `body ?? {}`). */
export const EMPTY_BODY_IS_EMPTY_OBJECT = 'emptyBodyIsEmptyObject';

/** nestjs-zod's pipe, throwing the API's own 400 (ValidationFailed, one problem per field) instead of its BadRequestException. */
const NestZodPipe = createZodValidationPipe({
  createValidationException: (error) => (error instanceof z.ZodError ? validationFailed(error) : (error as Error)),
});

/**
 * Validates every parameter whose type is a `createZodDto` class (the request bodies) with that class's schema;
 * other parameters pass through. Registered globally in createApp.
 */
@Injectable()
export class ZodBodyPipe implements PipeTransform {
  private readonly inner = new NestZodPipe();

  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    const metatype = metadata.metatype as { [EMPTY_BODY_IS_EMPTY_OBJECT]?: boolean } | undefined;
    const input = value === undefined && metadata.type === 'body' && metatype?.[EMPTY_BODY_IS_EMPTY_OBJECT] === true ? {} : value;
    return this.inner.transform(input, metadata);
  }
}
