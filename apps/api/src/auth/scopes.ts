import { SetMetadata } from '@nestjs/common';

export type Scope = 'ingest' | 'read' | 'admin';
export const SCOPES: readonly Scope[] = ['ingest', 'read', 'admin'];

export const REQUIRED_SCOPE = 'compactor:required-scope';

/**
 * The scope a route needs. SPEC.md: `read` reads; `ingest` appends and reads its
 * sessions; `admin` manages keys and settings and deletes, and can do the rest too.
 */
export const RequireScope = (scope: Scope) => SetMetadata(REQUIRED_SCOPE, scope);

/**
 * How a route is reached without a bearer key. The guard denies by default: a route without a
 * scope and without one of these needs an `admin` key.
 * - `public`: anyone (liveness, readiness, metrics);
 * - `proxy-key`: the handler authenticates the `X-Compactor-Key` itself (the proxy answers in the provider's error shape).
 */
export type OpenAccess = 'public' | 'proxy-key';
export const OPEN_ACCESS = 'compactor:open-access';

export function grants(held: readonly Scope[], needed: Scope): boolean {
  if (held.includes('admin')) return true;
  if (needed === 'read') return held.includes('read') || held.includes('ingest');
  return held.includes(needed);
}

export interface AuthContext {
  tenantId: string;
  keyId: string;
  scopes: Scope[];
}
