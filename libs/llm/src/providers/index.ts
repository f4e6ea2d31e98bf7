// Remote summarizers (openai, anthropic, ollama) behind the Summarizer interface, and the
// env-driven factory that picks one (SPEC.md "LLM providers").
export * from './errors';
export * from './retry';
export * from './remote-summarizer';
export * from './openai';
export * from './anthropic';
export * from './ollama';
export * from './config';
export * from './health';
