import { SetMetadata } from '@nestjs/common';

export type Scope = 'ingest' | 'read' | 'admin';
export const SCOPES: readonly Scope[] = ['ingest', 'read', 'admin'];

export const REQUIRED_SCOPE = 'compactor:required-scope';

/**
 * The scope a route needs. SPEC.md: `read` reads; `ingest` appends and reads its
 * sessions; `admin` manages keys and settings and deletes, and can do the rest too.
 */
export const RequireScope = (scope: Scope) => SetMetadata(REQUIRED_SCOPE, scope);

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
