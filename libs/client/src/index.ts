export * from './client';
export * from './errors';
export type { components, operations, paths } from './generated/schema';
