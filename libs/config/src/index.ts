export * from './load-config';
export * from './env-fields';
export * from './mask-url';
export * from './logging';
export * from './redis-url';
