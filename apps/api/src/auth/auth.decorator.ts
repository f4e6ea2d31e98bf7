import { applyDecorators, createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import { ApiBearerAuth, ApiForbiddenResponse, ApiTooManyRequestsResponse, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { ErrorResponse } from '../errors/error-response.dto';
import type { AuthedRequest } from './auth.guard';
import { OPEN_ACCESS, OpenAccess, RequireScope, Scope } from './scopes';

/** The caller's tenant and key, set by AuthGuard. */
export const Auth = createParamDecorator((_data: unknown, ctx: ExecutionContext) => ctx.switchToHttp().getRequest<AuthedRequest>().auth);

/** Requires a scope and documents the 401/403/429 answers. */
export function Authenticated(scope: Scope) {
  return applyDecorators(
    RequireScope(scope),
    ApiBearerAuth(),
    ApiUnauthorizedResponse({ type: ErrorResponse, description: 'Missing, unknown or revoked API key.' }),
    ApiForbiddenResponse({ type: ErrorResponse, description: `The key lacks the '${scope}' scope.` }),
    ApiTooManyRequestsResponse({
      type: ErrorResponse,
      description: "`rate_limited`: the key's or the tenant's requests per minute, or the tenant's appended tokens per minute, are used up; `details` names the limit, its value and `retryAfterSeconds` (also the `Retry-After` header).",
    }),
  );
}

/** A route anyone may call without a key. Every other route needs one (the guard denies by default). */
export const Public = () => SetMetadata(OPEN_ACCESS, 'public' satisfies OpenAccess);

/** A route whose handler authenticates the `X-Compactor-Key` header itself (the proxy); the body gate checks it before reading the body. */
export const ProxyKeyAuthenticated = () => SetMetadata(OPEN_ACCESS, 'proxy-key' satisfies OpenAccess);
