// The heart of Compactor: pure TypeScript, no I/O.
export * from './errors';
export * from './messages/canonical';
export { type ParseResult, TOOL_ID_PATTERN, toolUseIdOf } from './messages/util';
export * from './messages/detect';
export * from './messages/anthropic';
export * from './messages/openai';
export * from './messages/canonical-parse';
export * from './messages/sequence';
export * from './messages/provider-valid';
export * from './messages/countable';
export * from './policy/presets';
export * from './budget/budget';
export * from './llm/summarizer';
export * from './engine/types';
export * from './engine/protection';
export * from './engine/masking';
