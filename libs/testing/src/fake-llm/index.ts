export * from './types';
export * from './server';
export { fakeStreamChunks } from './protocol';
