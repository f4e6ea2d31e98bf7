import { createParamDecorator, ExecutionContext } from '@nestjs/common';

/**
 * One request header, as `@Headers(name)` reads it, for a header a route may do without: Nest's
 * `@Headers(name)` also declares the header *required* in the OpenAPI document, so generated
 * clients had to send it (`Idempotency-Key` was listed twice, once required). Document it with
 * `@ApiHeader({ required: false })`.
 */
export const OptionalHeader = createParamDecorator((name: string, ctx: ExecutionContext): string | string[] | undefined => {
  const headers = ctx.switchToHttp().getRequest<{ headers: Record<string, string | string[] | undefined> }>().headers;
  return headers[name.toLowerCase()];
});
