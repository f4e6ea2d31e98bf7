// LLM providers behind the Summarizer interface that libs/compaction declares (SPEC.md "LLM providers").
export * from './providers';
export * from './local';
